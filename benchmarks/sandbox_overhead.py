"""Sandbox overhead: the latency the OS sandbox adds to starting a trivial process.

    python benchmarks/sandbox_overhead.py [--rounds 40] [--json out.json] [--by-option]

Two trivial commands — ``/bin/true`` and ``python -c pass`` (the interpreter acp-bridge runs
on) — each started three ways, in turn round after round (bare, bwrap, landlock, bare, …)
after a warm-up: bare; under bubblewrap (``RunSandbox.wrap``: system read-only, private
/tmp, PID/IPC namespaces, secrets masked); under the Landlock shim (``python -I -S -c``
importing ``acp_bridge/_os/sandbox/landlock_shim.py``: ruleset, subreaper, fork, exec). Each
start is ``subprocess.run`` to exit, wall time.

Also measured: the bridge-side cost of ``wrap()`` itself (plan + argv), and the one-off
cost of ``choose_mode(mode)`` in a fresh process (a cold CLI run pays it once: bwrap is
probed by running it; Landlock by asking the kernel its ABI). Wall times scale with the
machine's load (printed); the CPU columns much less: user+sys of every process a start
made, from wait4, this process being a subreaper so that bwrap's namespace init (which
makes the mounts, and which bwrap leaves to the system's init) is counted too. Printed:
medians, the added milliseconds (median of the per-round differences) and the ratio to
bare. Budget: docs/explanation/performance.md (one sandboxed launch).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from acp_bridge._os.process.stdio_handoff import outer_argv
from acp_bridge._os.sandbox import RunSandbox, SandboxSpec, choose_mode

BUDGET_MS = 30.0
PR_SET_CHILD_SUBREAPER = 36
COMMANDS = {"true": ["/bin/true"], "python": [sys.executable, "-c", "pass"]}
PROBE_CHILD = """
import sys, time, anyio
from acp_bridge._os.sandbox import choose_mode
async def main():  # timed inside a running loop, imports done: as in a real bridge
    began = time.perf_counter()
    await choose_mode(sys.argv[1])
    print(time.perf_counter() - began)
