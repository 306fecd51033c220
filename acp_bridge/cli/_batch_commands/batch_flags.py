"""The options of ``acp-bridge batch`` and ``acp-bridge worker``, and the executor options
``smoke`` shares with ``batch``. Light: the handlers (:mod:`.batch_command`) load the batch code,
and Ray only on the Ray path."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_bridge._batch import EXECUTORS
from acp_bridge._os.limits import MAX_CONCURRENT
from acp_bridge.cli._argtypes import count, seconds


def _handler(name: str) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        func: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module("acp_bridge.cli._batch_commands.batch_command"), name
        )
        return func(args)

    return handler


def add_executor_options(p: argparse.ArgumentParser) -> None:
    """Where the tasks run: ``--executor``, ``--address`` and the Ray executor's bounds."""
    g = p.add_argument_group("executor", "Where the tasks run (see docs/how-to/scale.md).")
    g.add_argument(
        "--executor",
        choices=list(EXECUTORS),
        default="local",
        help="local: this process (default); ray: the nodes of a Ray cluster",
    )
    g.add_argument(
        "--address",
        metavar="HOST:PORT",
        help="with --executor ray: the cluster (default: $RAY_ADDRESS, else this machine's)",
    )
    g.add_argument(
        "--grace",
        type=seconds,
        metavar="S",
        help="with --executor ray: seconds past a task's timeout before its node counts as "
        "lost (default 10)",
    )
    g.add_argument(
        "--runtime-env",
        metavar="JSON",
        help="with --executor ray: Ray's runtime environment for every task (JSON)",
    )


def add_commands(commands: Any, formatter: type[argparse.HelpFormatter]) -> None:
    p = commands.add_parser(
        "batch",
        help="run many tasks (JSONL), one envelope each, locally or on a Ray cluster",
        formatter_class=formatter,
        description="Run every task of TASKS (one JSON object a line: the fields of an entry "
        "request — entry, agent, task, timeout, … — plus an optional key and workspace) and "
        "write one envelope a line, in input order, with meta.batch = {id, key, index, "
        "node, attempts}. Progress goes to stderr. Rerun with the same --out to run only the "
        "tasks missing there. Exit 0 when every task is done, 1 when any failed, 130 when "
        "interrupted.",
        epilog='example: echo \'{"key": "a", "entry": "acp_spawn", "agent": "demo", "task": '
        '"Reply with exactly A"}\' | acp-bridge batch - --out results.jsonl',
    )
    p.add_argument("tasks", type=Path, metavar="TASKS", help="the tasks (JSONL); '-': stdin")
    p.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write the envelopes here (resumable; default: stdout, no resume)",
    )
    p.add_argument(
        "--concurrency",
        type=count(1, MAX_CONCURRENT),
        metavar="N",
        help="tasks at once (default: 4 locally; on Ray, as many as the nodes take)",
    )
    p.add_argument(
        "--retries",
        type=count(0, 100),
        default=0,
        metavar="N",
        help="run a task again, elsewhere, when its node was lost, up to N times (default 0)",
    )
    add_executor_options(p)
    p.set_defaults(handler=_handler("cmd_batch"))

    p = commands.add_parser(
        "worker",
        help="join a Ray cluster as a node that runs batch tasks for its ready agents",
        formatter_class=formatter,
        description="Check each profile with the doctor, then start a Ray node (ray start "
        "--block) joined to the cluster at --address that offers the custom resources "
        "acp-bridge (SLOTS tasks at once) and agent:<profile> for every ready profile. Runs "
        "until stopped (Ctrl-C, SIGTERM).",
        epilog="example: acp-bridge worker --address 10.0.0.5:6379 --slots 8",
    )
    p.add_argument("--agents", metavar="A,B", help="offer only these profiles (if ready)")
    p.add_argument("--address", required=True, metavar="HOST:PORT", help="the cluster's head")
    p.add_argument(
        "--slots",
        type=count(1, MAX_CONCURRENT),
        metavar="N",
        help="tasks this node runs at once (default: its CPU count)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the ray start command line instead of running it",
    )
    p.add_argument(
        "ray_args",
        nargs=argparse.REMAINDER,
        metavar="-- RAY_START_ARGS",
        help="more arguments for ray start (after --)",
    )
    p.set_defaults(handler=_handler("cmd_worker"))
