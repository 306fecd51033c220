"""Durable runs (DESIGN §10): a SQLite run store, detached supervisors, lanes, budgets.

The layer sits above the entries (it runs an :class:`~acp_bridge.EntryRequest` through
``run_entry`` like any front end would) and below the smoke, MCP and CLI faces; it never
prints. Modules:

- :mod:`.start` — :func:`~.start.start_run` / ``start_run_sync`` and ``RunOptions``;
  :mod:`.handle` — :class:`~.handle.RunHandle` (``wait``, ``stop``, ``events``, ``status``,
  ``record``), ``wait_all``, ``stop_run``, ``list_runs``, ``open_run``;
- :mod:`.store.foreground` — every foreground run of every entry, recorded (the entries' reporter);
- :mod:`.store.store`, :mod:`.store.records`, :mod:`.store.migrations`, :mod:`.store.dbapi` — the
  SQLite store, what it holds, its migrations, its errors;
- :mod:`.supervisor.main` (``python -m acp_bridge._runs.supervisor.main``),
  :mod:`.supervisor.running`, :mod:`.supervisor.detach`, :mod:`.store.recorder`, :mod:`.envelopes` —
  the detached process that runs them;
- :mod:`.lanes`, :mod:`.budget`, :mod:`.liveness`, :mod:`.store.retention`, :mod:`.store.rules`,
  :mod:`.followups` — follow-up turns (the chain of a session, held agents, ``send``);
- :mod:`.wakeups`, :mod:`.watch`, :mod:`~acp_bridge._os.process.proc` — wake-ups and process
  identity.

Nothing is imported here, so ``python -m acp_bridge._runs.supervisor.main`` stays light.
"""
