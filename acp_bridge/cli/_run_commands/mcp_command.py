"""``acp-bridge mcp``: serve the entries and run control to MCP hosts (stdio or HTTP).

The MCP SDK is imported only here, when the command runs. On stdio, stdout is the
protocol's: this command prints nothing there (the URL of an HTTP server goes to stderr).
"""

from __future__ import annotations

import argparse

from acp_bridge._os.limits import MAX_SECONDS
from acp_bridge.cli._agent_commands.profiles_command import load
from acp_bridge.cli._printing import EXIT_OK, err
from acp_bridge.cli._run_commands.entry_commands import names
from acp_bridge.errors import ConfigError


def cmd_mcp(args: argparse.Namespace) -> int:
    from acp_bridge._mcp.tool_catalog import select
    from acp_bridge._mcp.transport.listen import check_listen, parse_listen, read_token

    _check_seconds("--ask-timeout", args.ask_timeout)
    _check_seconds("--request-timeout", args.request_timeout)
    if args.http is None and args.token_file is not None:
        raise ConfigError("--token-file goes with --http (stdio needs no token)")
    if args.http is None and args.request_timeout is not None:
        raise ConfigError("--request-timeout goes with --http (stdio has no requests to time)")
    listen = parse_listen(args.http) if args.http is not None else None
    token = read_token(args.token_file) if listen is not None else None
    if listen is not None:
        check_listen(listen, token)  # before the SDK loads: a refusal is immediate
    tools = select(names(args.tools))
    config = load(args)

    # The SDK (over a second to import) only once everything given was checked.
    from acp_bridge._mcp.server import DEFAULT_ASK_TIMEOUT, Settings
    from acp_bridge._mcp.transport.serving import REQUEST_TIMEOUT, serve_http, serve_stdio

    ask_timeout = DEFAULT_ASK_TIMEOUT if args.ask_timeout is None else args.ask_timeout
    settings = Settings(config=config, tools=tools, ask_timeout=ask_timeout)
    if listen is None:
        serve_stdio(settings)
        return EXIT_OK

    def listening(url: str) -> None:
        how = "bearer token required" if token else "no token: loopback only"
        err(f"acp-bridge mcp: serving {url} ({how})")

    request_timeout = REQUEST_TIMEOUT if args.request_timeout is None else args.request_timeout
    serve_http(settings, listen, token, listening, request_timeout=request_timeout)
    return EXIT_OK


def _check_seconds(option: str, value: float | None) -> None:
    if value is not None and not 0 < value <= MAX_SECONDS:  # nan too
        raise ConfigError(
            f"{option} must be a positive number of seconds, at most {MAX_SECONDS:g}; got {value}"
        )
