"""The ``acp_spawn`` entry: an external ACP agent, from spawn to envelope
(docs/explanation/acp.md).

``entry`` holds the entry function; ``run`` one run's mechanics up to its agent's start
(and its envelope); ``session_phases`` what the run does with its started agent; ``clock``
its deadlines; ``result`` its envelope; ``live_turns`` follow-up turns in one live session;
``admin`` the agent's own session list and logout, outside any run.
"""
