"""Cold-start benchmark: wall time of one whole trivial delegation, process start to exit.

    python benchmarks/cold_start.py [--rounds 7] [--acpx PATH] [--install-acpx]

The commands run in turn round after round (A B C A B C …) after one warm-up round:

- ``floor``: ``python -c pass`` on the interpreter acp-bridge runs on (the least any Python
  CLI can cost);
- ``bridge``: ``acp-bridge run demo "Reply with exactly OK"`` (spawns the bundled demo agent,
  handshake, one turn, shutdown, envelope on stdout; transcripts on and the agent in its OS
  sandbox, as by default: bubblewrap where it works);
- ``nosandbox``: the same with ``sandbox: {mode: off}``, and ``landlock``: with the sandbox
  forced to Landlock — so the sandbox's cost is a difference within the same rounds;
- ``norecord``: the same with ``runs: {record: false}``: the cost of recording the run in the
  run store (docs/explanation/runs.md) is ``bridge`` minus ``norecord``, in wall and in CPU time;
- ``acpx``: acpx (the Node ACP CLI) doing the same one-shot turn against the same demo agent:
  ``acpx --agent "<python> -m acp_bridge._demo.agent" --format quiet --approve-all exec …``;
- ``sdk``: the official Python SDK doing the same (``sdk_client.py``: spawn, ``initialize``,
  ``session/new``, one prompt, print the answer), with no sandbox, transcript or record:
  the reference for "faster than the SDK" at this size.

Each run is a child process reaped with ``os.wait4``, so its user+sys CPU and peak RSS are
the kernel's own accounting (descendants included). Output is checked: the bridge must print
a ``done`` envelope with output ``OK``, acpx must print ``OK``. Medians are printed, and the
ratios bridge/acpx and bridge/floor taken within each round.

acpx is looked up as ``--acpx``, else ``acpx`` on PATH, else in the cache directory
(``$ACP_BRIDGE_BENCH_DIR``, default ``~/.cache/acp-bridge-bench``); ``--install-acpx``
installs the pinned version there with npm. Without acpx the reference is the floor only.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import acp_bridge

ACPX_VERSION = "0.19.1"
TASK = "Reply with exactly OK"
RUN_TIMEOUT = 60.0  # seconds per run: a hung run fails the benchmark instead of hanging it
TARGET_SECONDS = 0.5


@dataclass
class Run:
    wall: float
    cpu: float
    peak_rss_mb: float
    ok: bool
    detail: str


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "acp-bridge-bench"
    return Path(os.environ.get("ACP_BRIDGE_BENCH_DIR") or default)


def find_acpx(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    on_path = shutil.which("acpx")
    if on_path:
        return on_path
    cached = cache_dir() / "acpx" / "node_modules" / ".bin" / "acpx"
    return str(cached) if cached.exists() else None


def install_acpx() -> None:
    prefix = cache_dir() / "acpx"
    prefix.mkdir(parents=True, exist_ok=True)
    print(f"installing acpx@{ACPX_VERSION} into {prefix} …", flush=True)
    subprocess.run(
        [
            "npm",
            "install",
            "--prefix",
            str(prefix),
            "--no-audit",
            "--no-fund",
            f"acpx@{ACPX_VERSION}",
        ],
        check=True,
        timeout=600,
    )


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float, int, str]:
    """Wall seconds, CPU seconds, peak RSS (MB), exit status and stdout of one run."""
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=cwd
        )
        # A blocking wait4 (exact timing, the child's own rusage); a timer kills a hung run.
        watchdog = threading.Timer(RUN_TIMEOUT, process.kill)
        watchdog.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            watchdog.cancel()
        wall = time.perf_counter() - started
        process.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        stdout = out.read().decode("utf-8", "replace")
    if code == -9 and wall >= RUN_TIMEOUT:
        raise TimeoutError(f"{argv[0]} did not finish within {RUN_TIMEOUT:g}s")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code, stdout


def check_bridge(status: int, stdout: str) -> tuple[bool, str]:
    try:
        envelope = json.loads(stdout)
    except ValueError:
        return False, f"exit {status}, not an envelope: {stdout[:200]!r}"
    ok = status == 0 and envelope.get("status") == "done" and envelope.get("output") == "OK"
    return ok, f"exit {status}, status {envelope.get('status')}, output {envelope.get('output')!r}"


def check_acpx(status: int, stdout: str) -> tuple[bool, str]:
    return status == 0 and stdout.strip() == "OK", f"exit {status}, stdout {stdout[:200]!r}"


def check_sdk(status: int, stdout: str) -> tuple[bool, str]:
    return check_acpx(status, stdout)


def sdk_command(python: str) -> list[str]:
    """The official SDK's cold one-shot on the demo agent (sdk_client.py)."""
    return [python, str(Path(__file__).with_name("sdk_client.py"))]


