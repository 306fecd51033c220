"""Fan-out benchmark: many demo-agent runs at once, per task, against the official SDK.

    python benchmarks/fanout.py [--n 64] [--rounds 3] [--clients sdk,bridge,detached]

Each measurement runs in a fresh worker process (this script with ``--worker``), imports
done before the clock starts, against the bundled demo agent (``python -m
acp_bridge._demo.agent``) and the task ``Reply with exactly OK``:

- ``sdk``: the official Python SDK (``acp.spawn_agent_process``) drives N agents at once:
  spawn, ``initialize``, ``session/new``, one prompt, close. No sandbox, no transcript, no
  record: the least a client can do;
- ``bridge``: N concurrent ``acp_bridge.acp_spawn("demo", …)`` in one anyio task group, as
  a host calls them: the defaults (the OS sandbox ``auto``, transcripts, the run record);
- ``detached``: N ``start_run_sync`` (as ``acp-bridge run --detach`` does: the runs go to
  one supervisor process of this environment, which runs them at once) then
  ``wait_all_sync`` for all of them; ``supervisors`` says how many processes ran them.

- ``sdk-sandboxed`` (only when named): the SDK as in ``sdk``, each agent started in the
  bridge's sandbox exactly as the bridge starts the demo agent (``confined()`` with the demo
  profile's settings, set up before the clock; the stdio handoff's shells, bubblewrap's
  namespaces and mounts inside it). What any client pays for that isolation, apart from the
  bridge's own work: ``sdk-sandboxed/sdk`` is the sandbox's share of the ratio,
  ``bridge/sdk-sandboxed`` the bridge's.

``per task`` is the batch's wall time divided by N; ``cpu/task`` is the worker's own CPU
(user+sys, plus its reaped children: the agents) divided by N. Every run must answer ``OK``.
Under bubblewrap ``cpu/task`` leaves out the agents themselves: bwrap exits before reaping
its namespace's init, which the system's init then reaps with the agent's CPU in it (a
demo agent run: ~3 ms reach the worker, ~31 ms when the worker is made a subreaper), so
the bridge's line shows its own CPU and bwrap's, the SDK's its own and its agents'.
Ratios are taken within each round (the clients run in turn), then the median is printed.

Budgets: docs/explanation/performance.md (the fan-out against the sandboxed SDK, the bridge's
own CPU, detached runs). Issue 24's target, which ``quick.py`` still prints: the bridge at
most 1.3 times the SDK per task; detached at most 3 times the bridge.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CLIENTS = ("sdk", "bridge", "detached")
EXTRA_CLIENTS = ("sdk-sandboxed",)
TASK = "Reply with exactly OK"
WORKER_TIMEOUT = 600.0


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _report(client: str, n: int, ok: int, wall: float, cpu: float, **extra: Any) -> None:
    print(json.dumps({"client": client, "n": n, "ok": ok, "wall_s": wall, "cpu_s": cpu, **extra}))


def run_sdk(n: int, cwd: str, *, sandboxed: bool = False) -> None:
    import acp.schema  # noqa: F401  (before the clock, as the bridge's entry is)
    from sdk_client import one_turn

    async def one(launch: tuple[list[str], dict[str, str] | None]) -> bool:
        argv, env = launch
        answer, stop_reason = await one_turn(argv, cwd=cwd, env=env, task=TASK)
        return stop_reason == "end_turn" and answer == "OK"

    async def main() -> tuple[list[bool], float, float, float, float]:
        async with contextlib.AsyncExitStack() as stack:
            launches: list[tuple[list[str], dict[str, str] | None]]
            if sandboxed:  # set up before the clock: only the launch itself is measured
                launches = [await _sandboxed_launch(stack, i, cwd) for i in range(n)]
            else:
                launches = [([sys.executable, "-m", "acp_bridge._demo.agent"], None)] * n
            cpu0, t0 = _cpu(), time.perf_counter()
            results = list(await asyncio.gather(*(one(launch) for launch in launches)))
            return results, t0, cpu0, time.perf_counter(), _cpu()  # the sandboxes left after

    outer_cpu0, outer_t0 = _cpu(), time.perf_counter()
    results, t0, cpu0, t1, cpu1 = asyncio.run(main())
    if not sandboxed:  # the loop's start and end inside the clock, as the bridge's
        t0, cpu0, t1, cpu1 = outer_t0, outer_cpu0, time.perf_counter(), _cpu()
    wall, cpu = t1 - t0, cpu1 - cpu0
    _report("sdk-sandboxed" if sandboxed else "sdk", n, sum(results), wall, cpu)


async def _sandboxed_launch(
    stack: contextlib.AsyncExitStack, number: int, cwd: str
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment the bridge starts the demo agent with, in a sandbox set up
    as the bridge sets up a run's (the demo profile's settings, its private ``/tmp``); the
    sandbox is left when the batch is over."""
    from acp_bridge import load_config
    from acp_bridge._entries.confinement import confined
    from acp_bridge._os.fs.roots import Roots
    from acp_bridge._os.process.stdio_handoff import outer_argv

    config = load_config()
    profile = config.profiles.get("demo").runnable()
    roots = Roots.for_session(Path(cwd), profile.read_roots, profile.write_roots)
    confinement = await stack.enter_async_context(
        confined(
            profile.sandbox.over(config.config.sandbox),
            task_id=f"sub_bench{number:04d}",
            cwd=Path(cwd),
            read_roots=roots.read,
            write_roots=roots.write,
            measure=False,
        )
    )
    argv = [sys.executable, "-m", "acp_bridge._demo.agent"]
    launch = confinement.launch(argv, dict(os.environ), Path(cwd), handoff=True)
    # As the bridge's process group starts it: the stdio handoff's outer shell first.
    return (outer_argv(launch.argv) if launch.handoff else launch.argv), launch.env