anyio.run(main)
"""


def adopt_orphans() -> None:
    """Make this process a child subreaper: what a child leaves running is reparented to
    us, so its CPU is counted. bwrap exits before its namespace's init (which set up every
    mount and tears the namespace down), and that init, reaped by the system's init, took
    ~4 of the ~5 ms of CPU a bwrap launch costs here."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def start(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall time to exit, and user+sys CPU of the process and of every process it started,
    orphans included (the kernel's accounting via wait4: far less sensitive to a busy
    machine than wall time)."""
    began = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=cwd, start_new_session=True)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{argv[:3]}… exited with {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime + reap_orphans()


def reap_orphans() -> float:
    """Wait for what our children left running (:func:`adopt_orphans`): its CPU seconds."""
    cpu = 0.0
    while True:
        try:
            _, _, usage = os.wait4(-1, 0)
        except ChildProcessError:
            return cpu
        cpu += usage.ru_utime + usage.ru_stime


def _without(argv: list[str], flag: str, values: int) -> list[str]:
    """``argv`` with every ``flag`` before ``--`` and the ``values`` arguments after it."""
    end = argv.index("--")
    out, i = [], 0
    while i < end:
        if argv[i] == flag:
            i += 1 + values
            continue
        out.append(argv[i])
        i += 1
    return out + argv[end:]


def by_option(rounds: int) -> None:
    """What each part of a bubblewrap launch costs: ``/bin/true`` launched as the bridge
    launches an agent (``RunSandbox.wrap``: the plan's private ``/tmp``, masks, write root;
    then the stdio handoff's two ``/bin/sh``), and the same launch with one part left out,
    in turn, round after round. CPU of every process of a start (the subreaper's count)."""
    base = Path(tempfile.mkdtemp(prefix="sandbox-bench-"))
    ws = base / "ws"
    ws.mkdir()
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(Path.home())}
    box = RunSandbox(SandboxSpec(cwd=ws, write=(ws,)), anyio.run(choose_mode, "bwrap"))
    with box:
        full = box.wrap(["/bin/true"], env).argv
        handoff = outer_argv(box.wrap(["/bin/true"], env, handoff=True).argv)
        variants = {
            "the launch": full,
            "+ the handoff's two /bin/sh": handoff,
            "- the masks' --remount-ro": _without(full, "--remount-ro", 1),
            "- the masks": _without(_without(full, "--remount-ro", 1), "--tmpfs", 1),
            "- --dev /dev": _without(full, "--dev", 1),
            "- --proc /proc": _without(full, "--proc", 1),
            "- --unshare-ipc": _without(full, "--unshare-ipc", 0),
            "- --unshare-pid": _without(full, "--unshare-pid", 0),
            "--ro-bind / / alone": [full[0], "--ro-bind", "/", "/", "--", "/bin/true"],
            "/bin/true, no sandbox": ["/bin/true"],
        }
        cpu: dict[str, list[float]] = {name: [] for name in variants}
        for round_ in range(rounds + 2):  # two warm-up rounds
            for name, argv in variants.items():
                used = start(argv, env, ws)[1]
                if round_ >= 2:
                    cpu[name].append(used)
    shutil.rmtree(base, ignore_errors=True)
    print(" ".join(full))
    print(f"load average at the end: {os.getloadavg()[0]:.2f}; CPU per start, every process")
    whole = statistics.median(cpu["the launch"])
    for name, used in cpu.items():
        median = statistics.median(used)
        print(f"{name:<30} {median * 1000:6.2f} ms  {(median - whole) * 1000:+6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--by-option", action="store_true", help="what each part of a bwrap launch costs"
    )
    args = parser.parse_args()

    adopt_orphans()
    if args.by_option:
        by_option(args.rounds)
        return
    base = Path(tempfile.mkdtemp(prefix="sandbox-bench-"))
    ws = base / "ws"
    ws.mkdir()
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(Path.home())}
    spec = SandboxSpec(cwd=ws, write=(ws,))
    boxes = {
        mode: RunSandbox(spec, anyio.run(choose_mode, mode), tmp_parent=base / "state")
        for mode in ("bwrap", "landlock")
    }
    for box in boxes.values():
        box.__enter__()

    times: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    wrap_cost: dict[str, list[float]] = {mode: [] for mode in boxes}
    for round_ in range(args.rounds + 3):  # three warm-up rounds
        for name, argv in COMMANDS.items():
            runs = {"bare": (argv, env)}
            for mode, box in boxes.items():
                began = time.perf_counter()
                launch = box.wrap(argv, env)
                wrap_cost[mode].append(time.perf_counter() - began)
                runs[mode] = (launch.argv, launch.env)
            for variant, (cmd, cmd_env) in runs.items():
                took, used = start(cmd, cmd_env, ws)
                if round_ >= 3:
                    times.setdefault(f"{name}/{variant}", []).append(took)
                    cpu.setdefault(f"{name}/{variant}", []).append(used)

    probe: dict[str, list[float]] = {mode: [] for mode in boxes}
    for _ in range(7):  # fresh interpreters: the probe cache is per process
        for mode in boxes:
            out = subprocess.run(
                [sys.executable, "-c", PROBE_CHILD, mode],
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            )
            probe[mode].append(float(out.stdout))
            reap_orphans()  # the probe's sandbox init, adopted

    for box in boxes.values():
        box.__exit__(None, None, None)

    ms = 1000.0
    report: dict[str, object] = {
        "rounds": args.rounds,
        "budget_ms": BUDGET_MS,
        "load_average": os.getloadavg(),
    }
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (wall times scale with it)")
    print(
        f"{'command':<8} {'variant':<9} {'median ms':>9} {'added ms':>8} {'ratio':>6} "
        f"{'cpu ms':>7} {'added cpu':>9}"
    )
    for name in COMMANDS:
        bare, bare_cpu = times[f"{name}/bare"], cpu[f"{name}/bare"]
        for variant in ("bare", *boxes):
            got, used = times[f"{name}/{variant}"], cpu[f"{name}/{variant}"]
            row = {
                "median_ms": statistics.median(got) * ms,
                # median of the per-round differences: the two ran back to back
                "added_ms": statistics.median(g - b for g, b in zip(got, bare, strict=True)) * ms,
                "ratio": statistics.median(got) / statistics.median(bare),
                "cpu_ms": statistics.median(used) * ms,
                "added_cpu_ms": (statistics.median(used) - statistics.median(bare_cpu)) * ms,
            }
            print(
                f"{name:<8} {variant:<9} {row['median_ms']:>9.2f} {row['added_ms']:>8.2f} "
                f"{row['ratio']:>6.2f} {row['cpu_ms']:>7.2f} {row['added_cpu_ms']:>9.2f}"
            )
            report[f"{name}/{variant}"] = {k: round(v, 3) for k, v in row.items()}
    for mode in boxes:
        wrap_ms = statistics.median(wrap_cost[mode]) * ms
        probe_ms = statistics.median(probe[mode]) * ms
        start_ms = report[f"python/{mode}"]["added_ms"]  # type: ignore[index]
        cold = probe_ms + wrap_ms + start_ms
        verdict = "within" if cold <= BUDGET_MS else "OVER"
        print(
            f"{mode}: choose_mode once {probe_ms:.2f} ms + wrap() {wrap_ms:.2f} ms + start "
            f"{start_ms:.2f} ms = {cold:.1f} ms added to a cold run: {verdict} the "
            f"{BUDGET_MS:g} ms budget"
        )
        report[f"cold/{mode}"] = {
            "probe_ms": round(probe_ms, 3),
            "wrap_ms": round(wrap_ms, 3),
            "added_ms": round(cold, 3),
        }
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
