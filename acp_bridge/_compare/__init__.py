"""Best of N (docs/explanation/batches.md): the same task on several agents, or several tries of
one, each in its own git worktree; a verifier run on each attempt's changes; a winner picked, its
diff applied on request.

Modules:

- :mod:`.compare_options` — what compare takes: ``acp_spawn``'s options and its own, declared once;
- :mod:`.comparison` — :func:`~.comparison.compare`: the attempts as one batch on an
  executor (:mod:`acp_bridge._batch`), settled as they end, swept at the end;
- :mod:`.verifier` — the verifier on one attempt's diff, in a fresh worktree, as a terminal
  of its agent (same sandbox, same timeout);
- :mod:`.shared_budget` — one token and cost budget over all the attempts;
- :mod:`.ranking` — which attempt wins, and why;
- :mod:`.patches` — the caller's repository: its commit, whether it is clean, diff sizes,
  applying a diff;
- :mod:`.compare_result` — the typed result (and the JSON document of ``acp-bridge compare``);
- :mod:`.table` — the table people read (the CLI's stderr, the MCP tool's text).
"""
