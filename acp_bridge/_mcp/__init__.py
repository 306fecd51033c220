"""The MCP server face: any MCP host delegates to acp-bridge's entries
(docs/explanation/architecture.md, the MCP face).

``acp-bridge mcp`` serves the tools ``acp_spawn``, ``spawn`` and ``bash`` (synchronous: the
SubtaskResult envelope as structured content plus a short text) and the run-control tools
``start``, ``wait``, ``status``, ``list``, ``stop``, ``send`` on the run store, over stdio or
streamable HTTP, with the official ``mcp`` SDK. Every run goes through the entries table
(:func:`acp_bridge.run_entry`), so the depth limit, the sandbox and the profile's limits are
the same as from the CLI.

Modules, bottom up:

- :mod:`.arguments` — each tool's arguments as a pydantic model, and the
  :class:`~acp_bridge.EntryRequest` they make; errors name the field;
- :mod:`.tool_catalog` — the tools as MCP lists them: input schemas (ready profiles as an enum),
  output schemas (the envelope), the ``--tools`` allowlist;
- :mod:`.progress` — live events as one-line progress messages;
- :mod:`.tool_runs` — a synchronous tool's run, owned by the server rather than by the request
  that started it, with what it has to tell its host (events, log lines, questions);
- :mod:`.questions` — a permission ``ask`` and an agent's own question, as MCP elicitations;
- :mod:`.host` — what the bridge can send the MCP host on one request: progress, log
  messages, elicitations, each bounded by a deadline;
- :mod:`.relay` — a tool run followed by one request: events become progress notifications,
  log lines log messages, questions elicitations; the host's cancel is the run's cancel;
- :mod:`.logs` — the bridge's log lines, routed to the run they belong to;
- :mod:`.run_control` — the run-control tools, the one adapter over
  :mod:`acp_bridge._runs.caller.handle`;
- :mod:`.compare_tool` — ``compare`` as a tool (its arguments from compare's options model);
- :mod:`.server` — the MCP server itself (``tools/list``, ``tools/call``);
- :mod:`.transport` — how the server is reached: :mod:`.transport.serving` (stdio, and
  streamable HTTP behind a bearer token, each request's headers and body due within a
  deadline), :mod:`.transport.stdio_repair` (host lines on stdio the SDK could not read:
  repaired, or answered with an error, never dropped without a word),
  :mod:`.transport.listen` (where an HTTP server may listen and with which token; no SDK
  import), :mod:`.transport.connections` (HTTP connections that must send a request's
  headers in time).

Nothing is imported here: the CLI imports :mod:`.transport.serving` only when ``acp-bridge
mcp`` runs, so other commands never pay for the SDK.
"""
