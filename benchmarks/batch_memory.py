"""The batch driver's memory per task: peak RSS of ``acp-bridge batch --out`` over many tasks.

    python benchmarks/batch_memory.py [--tasks 20000] [--rounds 2] [--base DIR]

Each task names an agent no profile has, so it ends at once with ``config_error`` (no
agent process: what is measured is the driver alone, its parsed tasks, the tasks under way,
the results file, the run store). Each round runs a one-task batch and the ``--tasks``
batch, each a fresh ``acp-bridge batch TASKS.jsonl --out FILE`` process on the local
executor, and reads its peak RSS from the kernel (``wait4``'s ``ru_maxrss``). Printed: both
peaks and the bytes a task costs, ``(peak(N) - peak(1)) / (N - 1)``; the summary is the
median. ``--base DIR``: another tree of acp-bridge (a checkout of main, say) run the same
way in the same rounds (its source first on ``PYTHONPATH``, this venv's packages), for a
pair.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--base", type=Path, help="another acp-bridge tree, for a pair")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="acpb-batchmem-"))
    files = {}
    for count in (1, args.tasks):
        files[count] = scratch / f"tasks-{count}.jsonl"
        with files[count].open("w") as out:
            for i in range(count):
                task = {"key": f"t{i}", "entry": "acp_spawn", "agent": "nobody-has-this"}
                out.write(json.dumps({**task, "task": f"Reply with exactly R{i}"}) + "\n")
    trees = {"this tree": ROOT}
    if args.base is not None:
        trees["base"] = args.base.resolve()
    per_task: dict[str, list[float]] = {name: [] for name in trees}
    for number in range(args.rounds):
        for name, tree in trees.items():
            peaks = {count: _peak(tree, scratch / name, files[count]) for count in files}
            cost = (peaks[args.tasks] - peaks[1]) / (args.tasks - 1)
            per_task[name].append(cost)
            print(
                f"round {number + 1}, {name}: peak RSS one task {peaks[1] / 2**20:.1f} MiB, "
                f"{args.tasks} tasks {peaks[args.tasks] / 2**20:.1f} MiB, "
                f"{cost / 1024:.2f} KiB a task",
                flush=True,
            )
    for name, costs in per_task.items():
        print(f"median, {name}: {statistics.median(costs) / 1024:.2f} KiB a task")


def _peak(tree: Path, state: Path, tasks: Path) -> int:
    """Peak RSS (bytes) of one ``acp-bridge batch`` of ``tasks`` run from ``tree``."""
    out = state / "results.jsonl"
    out.unlink(missing_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "XDG_STATE_HOME": str(state / "xdg"),  # a run store of each tree's own
    }
    argv = [sys.executable, "-m", "acp_bridge", "batch", str(tasks), "--out", str(out)]
    child = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=state.parent
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    lines = sum(1 for _ in out.open()) if out.exists() else 0
    expected = sum(1 for _ in tasks.open())
    if lines != expected:
        raise SystemExit(
            f"{tree}: {lines} envelopes for {expected} tasks (exit {child.returncode})"
        )
    return usage.ru_maxrss * 1024


if __name__ == "__main__":
    main()
