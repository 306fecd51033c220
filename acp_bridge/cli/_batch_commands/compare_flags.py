"""The options of ``acp-bridge compare``. Light: its flags come from compare's options model
(pydantic), loaded only when the command line runs ``compare`` (or the whole parser is
built, for ``--help`` and the reference); its handler is :mod:`.compare_command`."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_bridge.cli._batch_commands.batch_flags import add_executor_options

COMMAND = "compare"


def _handler(args: argparse.Namespace) -> int:
    func: Callable[[argparse.Namespace], int] = importlib.import_module(
        "acp_bridge.cli._batch_commands.compare_command"
    ).cmd_compare
    return func(args)


def add_compare_command(
    commands: Any, formatter: type[argparse.HelpFormatter], *, options: bool
) -> None:
    """``compare``; its options model's flags when ``options``."""
    p = commands.add_parser(
        COMMAND,
        help="best of N: one task on several agents (or tries), each in its own worktree; "
        "verify, rank, apply the winner",
        formatter_class=formatter,
        description="Run TASK on every AGENT, --n times each, in a git repository: each "
        "attempt an acp_spawn run in its own worktree (branch acp-bridge/<task_id>, from "
        "HEAD), all as one batch on the executor. --verify runs CMD on each attempt's changes "
        "(a fresh worktree with its diff applied, in its agent's sandbox, under its terminal "
        "timeout): exit 0 verifies it. --pick chooses the winner among the attempts that "
        "ended done (and passed the verifier). A table goes to stderr; stdout gets the "
        "winner's task id, with --json the whole comparison as one JSON document, with "
        "--apply --dry-run the winner's patch. --apply applies the winner's diff to this "
        "working tree, refused unless it is clean. Every worktree is removed at the end "
        "unless --keep. Exit 0 when a winner was found (and applied, with --apply), 1 when "
        "none was, 130 when interrupted.",
        epilog="example: acp-bridge compare claude,codex 'Make the failing test pass' --n 2 "
        "--verify 'make test' --apply",
    )
    p.add_argument("agents", metavar="AGENT[,AGENT…]", help="agent profiles, comma-separated")
    p.add_argument("task", metavar="TASK", help="what every attempt is asked; '-' reads stdin")
    if options:
        from acp_bridge.cli._run_commands.entry_flags import add_compare_options

        add_compare_options(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print the comparison as one JSON document on stdout: every attempt's envelope "
        "and verifier result, the winner's task id and why it won",
    )
    p.add_argument(
        "--junit",
        type=Path,
        metavar="FILE",
        help="write a JUnit XML report: one test case per attempt, its verifier the test",
    )
    add_executor_options(p)
    p.set_defaults(handler=_handler)