def run_bridge(n: int, cwd: str) -> None:
    import anyio

    # The entry itself, not the lazy package attribute: its import (~0.3 s) must happen
    # before the clock, as the SDK's does (the first run still pays its config and probe).
    # So must anyio's asyncio backend, which anyio.run imports on first use (~25-45 ms: in
    # the SDK's worker asyncio itself is imported before its clock).
    import anyio._backends._asyncio

    from acp_bridge import acp_spawn

    results: list[Any] = []

    async def main() -> None:
        async def one() -> None:
            results.append(await acp_spawn("demo", TASK, cwd=cwd))

        async with anyio.create_task_group() as group:
            for _ in range(n):
                group.start_soon(one)

    cpu0, t0 = _cpu(), time.perf_counter()
    anyio.run(main)
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    ok = sum(1 for r in results if r.status == "done" and r.output == "OK")
    errors = sorted({r.error for r in results if r.status != "done"})[:3]
    sandbox = results[0].meta.model_dump().get("sandbox", {}).get("mode", "") if results else ""
    _report("bridge", n, ok, wall, cpu, sandbox=sandbox, errors=errors)


def run_detached(n: int, cwd: str) -> None:
    from acp_bridge import EntryRequest, load_config
    from acp_bridge._runs.caller.handle import wait_all_sync
    from acp_bridge._runs.caller.start import start_run_sync

    config = load_config()
    request = EntryRequest(entry="acp_spawn", agent="demo", task=TASK, cwd=cwd)
    cpu0, t0 = _cpu(), time.perf_counter()
    ids = [start_run_sync(request, config=config).id for _ in range(n)]
    started = time.perf_counter() - t0
    runs = wait_all_sync(ids, timeout=WORKER_TIMEOUT)
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    ok = 0
    for run in runs:
        envelope = run.envelope or {}
        ok += envelope.get("status") == "done" and envelope.get("output") == "OK"
    # The supervisors are not our children: their CPU is not in ``cpu``.
    supervisors = len({run.supervisor for run in runs})  # processes that ran the runs
    _report("detached", n, ok, wall, cpu, start_s=started, supervisors=supervisors)


