"""The ACP client (protocol v1 and the v2 Preview), in rooms that import only downward:
``session`` and ``services`` (one session; what the bridge serves to an agent) over ``turn``
(one prompt turn's updates) over ``rpc`` (JSON-RPC over the agent's stdio) over ``wire``
(wire types, versions, the parse boundary, the writer, transcripts); beside them the agent's
process (``agent_process``) and where a profile's command is (``agent_executable``).

Imports only downward (``_os``, ``config`` and the public foundation modules).
"""
