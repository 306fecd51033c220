"""Follow-up turns (DESIGN §10: ``acp-bridge send``, ``run --session``, ``RunHandle.send``).

A follow-up is a run like any other — its own id, envelope, events, budget and lane — that
continues the ACP session of an earlier run (``follows``). How it reaches the agent:

1. the earlier run's supervisor still *holds* the agent (``held_until`` in the future, the
   supervisor alive): the holder takes the follow-up itself and prompts the same live
   session; the supervisor the follow-up was handed to finds it claimed and leaves it, as
   with adoption (:mod:`acp_bridge._runs.lanes`);
2. else the follow-up is carried as an entry call of its own (by the supervisor it was
   handed to, :mod:`acp_bridge._runs.runners`), which starts the agent and continues the
   session through ``session/resume`` or ``session/load``, when the agent advertises them;
3. else the follow-up fails with a clear refusal — never a silent fresh session.

The modules, one side each:

- :mod:`.chain` — a session as a chain of runs: which run a new turn follows (looked up by
  the caller, decided again inside the insert), which session a run continues, which ended
  runs a prune must keep. Standard library only: the store and the light readers use it.
- :mod:`.holds` — an agent held between turns: the store side (hold, let go, claim, dead
  holders) and the holding supervisor's wait for a follow-up.
- :mod:`.send` — the caller's side: ``send`` / ``send_sync`` queue a follow-up of a run.

The entry's side (how ``acp_spawn`` keeps its agent and takes the next turn) is
:mod:`acp_bridge._entries.acp_spawn.live_turns`; the supervisor calls it through the hook
in :mod:`acp_bridge._runs.supervisor.running`.
"""
