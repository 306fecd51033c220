"""Batch executors: 200 demo tasks on the local executor vs a warm Ray cluster on this machine.

    python benchmarks/batch.py [--tasks 200] [--rounds 3] [--slots 4] [--cli]

A local Ray cluster (``ray.cluster_utils.Cluster``: a 1-CPU head and two 1-CPU workers on
127.0.0.2, each offering ``--slots`` task slots and the demo agent; its own HOME and TMPDIR)
is started once and warmed with a small batch (its worker processes then exist, as on a
cluster in use). Each round runs the same ``--tasks`` demo ``acp_spawn`` tasks ("Reply with
exactly Rn") through :func:`acp_bridge.batch` on the local executor (concurrency: the
cluster's total slots) and on the Ray executor, order alternating, in this one process.
Printed: each wall time, the per-task cost (wall / tasks) and the ratio Ray / local; the
summary is the median ratio. Both executors run on the same two cores, so the ratio is the
Ray path's own overhead (scheduling, a worker process per slot, the object store, the
phase messages), not a speed-up: on one machine there is nothing to spread over.

``--cli``: the same, as users run it: each batch is an ``acp-bridge batch TASKS.jsonl --out
FILE`` process (``--executor local --concurrency SLOTS`` / ``--executor ray --address``),
so the ratio includes starting the command, importing Ray and connecting. The split of the
Ray path's extra cost: a one-task batch on each executor (the fixed cost of a batch: start,
import, connect, the first task), ``import ray`` and ``ray.init`` + ``ray.shutdown`` alone
(their own processes), and the marginal cost of a task, ``(wall(N) - wall(1)) / (N - 1)``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--cli", action="store_true", help="each batch an acp-bridge process")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="acpb-bench-"))
    (scratch / "home").mkdir()
    (scratch / "t" / "ray").mkdir(parents=True)
    os.environ.update(HOME=str(scratch / "home"), TMPDIR=str(scratch / "t"))
    os.environ["XDG_STATE_HOME"] = str(scratch / "state")

    import anyio
    from ray.cluster_utils import Cluster

    from acp_bridge import LocalExecutor, RayExecutor, batch

    head = {"num_cpus": 1, "node_ip_address": "127.0.0.2", "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args={**head, "gcs_server_port": 0})
    offered = {"acp-bridge": args.slots, "agent:demo": args.slots}
    for _ in range(2):
        cluster.add_node(num_cpus=1, node_ip_address="127.0.0.2", resources=offered)
    total_slots = 2 * args.slots
    tasks = [
        {"key": f"t{i}", "entry": "acp_spawn", "agent": "demo", "task": f"Reply with exactly R{i}"}
        for i in range(args.tasks)
    ]

    def timed(executor: object, count: int) -> float:
        started = time.perf_counter()
        results = anyio.run(
            lambda: batch(tasks[:count], executor=executor, concurrency=total_slots)  # type: ignore[arg-type]
        )
        elapsed = time.perf_counter() - started
        failed = [r for r in results if not r.ok]
        if failed:
            raise SystemExit(f"{len(failed)} task(s) failed, e.g. {failed[0].error}")
        return elapsed

    try:
        timed(RayExecutor(cluster.address), total_slots * 2)  # warm: worker processes exist
        if args.cli:
            _through_the_cli(scratch, cluster.address, tasks, total_slots, args.rounds)
            return
        ratios = []
        for number in range(args.rounds):
            order = ["local", "ray"] if number % 2 == 0 else ["ray", "local"]
            walls = {}
            for name in order:
                executor = LocalExecutor() if name == "local" else RayExecutor(cluster.address)
                walls[name] = timed(executor, args.tasks)
            ratio = walls["ray"] / walls["local"]
            ratios.append(ratio)
            print(
                f"round {number + 1}: local {walls['local']:.2f} s "
                f"({1000 * walls['local'] / args.tasks:.0f} ms/task), ray {walls['ray']:.2f} s "
                f"({1000 * walls['ray'] / args.tasks:.0f} ms/task), ray/local {ratio:.2f}x",
                flush=True,
            )
        print(f"median ray/local per-task cost: {statistics.median(ratios):.2f}x")
    finally:
        cluster.shutdown()


def _through_the_cli(
    scratch: Path, address: str, tasks: list[dict[str, str]], slots: int, rounds: int
) -> None:
    """Each batch an ``acp-bridge batch`` process, as users run it (see the docstring)."""
    files = {}
    for count in (1, len(tasks)):
        files[count] = scratch / f"tasks-{count}.jsonl"
        files[count].write_text("".join(json.dumps(t) + "\n" for t in tasks[:count]))
    flags = {
        "local": ["--executor", "local", "--concurrency", str(slots)],
        "ray": ["--executor", "ray", "--address", address],
    }

    def wall(argv: list[str]) -> float:
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, cwd=scratch)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{argv[3:]} failed ({done.returncode}): {done.stderr[-2000:]}")
        return elapsed

    def batch_wall(name: str, count: int) -> float:
        out = scratch / "results.jsonl"
        out.unlink(missing_ok=True)
        argv = [sys.executable, "-m", "acp_bridge", "batch", str(files[count]), "--out", str(out)]
        return wall([*argv, *flags[name]])

    python = [sys.executable, "-c"]
    connect = f"import ray; ray.init(address={address!r}, log_to_driver=False); ray.shutdown()"
    seen: dict[str, list[float]] = {}
    for number in range(rounds):
        order = ["local", "ray"] if number % 2 == 0 else ["ray", "local"]
        walls = {}
        for name in order:
            walls[name, 1] = batch_wall(name, 1)
            walls[name, len(tasks)] = batch_wall(name, len(tasks))
        walls["import", 0] = wall([*python, "import ray"]) - wall([*python, "pass"])
        walls["connect", 0] = wall([*python, connect]) - wall([*python, "import ray"])
        n = len(tasks)
        marginal = {name: (walls[name, n] - walls[name, 1]) / (n - 1) for name in ("local", "ray")}
        figures = {
            "ratio": walls["ray", n] / walls["local", n],
            "marginal ratio": marginal["ray"] / marginal["local"],
            "local wall": walls["local", n],
            "ray wall": walls["ray", n],
            "local one-task batch": walls["local", 1],
            "ray one-task batch": walls["ray", 1],
            "import ray": walls["import", 0],
            "ray.init + shutdown": walls["connect", 0],
            "local per task (marginal)": marginal["local"],
            "ray per task (marginal)": marginal["ray"],
        }
        for key, value in figures.items():
            seen.setdefault(key, []).append(value)
        print(
            f"round {number + 1}: local {walls['local', n]:.2f} s, ray {walls['ray', n]:.2f} s, "
            f"ray/local {figures['ratio']:.2f}x; one-task batch local "
            f"{walls['local', 1]:.2f} s, ray {walls['ray', 1]:.2f} s; per task (marginal) "
            f"local {1000 * marginal['local']:.0f} ms, ray {1000 * marginal['ray']:.0f} ms "
            f"({figures['marginal ratio']:.2f}x); import ray {walls['import', 0]:.2f} s, "
            f"ray.init + shutdown {walls['connect', 0]:.2f} s",
            flush=True,
        )
    print("medians: " + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in seen.items()))


if __name__ == "__main__":
    main()
