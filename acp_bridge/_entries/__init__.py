"""The entry paths: one wrapper (depth, envelope on every path), ``acp_spawn``, ``bash``,
``spawn``, ``ask``, the built-in tools, the entries table and the sync helper."""
