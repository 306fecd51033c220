"""The ACP client (protocol v1): wire schema, connection, router, agent process, update
collector, session, transcript, and ``services/`` (what the bridge serves to an agent).

Imports only downward (``_os``, ``config`` and the public foundation modules).
"""
