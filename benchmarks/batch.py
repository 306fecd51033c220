"""Batch executors: 200 demo tasks on the local executor vs a warm Ray cluster on this machine.

    python benchmarks/batch.py [--tasks 200] [--rounds 3] [--slots 4]

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
"""

from __future__ import annotations

import argparse
import os
import statistics
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


if __name__ == "__main__":
    main()
