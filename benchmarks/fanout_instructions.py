"""A fan-out's per-run work of the bridge process, counted in instructions.

    python benchmarks/fanout_instructions.py [--sandbox off] [--repeats 2] [--tree DIR]

A fan-out's wall time follows the machine's CPU per task, and timings on a shared machine
hide a change worth a few percent. This counts the instructions (valgrind's callgrind, user
space only: a proxy for CPU, not a measure of it) of one process running N concurrent
``acp_spawn("demo", …)`` for N = 32 and N = 64; per run = (64 runs - 32 runs) / 32. Every thread of
that process is counted (``--separate-threads``: the event loop's thread and the worker
threads apart); the agents and bubblewrap are children, not counted.

Repeatable only with care (round 6 of the fan-out notes in README.md): 4 runs before the
measured batch and ``gc.freeze()`` after them (else imports done late and a full collection
land in one batch and not the other: ±2 M a run between repeats), and, over ``--repeats``,
the lowest 32-run total (one now and then still holds ~70 to 100 M of one-off work) and the
median 64-run one. The worker threads' figure moves with timing (a marker sweep that catches
a process inside ``execve`` polls it); the loop's thread is the steadier judge.

``--tree DIR``: count the ``acp_bridge`` package in DIR (put first on ``PYTHONPATH``) instead
of the installed one, e.g. a checkout of another commit, for an A/B in the same venv.
Needs ``valgrind``.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TASK = "Reply with exactly OK"
WARM_UP = 4
TIMEOUT = 1800.0  # 64 runs under valgrind take a minute or two


def worker(n: int) -> None:
    """The measured process: WARM_UP runs, freeze, then ``n`` runs at once."""
    import gc

    import anyio

    from acp_bridge import acp_spawn

    statuses: list[str] = []

    async def batch(count: int) -> None:
        async def one() -> None:
            statuses.append((await acp_spawn("demo", TASK, cwd=os.environ["FANOUT_CWD"])).status)

        async with anyio.create_task_group() as tg:
            for _ in range(count):
                tg.start_soon(one)

    anyio.run(batch, WARM_UP)
    gc.collect()
    gc.freeze()
    anyio.run(batch, n)
    if any(status != "done" for status in statuses):
        raise SystemExit(f"not every run was done: {statuses}")


def counted(n: int, env: dict[str, str], out: Path) -> tuple[int, int]:
    """(the loop's thread, every other thread) of one process running ``n`` at once."""
    for old in out.glob("cg.*"):
        old.unlink()
    argv = [sys.executable, __file__, "--worker", str(n)]
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--separate-threads=yes",
         f"--callgrind-out-file={out}/cg", *argv],
        capture_output=True, text=True, env=env, timeout=TIMEOUT, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the worker under valgrind: exit {done.returncode}\n{done.stderr}")
    main = other = 0
    for file in out.glob("cg-*"):
        with file.open() as text:
            total = next(int(line.split()[1]) for line in text if line.startswith("summary:"))
        if file.name.endswith("-01"):
            main = total
        else:
            other += total
        file.unlink()
    return main, other


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sandbox", choices=["auto", "off"], default="auto")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tree", help="a folder holding the acp_bridge package to count")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return 0
    if not shutil.which("valgrind"):
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_BRIDGE_")}
    if args.tree:
        env["PYTHONPATH"] = os.pathsep.join([args.tree, *filter(None, [env.get("PYTHONPATH")])])
    where = "import acp_bridge, os; print(os.path.dirname(acp_bridge.__file__))"
    # -P: not the working directory first on sys.path (from a checkout's root, it would
    # name that checkout's package, not --tree's, which the worker counts).
    package = subprocess.run(
        [sys.executable, "-P", "-c", where], capture_output=True, text=True, env=env,
        check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    compileall.compile_dir(package, quiet=1)  # PYTHONDONTWRITEBYTECODE would count the compiler
    with tempfile.TemporaryDirectory(prefix="acp-bridge-fanout-instructions-") as tmp:
        work = Path(tmp)
        (work / "w").mkdir()
        env.update(
            XDG_CONFIG_HOME=str(work / "config"),
            XDG_STATE_HOME=str(work / "state"),
            FANOUT_CWD=str(work / "w"),
        )
        if args.sandbox == "off":
            (work / "config" / "acp-bridge").mkdir(parents=True)
            (work / "config" / "acp-bridge" / "config.yaml").write_text("sandbox: {mode: off}\n")
        print(f"acp_bridge from {package}, sandbox {args.sandbox}, {args.repeats} repeat(s)")
        small, large = [], []
        for _ in range(args.repeats):
            small.append(counted(32, env, work))
            large.append(counted(64, env, work))
            print(f"  32 runs: {small[-1][0] / 1e6:.0f} M + {small[-1][1] / 1e6:.0f} M threads;"
                  f" 64 runs: {large[-1][0] / 1e6:.0f} M + {large[-1][1] / 1e6:.0f} M")  # fmt: skip
    loop = (statistics.median(m for m, _ in large) - min(m for m, _ in small)) / 32
    threads = (statistics.median(o for _, o in large) - statistics.median(o for _, o in small)) / 32
    print(
        f"per run: {(loop + threads) / 1e6:.2f} M instructions "
        f"(the loop's thread {loop / 1e6:.2f} M, worker threads {threads / 1e6:.2f} M)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
