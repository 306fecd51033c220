"""Smoke suite concurrency: 20 cases against the demo agent, serially and at --parallel 4.

    python benchmarks/smoke_parallel.py [--rounds 3] [--cases 20] [--parallel 4]

The cases are examples/smoke/demo.yaml's, repeated to the count (chat, file reads and
writes, a terminal command, a refused write, structured output, a 1 s timeout). Each round
runs the suite serially and in parallel back to back (order alternating), as whole
`acp-bridge smoke` processes, and prints both wall times and their ratio; the summary is
the median ratio. Target (issue 6): parallel at most 0.6 x serial.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]


def build_suite(count: int, directory: Path) -> Path:
    yaml = YAML(typ="safe")
    demo = yaml.load((ROOT / "examples" / "smoke" / "demo.yaml").read_text())
    cases = [
        dict(case, name=f"{case['name']} #{i}")
        for i, case in zip(range(count), _cycle(demo["cases"]), strict=False)
    ]
    suite = {"name": "bench", "defaults": demo["defaults"], "cases": cases}
    path = directory / "bench.yaml"
    with path.open("w") as handle:
        yaml.dump(suite, handle)
    return path


def _cycle(items: list[dict[str, object]]):  # type: ignore[no-untyped-def]
    while True:
        yield from items


def run(suite: Path, parallel: int, home: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", "smoke", str(suite), "--parallel", str(parallel)],
        capture_output=True,
        text=True,
        cwd=home,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"suite failed at --parallel {parallel}:\n{done.stdout}{done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        suite = build_suite(args.cases, home)
        run(suite, args.parallel, home)  # warm-up (imports, page cache)
        ratios = []
        for round_ in range(args.rounds):
            order = [1, args.parallel] if round_ % 2 == 0 else [args.parallel, 1]
            times = {p: run(suite, p, home) for p in order}
            ratio = times[args.parallel] / times[1]
            ratios.append(ratio)
            print(
                f"round {round_ + 1}: serial {times[1]:.2f}s, --parallel {args.parallel} "
                f"{times[args.parallel]:.2f}s, ratio {ratio:.2f}"
            )
    print(
        f"{args.cases} cases: median ratio parallel/serial = {statistics.median(ratios):.2f} "
        f"(target <= 0.60)"
    )


if __name__ == "__main__":
    main()