def worker(client: str, n: int) -> None:
    with tempfile.TemporaryDirectory(prefix="acp-bridge-fanout-") as tmp:
        # No config file, state in a scratch place: the defaults, isolated (as cold_start.py).
        for variable in [v for v in os.environ if v.startswith("ACP_BRIDGE_")]:
            del os.environ[variable]
        os.environ.update(XDG_CONFIG_HOME=f"{tmp}/config", XDG_STATE_HOME=f"{tmp}/state")
        work = Path(tmp) / "work"
        work.mkdir()
        runs = {"sdk": run_sdk, "bridge": run_bridge, "detached": run_detached}
        if client == "sdk-sandboxed":
            run_sdk(n, str(work), sandboxed=True)
        else:
            runs[client](n, str(work))


def measure(client: str, n: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", client, "--n", str(n)],
        capture_output=True,
        text=True,
        timeout=WORKER_TIMEOUT,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{client} worker failed (exit {proc.returncode}):\n{proc.stderr}")
    result = dict(json.loads(lines[-1]))
    if result["ok"] != n:
        raise SystemExit(f"{client}: {result['ok']} of {n} runs answered OK: {result}")
    return result


def rounds_of(clients: list[str], n: int, rounds: int, log: Any = print) -> list[dict[str, Any]]:
    out = []
    for number in range(1, rounds + 1):
        out.append({c: measure(c, n) for c in clients})
        row = "  ".join(f"{c} {1000 * r['wall_s'] / n:.1f} ms/task" for c, r in out[-1].items())
        log(f"  round {number}: {row}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=64, help="runs at once")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--clients",
        default=",".join(CLIENTS),
        help=f"comma-separated, of {', '.join(CLIENTS + EXTRA_CLIENTS)}",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.n)
        return 0
    clients = [c for c in args.clients.split(",") if c]
    print(f"fan-out: {args.n} demo-agent runs at once, {args.rounds} rounds, {os.cpu_count()} cpus")
    rounds = rounds_of(clients, args.n, args.rounds)
    print(f"\n{'client':<10} {'ms/task (median, min–max)':>28} {'cpu ms/task':>12}")
    for client in clients:
        walls = [1000 * r[client]["wall_s"] / args.n for r in rounds]
        cpus = [1000 * r[client]["cpu_s"] / args.n for r in rounds]
        print(
            f"{client:<10} {statistics.median(walls):>12.1f} ({min(walls):.1f}–{max(walls):.1f})"
            f" {statistics.median(cpus):>12.1f}"
        )
    if "bridge" in clients and rounds[0]["bridge"].get("sandbox"):
        print(f"sandbox: {rounds[0]['bridge']['sandbox']}")
    if "detached" in clients:
        counts = [r["detached"]["supervisors"] for r in rounds]
        print(f"detached runs ran in {counts} supervisor process(es) per round")
    print()
    for a, b, target in (("bridge", "sdk", 1.3), ("detached", "bridge", 3.0)):
        if a in clients and b in clients:
            values = [r[a]["wall_s"] / r[b]["wall_s"] for r in rounds]
            median = statistics.median(values)
            print(
                f"{'met ' if median <= target else 'MISS'}  {a}/{b} per task: {median:.2f} "
                f"({min(values):.2f}–{max(values):.2f}), target ≤ {target}"
            )
    for a, b in (("sdk-sandboxed", "sdk"), ("bridge", "sdk-sandboxed")):  # no target: a split
        if a in clients and b in clients:
            values = [r[a]["wall_s"] / r[b]["wall_s"] for r in rounds]
            print(f"      {a}/{b} per task: {statistics.median(values):.2f} "
                  f"({min(values):.2f}–{max(values):.2f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
