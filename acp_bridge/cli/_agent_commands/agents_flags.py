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
        help="install agents (built-in profiles' pinned packages, the ACP registry's entries); "
        "list and search them",
        formatter_class=formatter,
        description="Install a profile's pinned package, or an ACP registry entry (npm, PyPI "
        "or a downloaded archive), into a prefix under the user's data directory (no global "
        "install, no sudo; the package manager's lockfile and hashes kept beside it); the "
        "profile, or the one derived from the entry, then runs it from there. The registry "
        "is read from the snapshot shipped with acp-bridge, or the copy --registry last "
        "fetched: nothing else reaches the network.",
    )
    sub = agents.add_subparsers(dest="agents_command", metavar="ACTION", required=True)
    p = sub.add_parser("install", help="install the agents of these profiles or registry ids")
    p.add_argument(
        "names", nargs="+", metavar="NAME", help="profile names or registry ids (e.g. codex)"
    )
    p.add_argument("--force", action="store_true", help="install again even if installed")
    p.add_argument(
        "--from-registry",
        action="store_true",
        help="install the ACP registry's entry of each name, even where a profile of that "
        "name names its own package (the entry's profile then takes that name)",
    )
    _registry_option(p)
    p.set_defaults(handler=handlers.cmd_agents_install)
    p = sub.add_parser(
        "list", help="each profile's package and each registry agent: state, version, source"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--ready",
        action="store_true",
        help="prove each installed agent as doctor does (starts each in its sandbox)",
    )
    _registry_option(p)
    p.set_defaults(handler=handlers.cmd_agents_list)
    p = sub.add_parser("search", help="the agents whose name or description has every word")
    p.add_argument("words", nargs="+", metavar="WORD", help="words to find (any case)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _registry_option(p)
    p.set_defaults(handler=handlers.cmd_agents_search)


def _registry_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--registry",
        metavar="URL|FILE",
        help="fetch the ACP registry's registry.json from this URL (the official one: "
        "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json) or file first, "
        "and keep it as the cached copy every later command reads",
    )
