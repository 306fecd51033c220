"""``python -m acp_bridge``: the same as the ``acp-bridge`` command."""

from acp_bridge.cli import run_command_line

raise SystemExit(run_command_line())