def check_floor(status: int, stdout: str) -> tuple[bool, str]:
    return status == 0, f"exit {status}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="counted rounds (after a warm-up)")
    parser.add_argument("--acpx", help="path of the acpx executable")
    parser.add_argument("--install-acpx", action="store_true", help="npm-install acpx first")
    args = parser.parse_args()

    # A pip install compiles the package; an editable install on a machine that sets
    # PYTHONDONTWRITEBYTECODE never does, and then every run would compile from source.
    package = Path(acp_bridge.__file__).parent
    compileall.compile_dir(package, quiet=1)

    if args.install_acpx:
        install_acpx()
    acpx = find_acpx(args.acpx)
    python = sys.executable
    bridge = Path(python).with_name("acp-bridge")
    if not bridge.exists():
        print(f"acp-bridge is not installed next to {python}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="acp-bridge-cold-") as tmp:
        work = Path(tmp)
        # No config file, transcripts and state in a scratch place: the defaults, isolated.
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_BRIDGE_")}
        env.update(XDG_CONFIG_HOME=str(work / "config"), XDG_STATE_HOME=str(work / "state"))
        configs = {}
        for name, mode in (("nosandbox", "off"), ("landlock", "landlock")):
            configs[name] = work / f"{name}.yaml"
            configs[name].write_text(f"sandbox: {{mode: {mode}}}\n")
        # The same run without its record in the run store (docs/explanation/runs.md): the record's
        # cost.
        configs["norecord"] = work / "norecord.yaml"
        configs["norecord"].write_text("runs: {record: false}\n")
        commands = {
            "floor": ([python, "-c", "pass"], check_floor),
            "bridge": ([str(bridge), "run", "demo", TASK], check_bridge),
            "sdk": (sdk_command(python), check_sdk),
            **{
                name: ([str(bridge), "--config", str(path), "run", "demo", TASK], check_bridge)
                for name, path in configs.items()
            },
        }
        if acpx:
            agent = f"{python} -m acp_bridge._demo.agent"
            argv = [acpx, "--agent", agent, "--format", "quiet", "--approve-all", "exec", TASK]
            commands["acpx"] = (argv, check_acpx)
        else:
            print(
                "acpx not found (give --acpx PATH, put it on PATH, or pass --install-acpx): "
                "the reference is the floor only"
            )
        print(
            f"cold start: {args.rounds} rounds after 1 warm-up; python {sys.version.split()[0]}, "
            f"{os.cpu_count()} cpus; acpx: {acpx or 'none'}"
        )
        runs: dict[str, list[Run]] = {name: [] for name in commands}
        for number in range(args.rounds + 1):
            for name, (argv, check) in commands.items():
                wall, cpu, rss, status, stdout = timed(argv, env, work)
                ok, detail = check(status, stdout)
                if not ok:
                    print(f"{name}: unexpected result: {detail}", file=sys.stderr)
                    return 1
                if number:  # round 0 is the warm-up
                    runs[name].append(Run(wall, cpu, rss, ok, detail))

    print(f"\n{'command':<10} {'wall s (median, min–max)':>26} {'cpu s':>7} {'peak RSS MB':>12}")
    for name, measured in runs.items():
        walls = [r.wall for r in measured]
        print(
            f"{name:<10} {statistics.median(walls):>9.3f} ({min(walls):.3f}–{max(walls):.3f})"
            f" {statistics.median(r.cpu for r in measured):>10.3f}"
            f" {statistics.median(r.peak_rss_mb for r in measured):>12.1f}"
        )

    def ratios(a: str, b: str) -> list[float]:
        return [x.wall / y.wall for x, y in zip(runs[a], runs[b], strict=True)]

    def added_ms(a: str, b: str, what: str = "wall") -> float:
        return 1000 * statistics.median(
            getattr(x, what) - getattr(y, what) for x, y in zip(runs[a], runs[b], strict=True)
        )

    print()
    for name in ("bridge", "landlock"):
        print(
            f"sandbox cost ({name} - nosandbox, median of the rounds): "
            f"{added_ms(name, 'nosandbox'):+.1f} ms"
        )
    record_wall, record_cpu = added_ms("bridge", "norecord"), added_ms("bridge", "norecord", "cpu")
    print(
        f"run store record cost (bridge - norecord, median of the rounds): "
        f"{record_wall:+.1f} ms wall, {record_cpu:+.1f} ms CPU"
    )
    for a, b in (("bridge", "acpx"), ("bridge", "sdk"), ("bridge", "floor"), ("acpx", "floor")):
        if a in runs and b in runs:
            values = ratios(a, b)
            print(f"{a}/{b}: {statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})")
    bridge_wall = statistics.median(r.wall for r in runs["bridge"])
    checks = [
        (
            f"cold trivial run ≤ {TARGET_SECONDS} s: {bridge_wall:.3f} s",
            bridge_wall <= TARGET_SECONDS,
        )
    ]
    checks.append(
        (f"the sandbox adds ≤ 30 ms: {added_ms('bridge', 'nosandbox'):+.1f} ms",
         added_ms("bridge", "nosandbox") <= 30)
    )  # fmt: skip
    checks.append(
        (f"recording the run adds ≤ 5 ms: {record_wall:+.1f} ms", record_wall <= 5)
    )  # fmt: skip
    if "acpx" in runs:
        half = statistics.median(ratios("bridge", "acpx"))
        checks.append((f"≤ half of acpx: {half:.2f}× acpx", half <= 0.5))
    print()
    for text, met in checks:
        print(f"{'met ' if met else 'MISS'}  {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
