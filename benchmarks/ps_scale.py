"""`ps --all` at 100 000 runs against 10 000: whether its cost per run stays flat.

    python benchmarks/ps_scale.py [--small 10000] [--rounds 3]

Two stores of ended foreground runs shaped like a batch's tasks (an envelope of ~1 KB each,
a summary with a non-ASCII character, as a refused task's has), one of ``--small`` runs and
one of ten times as many. Each round runs a cold ``acp-bridge ps --all --json`` and a cold
``acp-bridge ps --all`` on each store, the stores taking turns, and prints the wall times
and the ratio of the large store's time to ten times the small one's: 1.0 is a cost per
run that does not grow with the store (issue 36: 100 000 rows took 16 s). The budget of
``ps --all --json`` over 10 000 runs (0.15 s cold, docs/explanation/performance.md) is
printed beside the small store's figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from acp_bridge._os.process import proc
from acp_bridge._runs.store.run_records import NewRun, Outcome
from acp_bridge._runs.store.run_store import Store

CLI = [sys.executable, "-m", "acp_bridge"]
SUMMARY = "failed: no live node offers the agent 'no-such-agent'; known agents: demo, claude …"


def fill(path: Path, runs: int) -> None:
    """``runs`` ended runs, each written as a batch writes its task's (a row, then its end)."""
    store = Store(path)
    me = proc.own_identity()
    envelope = {"status": "failed", "summary": SUMMARY, "error": SUMMARY, "output": "x" * 600}
    for n in range(runs):
        run = NewRun(
            id=f"sub_{n:012x}", entry="acp_spawn", agent="no-such-agent", task=f"task {n}",
            cwd=f"/tmp/acp-bridge-sub_{n:012x}/work", caller_cwd="/tmp",
            request={"entry": "acp_spawn"}, config_path=None, lane="agent:no-such-agent",
            group=None, env_key="",
        )  # fmt: skip
        store.create(run, me, detached=False)
        outcome = Outcome("failed", {**envelope, "task_id": run.id}, SUMMARY, "executor_error")
        with store.write() as db:
            store.finish(db, run.id, outcome)
    store.close()


def cold(args: list[str], path: Path) -> float:
    env = {**os.environ, "ACP_BRIDGE_RUNS_DB": str(path)}
    began = time.monotonic()
    subprocess.run([*CLI, *args], env=env, stdout=subprocess.DEVNULL, check=True)
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ps-scale-") as folder:
        small, large = Path(folder, "small.db"), Path(folder, "large.db")
        began = time.monotonic()
        fill(small, args.small)
        fill(large, args.small * 10)
        print(f"filled {args.small} and {args.small * 10} runs in {time.monotonic() - began:.0f} s")
        for command in (["ps", "--all", "--json"], ["ps", "--all"]):
            cold(command, small)  # each store migrated and in the page cache before timing
            cold(command, large)
            times: dict[Path, list[float]] = {small: [], large: []}
            for n in range(args.rounds):
                order = (small, large) if n % 2 == 0 else (large, small)
                for path in order:
                    times[path].append(cold(command, path))
            a, b = statistics.median(times[small]), statistics.median(times[large])
            budget = " (budget 0.15 s)" if command[-1] == "--json" and args.small == 10_000 else ""
            print(
                f"{' '.join(command):18} {args.small} runs {a:.2f} s{budget}, "
                f"{args.small * 10} runs {b:.2f} s, large / (10 × small) {b / (10 * a):.2f}"
            )


if __name__ == "__main__":
    main()
