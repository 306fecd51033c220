"""Every ratio of the performance budgets (docs/explanation/performance.md; issue 24's targets)
in about a minute.

    python benchmarks/quick.py [--base PATH] [--acpx PATH] [--only stream,cold,…]

A report, not a test: each figure is measured next to its reference in this same run (the
machine's speed drifts; a ratio of two things measured side by side drifts less), and
printed with its target. For steadier figures run the full benchmark named on each line.

- ``stream`` (``stream.py``): 100 000 chunks in one turn; the bridge (sandbox on, the
  default) against the bare readline + ``json.loads`` limit and the official SDK;
- ``cold`` (``cold_start.py``): a cold ``acp-bridge run demo "Reply with exactly OK"``
  against ``--base`` (the ``acp-bridge`` of another tree, e.g. a checkout of the commit
  before a change, with its own venv: a paired A/B), acpx, and the official SDK's one-shot
  (``sdk_client.py``);
- ``fanout`` (``fanout.py``): 64 concurrent ``acp_spawn`` in one process against the SDK
  driving 64 demo agents (and, for the split, against the SDK starting each agent in the
  bridge's sandbox), and 64 detached runs + ``wait`` against the in-process fan-out;
- ``ps``: a cold ``acp-bridge ps --all --json`` over 10 000 records (the store is filled
  once and kept in ``$ACP_BRIDGE_BENCH_DIR``, default ``~/.cache/acp-bridge-bench``);
- ``floods``: the bridge's peak RSS for 1 000 000 updates and for a 100 MB answer (kept up
  to its documented cap), against a trivial run's.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cold_start  # noqa: E402
import fanout  # noqa: E402
import stream  # noqa: E402

import acp_bridge  # noqa: E402

SECTIONS = ("stream", "cold", "fanout", "ps", "floods")
PS_RECORDS = 10_000
CLI = str(Path(sys.executable).with_name("acp-bridge"))
LINES: list[str] = []


def verdict(name: str, values: list[float], target: float, *, at_least: bool = False) -> None:
    """One ratio line: median (min to max) over the pairs, and whether the target is met."""
    median = statistics.median(values)
    met = median >= target if at_least else median <= target
    spread = f" ({min(values):.2f}–{max(values):.2f})" if len(values) > 1 else ""
    bound = f"{'≥' if at_least else '≤'} {target:g}"
    line = f"{'met ' if met else 'MISS'}  {name}: {median:.2f}{spread}, target {bound}"
    LINES.append(line)
    print(line, flush=True)


def note(text: str) -> None:
    print(f"      {text}", flush=True)


def section_stream(rounds: int) -> None:
    clients = ("limit", "sdk", "bridge")
    measured = [{c: stream.measure(c, 100_000) for c in clients} for _ in range(rounds)]
    for r in measured:
        note("  ".join(f"{c} {r[c]['rate']:,.0f}/s" for c in clients))
    rate = [{c: r[c]["rate"] for c in clients} for r in measured]
    cpu = [{c: r[c]["turn_cpu_s"] for c in clients} for r in measured]
    verdict("stream: bridge/limit", [r["bridge"] / r["limit"] for r in rate], 0.8, at_least=True)
    verdict(
        "stream: bridge/limit, by turn CPU",
        [r["limit"] / r["bridge"] for r in cpu],
        0.8,
        at_least=True,
    )
    verdict("stream: bridge/sdk", [r["bridge"] / r["sdk"] for r in rate], 6.0, at_least=True)


def _cold_commands(base: str | None, acpx: str | None) -> dict[str, tuple[list[str], Any]]:
    task = cold_start.TASK
    commands = {
        "bridge": ([CLI, "run", "demo", task], cold_start.check_bridge),
        "sdk": (cold_start.sdk_command(sys.executable), cold_start.check_sdk),
    }
    if base:
        commands["base"] = ([base, "run", "demo", task], cold_start.check_bridge)
    if acpx:
        agent = f"{sys.executable} -m acp_bridge._demo.agent"
        argv = [acpx, "--agent", agent, "--format", "quiet", "--approve-all", "exec", task]
        commands["acpx"] = (argv, cold_start.check_acpx)
    return commands


def section_cold(rounds: int, base: str | None, acpx: str | None) -> None:
    commands = _cold_commands(base, acpx)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory(prefix="acp-bridge-quick-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_BRIDGE_")}
        env.update(XDG_CONFIG_HOME=f"{tmp}/config", XDG_STATE_HOME=f"{tmp}/state")
        for number in range(rounds + 1):  # round 0 warms up
            for name, (argv, check) in commands.items():
                wall, cpu, _rss, status, out = cold_start.timed(argv, env, Path(tmp))
                ok, detail = check(status, out)
                if not ok:
                    raise SystemExit(f"cold {name}: {detail}")
                if number:
                    walls[name].append(wall)
                    cpus[name].append(cpu)
    note("  ".join(f"{n} {statistics.median(w):.3f} s" for n, w in walls.items()))
    pairs = {b: [a / c for a, c in zip(walls["bridge"], walls[b], strict=True)] for b in walls}
    note("CPU: " + "  ".join(f"{n} {statistics.median(c):.3f} s" for n, c in cpus.items()))
    if "base" in walls:
        verdict("cold run: bridge/base tree", pairs["base"], 0.6)
        by_cpu = [a / b for a, b in zip(cpus["bridge"], cpus["base"], strict=True)]
        verdict("cold run: bridge/base tree, by CPU", by_cpu, 0.6)
    else:
        note("no --base: the paired A/B against the tree before the change is not measured")
    # No target of its own: the round's aim ("faster than the SDK at every size") at this size.
    note(f"cold run: bridge/SDK one-shot {statistics.median(pairs['sdk']):.2f} (no target)")
    if "acpx" in walls:
        verdict("cold run: bridge/acpx", pairs["acpx"], 0.3)
    else:
        note("acpx not found (cold_start.py --install-acpx): bridge/acpx not measured")


def section_fanout(rounds: int, n: int) -> None:
    measured = fanout.rounds_of(["sdk", "sdk-sandboxed", "bridge"], n, rounds, log=note)
    note(f"sandbox: {measured[0]['bridge'].get('sandbox') or '?'}")
    wall = [{c: r[c]["wall_s"] for c in r} for r in measured]
    verdict(f"fan-out {n}: bridge/sdk per task", [r["bridge"] / r["sdk"] for r in wall], 1.3)
    # No target: how the ratio splits between the sandbox's launch and the bridge's own work.
    sandbox_share = statistics.median(r["sdk-sandboxed"] / r["sdk"] for r in wall)
    bridge_share = statistics.median(r["bridge"] / r["sdk-sandboxed"] for r in wall)
    note(f"the SDK with each agent in the bridge's sandbox: {sandbox_share:.2f}× the SDK; "
         f"the bridge {bridge_share:.2f}× that")  # fmt: skip
    measured_detached = fanout.measure("detached", n)
    detached = measured_detached["wall_s"]
    bridge = fanout.measure("bridge", n)["wall_s"]
    note(
        f"detached {1000 * detached / n:.1f} ms/task ({measured_detached['supervisors']} "
        f"supervisor process(es)), in process {1000 * bridge / n:.1f} ms/task"
    )
    verdict(f"{n} detached + wait / in-process fan-out, per task", [detached / bridge], 3.0)


def _ps_store(records: int) -> Path:
    """A store of ``records`` ended runs, filled once (it takes a while) and kept."""
    from acp_bridge._runs.store.migrations import VERSION

    kept = cold_start.cache_dir() / f"ps-{records}-v{VERSION}.db"
    if not kept.exists():
        import runs

        note(f"filling a store of {records:,} records once, kept as {kept}")
        with tempfile.TemporaryDirectory() as tmp:
            store = runs.fresh_store(Path(tmp), "fill")
            runs.fill(store, records)
            store.close()
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(tmp) / "fill" / "runs.db", kept)
    return kept


def section_ps(rounds: int) -> None:
    kept = _ps_store(PS_RECORDS)
    times, cpus = [], []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "runs.db"
        shutil.copyfile(kept, db)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_BRIDGE_")}
        env.update(ACP_BRIDGE_RUNS_DB=str(db), XDG_STATE_HOME=tmp, XDG_CONFIG_HOME=tmp)
        for number in range(rounds + 1):
            argv = [CLI, "ps", "--all", "--json"]
            wall, cpu, _rss, status, out = cold_start.timed(argv, env, Path(tmp))
            if status != 0 or len(json.loads(out)) != PS_RECORDS:
                raise SystemExit(f"ps: exit {status}, {out[:200]!r}")
            if number:
                times.append(wall)
                cpus.append(cpu)
    note(f"CPU {statistics.median(cpus):.3f} s (the wall time on an idle machine)")
    verdict(f"ps of {PS_RECORDS:,} records, cold (seconds)", times, 0.15)


def section_floods() -> None:
    mb = 1024.0  # VmHWM is in KiB
    trivial = stream.measure("bridge", 1)["peak_rss_kb"] / mb
    updates = stream.measure("bridge", 1_000_000)["peak_rss_kb"] / mb
    answer = stream.measure("bridge", 100, width=1 << 20)["peak_rss_kb"] / mb
    note(
        f"trivial run {trivial:.0f} MB; 1M updates {updates:.0f} MB; 100 MB answer {answer:.0f} MB"
    )
    verdict("flood: 1M updates, peak RSS / a trivial run's", [updates / trivial], 2.0)
    verdict("flood: 100 MB answer, peak RSS / a trivial run's", [answer / trivial], 2.0)


BUSY_WARNING = 0.25


def _busy_share(seconds: float = 0.5) -> float:
    """How busy the CPUs are over ``seconds`` (``/proc/stat``; 0 where there is none)."""

    def sample() -> tuple[int, int]:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]  # all, idle + iowait

    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return 0.0
    spent = total1 - total0
    return 1 - (idle1 - idle0) / spent if spent else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="the acp-bridge command of the tree to compare with")
    parser.add_argument("--acpx", help="the acpx executable (default: as cold_start.py finds it)")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    parser.add_argument("--n", type=int, default=64, help="runs at once for the fan-out")
    args = parser.parse_args()
    compileall.compile_dir(Path(acp_bridge.__file__).parent, quiet=1)  # as cold_start.py
    chosen = [s for s in args.only.split(",") if s]
    acpx = cold_start.find_acpx(args.acpx)
    began = time.perf_counter()
    version, load = sys.version.split()[0], os.getloadavg()[0]
    print(f"quick performance report: python {version}, {os.cpu_count()} cpus, load {load:.1f}")
    run: dict[str, Callable[[], None]] = {
        "stream": lambda: section_stream(2),
        "cold": lambda: section_cold(5, args.base, acpx),
        "fanout": lambda: section_fanout(2, args.n),
        "ps": lambda: section_ps(3),
        "floods": section_floods,
    }
    busiest = 0.0
    for name in chosen:
        # What else the machine does, read before each section (the load average would
        # count this report's own fan-out, which has ended by then).
        busiest = max(busiest, _busy_share())
        print(f"\n[{name}]", flush=True)
        run[name]()
    print(f"\nsummary ({time.perf_counter() - began:.0f} s):")
    for line in LINES:
        print(line)
    if busiest > BUSY_WARNING:
        # Other work skews the ratios, the fan-out's most: each agent the bridge starts is a
        # session of its own, so with autogroup scheduling (Linux's default) it gets a share
        # of its own against the other work, where the SDK's agents share their worker's.
        print(
            f"note: other work kept the CPUs {busiest:.0%} busy between sections; measure "
            "again on a quiet machine"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
