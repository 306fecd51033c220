"""The options of ``acp-bridge agents``, apart from its handlers
(cli/_agent_commands/agents_command.py): building the parser stays light (no package manager code,
no pydantic)."""

from __future__ import annotations

import argparse
from typing import Any


def add_agents_command(
    commands: Any, handlers: Any, formatter: type[argparse.HelpFormatter]
) -> None:
    """The ``agents`` command and its actions; ``handlers``: where ``cmd_agents_*`` live."""
    agents = commands.add_parser(
        "agents",
        help="install the agents of built-in profiles (pinned npm / PyPI packages); list them",
        formatter_class=formatter,
        description="Install a profile's pinned package into a prefix under the user's data "
        "directory (no global install, no sudo; the package manager's lockfile and hashes "
        "kept beside it); the profile then runs it from there.",
    )
    sub = agents.add_subparsers(dest="agents_command", metavar="ACTION", required=True)
    p = sub.add_parser("install", help="install the agents of these profiles")
    p.add_argument("names", nargs="+", metavar="NAME", help="profile names (e.g. codex claude)")
    p.add_argument("--force", action="store_true", help="install again even if installed")
    p.set_defaults(handler=handlers.cmd_agents_install)
    p = sub.add_parser("list", help="each profile's package: installed?, version, from where")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=handlers.cmd_agents_list)
