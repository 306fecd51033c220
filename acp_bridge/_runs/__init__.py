"""Durable runs (DESIGN §10): a SQLite run store, detached supervisors, lanes, budgets.

The layer sits above the entries (it calls ``acp_bridge.acp_spawn``, ``bash`` and ``spawn``
like any host would) and below the smoke, MCP and CLI faces; it never prints. Modules:

- :mod:`.handle` — the API: :func:`start` / :func:`start_sync` → :class:`RunHandle`
  (``wait``, ``stop``, ``events``, ``status``), :func:`wait_all`, :func:`stop_run`,
  :func:`list_runs`, :func:`open_run`;
- :mod:`.store`, :mod:`.records`, :mod:`.schema` — the SQLite store and what it holds;
- :mod:`.supervisor` (``python -m acp_bridge._runs.supervisor``), :mod:`.carrier`,
  :mod:`.launch`, :mod:`.recorder` — the detached process that carries runs;
- :mod:`.lanes`, :mod:`.budget`, :mod:`.liveness`, :mod:`.retention` — the rules;
- :mod:`.bell`, :mod:`.watch`, :mod:`.procs` — wake-ups and process identity.

Nothing is imported here, so ``python -m acp_bridge._runs.supervisor`` stays light.
"""
