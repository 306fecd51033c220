"""Durable runs (DESIGN §10): a SQLite run store, detached supervisors, lanes, budgets.

The layer sits above the entries (it runs an :class:`~acp_bridge.EntryRequest` through
``run_entry`` like any front end would) and below the smoke, MCP and CLI faces; it never
prints. Modules:

- :mod:`.start` — :func:`~.start.start_run` / ``start_run_sync`` and ``RunOptions``;
  :mod:`.handle` — :class:`~.handle.RunHandle` (``wait``, ``stop``, ``events``, ``status``,
  ``record``), ``wait_all``, ``stop_run``, ``list_runs``, ``open_run``;
- :mod:`.ledger` — every foreground run of every entry, recorded (the runner's hook);
- :mod:`.store`, :mod:`.records`, :mod:`.schema`, :mod:`.dbapi` — the SQLite store, what it
  holds, its migrations, its errors;
- :mod:`.supervisor` (``python -m acp_bridge._runs.supervisor``), :mod:`.carrier`,
  :mod:`.launch`, :mod:`.recorder`, :mod:`.envelopes` — the detached process that carries
  runs;
- :mod:`.lanes`, :mod:`.budget`, :mod:`.liveness`, :mod:`.retention`, :mod:`.policy`,
  :mod:`.turns` — the rules (follow-up turns: the store side);
- :mod:`.bell`, :mod:`.watch`, :mod:`.procs` — wake-ups and process identity.

Nothing is imported here, so ``python -m acp_bridge._runs.supervisor`` stays light.
"""
