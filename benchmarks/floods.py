"""Floods: the bridge's peak memory under each flood an agent can send, as a ratio to an
idle run's (docs/explanation/performance.md: every flood within 2x idle RSS;
issue 19, class 2).

    .venv/bin/python benchmarks/floods.py [--rounds 1] [--only updates,answer,…] [--json out.json]

Each run is a cold ``acp-bridge run`` (the real path: the envelope printed on stdout, the
run recorded in the store, the transcript written, the default sandbox). Its peak RSS is the
bridge process's own ``VmHWM``, read at exit by a wrapper that runs the CLI in process (the
``ru_maxrss`` that ``wait4`` reports would count the largest of its reaped children too, and
the agent is one of them). The reference is the same command against
the same agent with a trivial turn (``updates 1``), measured in the same round. The floods
(``flood_agent.py`` says what each writes):

- ``updates``: 1 000 000 message chunks;
- ``requests``: 20 000 agent→client requests in one burst (``tests/agents/unruly_agent.py
  flood``), replies read only at the end;
- ``answer``: a 100 MB answer in 1 MiB chunks (kept up to the collector's cap, then cut);
- ``line``: one 100 MB line (past the transport's ceiling: a protocol error);
- ``noise``: one 100 MB line that is not JSON (skipped as it streams);
- ``plan``: a plan of 1 000 000 entries on one line (3 bytes each on the wire);
- ``locations``: a permission request naming 1 000 000 locations;
- ``wideplan``: a plan of 1 000 000 entries of 16 bytes each (a 15 MB line, refused before
  it is decoded: issue 37, class 4);
- ``replies``: 100 ``fs/read_text_file`` replies of 4 MiB the agent reads only after a
  second (issue 37, class 4: what waits to be queued counts too).

Each flood's outcome is checked too (status, error code, the answer's head), so a flood that
"passes" by failing early is seen. Ratios, not seconds: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
AGENT = HERE / "flood_agent.py"
UNRULY = ROOT / "tests" / "agents" / "unruly_agent.py"
WRAPPER = """
import atexit, os, re, sys
def report():
    status = open("/proc/self/status").read()
    peak = re.search(r"^VmHWM:\\s+(\\d+) kB", status, re.MULTILINE).group(1)
    with open(os.environ["FLOODS_PEAK_FILE"], "w") as out:
        out.write(peak)
atexit.register(report)
from acp_bridge.cli import main
sys.argv[0] = "acp-bridge"
sys.exit(main())
"""
RUN_TIMEOUT = 300.0
BUDGET = 2.0

# name: (agent argv, expected status, expected error code, expected answer head or None)
FLOODS: dict[str, tuple[list[str], str, str | None, str | None]] = {
    "idle": ([str(AGENT), "updates", "1"], "done", None, "t0 "),
    "updates": ([str(AGENT), "updates", "1000000"], "done", None, "t0 t1 t2 "),
    "requests": ([str(UNRULY), "flood", "20000"], "done", None, "FLOOD-DONE 20000 replies"),
    "answer": ([str(AGENT), "answer", "100"], "done", None, "[block 0]\n"),
    "line": ([str(AGENT), "line", "100"], "failed", "protocol_error", None),
    "noise": ([str(AGENT), "noise", "100"], "done", None, "OK"),
    "plan": ([str(AGENT), "plan", "1000000"], "done", None, "OK"),
    "locations": ([str(AGENT), "locations", "1000000"], "done", None, "OK"),
    "wideplan": ([str(AGENT), "wideplan", "1000000"], "done", None, "OK"),
    "replies": ([str(AGENT), "replies", "100"], "done", None, "OK"),
}


def write_config(root: Path) -> Path:
    agents = [
        {
            "name": name,
            "command": sys.executable,
            "args": argv,
            "timeouts": {"run": RUN_TIMEOUT - 60},
            "permissions": {"mode": "approve-all"},
        }
        for name, (argv, *_rest) in FLOODS.items()
    ]
    config = root / "acp-bridge.yaml"
    config.write_text(json.dumps({"acp": {"agents": agents}}))  # JSON is YAML
    return config


def measure(name: str, config: Path, root: Path) -> dict[str, Any]:
    """One cold run of flood ``name``: peak RSS (MiB) of the bridge, and what it answered."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_BRIDGE_")}
    env.update(XDG_STATE_HOME=str(root / "state"), XDG_CONFIG_HOME=str(root / "config"))
    workspace = root / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "hello.txt").write_text("hello\n")
    peak_file = root / "peak"
    env["FLOODS_PEAK_FILE"] = str(peak_file)
    argv = [sys.executable, "-c", WRAPPER, "--config", str(config), "run", "-q", name, "go"]
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=workspace,
        )
        watchdog = threading.Timer(RUN_TIMEOUT, process.kill)
        watchdog.start()
        try:
            _, status, _usage = os.wait4(process.pid, 0)
        finally:
            watchdog.cancel()
        process.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
        envelope = json.loads(text) if text.strip() else {}
    _argv, want_status, want_code, want_head = FLOODS[name]
    output = envelope.get("output") or ""
    meta = envelope.get("meta") or {}
    ok = (
        envelope.get("status") == want_status
        and meta.get("error_code") == want_code
        and (want_head is None or str(output).startswith(want_head))
    )
    return {
        "name": name,
        "peak_rss_mib": int(peak_file.read_text()) / 1024,
        "exit": code,
        "ok": ok,
        "status": envelope.get("status"),
        "error_code": meta.get("error_code"),
        "error": envelope.get("error", "")[:200],
        "output_chars": len(output) if isinstance(output, str) else None,
        "warnings": meta.get("warnings"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", default=",".join(n for n in FLOODS if n != "idle"))
    parser.add_argument("--json", type=Path, help="write every measurement here")
    args = parser.parse_args()
    chosen = [n for n in args.only.split(",") if n]
    measured: dict[str, list[dict[str, Any]]] = {n: [] for n in ["idle", *chosen]}
    with tempfile.TemporaryDirectory(prefix="acp-bridge-floods-") as tmp:
        root = Path(tmp)
        config = write_config(root)
        for _ in range(args.rounds):
            for name in measured:  # the idle reference first in every round
                measured[name].append(measure(name, config, root))
    idle = statistics.median(r["peak_rss_mib"] for r in measured["idle"])
    print(f"{'flood':<10} {'peak RSS MiB':>12} {'× idle':>7}  outcome")
    print(f"{'idle':<10} {idle:>12.1f} {1:>7.2f}")
    failures = 0
    for name in chosen:
        runs = measured[name]
        peak = statistics.median(r["peak_rss_mib"] for r in runs)
        ratio = peak / idle
        ok = all(r["ok"] for r in runs)
        within = ratio <= BUDGET
        failures += (not ok) + (not within)
        last = runs[-1]
        outcome = f"{last['status']} {last['error_code'] or ''}".strip()
        marks = ("" if within else "  OVER BUDGET") + ("" if ok else "  UNEXPECTED OUTCOME")
        print(f"{name:<10} {peak:>12.1f} {ratio:>7.2f}  {outcome}{marks}")
        if not ok:
            print(f"           {json.dumps(last)[:400]}")
    print(f"budget: every flood ≤ {BUDGET:g}× the idle run's peak RSS")
    if args.json:
        args.json.write_text(json.dumps(measured, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
