"""Durable runs: a SQLite run store, detached supervisors, lanes, budgets
(docs/explanation/runs.md).

The layer sits above the entries (it runs an :class:`~acp_bridge.EntryRequest` through
``run_entry`` like any front end would) and below the smoke, MCP and CLI faces; it never
prints. Modules:

- :mod:`.caller` — the caller's side: :func:`~.caller.start.start_run` /
  ``start_run_sync``, queueing a run and handing it to a supervisor (:mod:`.caller.queue`),
  :class:`~.caller.handle.RunHandle` (``wait``, ``stop``, ``events``, ``status``, ``record``),
  ``wait_all``, ``stop_run``, ``list_runs``, ``open_run``, and ``send``
  (:mod:`.caller.send`); :mod:`.run_options` — ``RunOptions``, what the run layer adds to a
  request;
- :mod:`.foreground` — every foreground run of every entry, recorded (the entries' reporter);
- :mod:`.store` — the SQLite store (:mod:`.store.run_store`), what it holds
  (:mod:`.store.run_records`), its migrations and errors, lanes (:mod:`.store.lanes`),
  retention, the config's rules, a session as a chain of runs
  (:mod:`.store.session_chains`), and which supervisor a new run goes to
  (:mod:`.store.supervisors`);
- :mod:`.supervisor` (``python -m acp_bridge._runs.supervisor.main``), :mod:`.recorder`,
  :mod:`.unfinished` — the detached process that runs them, its event writer, the
  envelopes of runs the entry never finished;
- :mod:`.budget`, :mod:`.liveness`, :mod:`.held_agents` — budgets, lost runs, an agent held
  between follow-up turns;
- :mod:`.wakeups`, :mod:`.watch`, :mod:`~acp_bridge._os.process.proc` — wake-ups and process
  identity.

Nothing is imported here, so ``python -m acp_bridge._runs.supervisor.main`` stays light.
"""
