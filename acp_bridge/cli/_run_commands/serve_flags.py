"""The options of the commands that serve other programs, ``mcp`` (MCP hosts) and ``ui``
(a browser), apart from their handlers (mcp_command.py, ui_command.py): building the
parser stays light (neither the MCP SDK nor the web stack is imported)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from acp_bridge.cli._argtypes import count


def add_mcp_command(commands: Any, handlers: Any, formatter: type[argparse.HelpFormatter]) -> None:
    """The ``mcp`` command; ``handlers``: where ``cmd_mcp`` lives."""
    p = commands.add_parser(
        "mcp",
        help="serve acp_spawn, spawn, bash and run control to MCP hosts (stdio or HTTP)",
        formatter_class=formatter,
        description="An MCP server (official SDK) offering the tools acp_spawn, spawn, bash "
        "(each waits: the envelope as structured content) and start, wait, status, list, "
        "stop, send (background runs). Live events become progress notifications; an `ask` "
        "permission becomes an elicitation when the host supports it (else it is rejected). "
        "Default: stdio, for a host that starts it. See docs/how-to/mcp.md.",
        epilog="example (in a host's MCP config): acp-bridge mcp --config ~/acp-bridge.yaml",
    )
    p.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        # SUPPRESS: given here or before `mcp`, the same option (hosts' configs read better
        # with every argument after the command).
        default=argparse.SUPPRESS,
        help="config file (as acp-bridge --config; default: the usual search)",
    )
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio; beyond "
        "loopback only with a token",
    )
    p.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="with --http: the bearer token every request must send (default: "
        "$ACP_BRIDGE_MCP_TOKEN)",
    )
    p.add_argument(
        "--tools",
        metavar="A,B",
        help="offer only these tools (default: acp_spawn, spawn, bash, start, wait, status, "
        "list, stop, send)",
    )
    p.add_argument(
        "--ask-timeout",
        type=float,
        metavar="S",
        help="seconds an elicitation waits for the host's answer before the safe default "
        "(reject / cancel; default 120)",
    )
    p.add_argument(
        "--request-timeout",
        type=float,
        metavar="S",
        help="with --http: seconds a client has to send a request's headers (from when it "
        "connects or its last response ended; else the connection is closed), then its "
        "body (else 408); default 30",
    )
    p.set_defaults(handler=handlers.cmd_mcp)


def add_ui_command(commands: Any, handlers: Any, formatter: type[argparse.HelpFormatter]) -> None:
    """The ``ui`` command; ``handlers``: where ``cmd_ui`` lives."""
    p = commands.add_parser(
        "ui",
        help="a local web viewer of the recorded runs, live",
        formatter_class=formatter,
        description="Serve a web viewer over the run store: the runs (filtered, paged, "
        "updated live), each run's timeline (messages, tool calls, permission decisions "
        "and the rule that decided, terminals, plans), its diff and envelope, a running run "
        "followed live and stopped from its page. It listens on loopback; every request "
        "needs the token made at each start, in the URL printed on stderr. See "
        "docs/how-to/viewer.md.",
        epilog="example: acp-bridge ui --open",
    )
    p.add_argument(
        "--port",
        type=count(0, 65535),
        default=8766,
        metavar="N",
        help="the port (default 8766, beside the MCP examples' 8765; 0: any free one)",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="H",
        help="the address to listen on; beyond loopback anyone who can reach it still needs "
        "the token",
    )
    p.add_argument("--open", action="store_true", help="open the URL in the browser")
    p.set_defaults(handler=handlers.cmd_ui)
