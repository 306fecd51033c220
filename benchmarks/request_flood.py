"""Request flood: 20 000 agent→client requests in one burst, against an idle run.

Budget (docs/explanation/performance.md): every flood, a 20 000-request one included, within
2x an idle run's peak RSS.
Each run is a fresh worker process doing one ``acp_spawn`` against
``tests/agents/unruly_agent.py flood N``: the agent writes N requests without waiting
(``fs/read_text_file`` of a small file, ``terminal/output`` of an unknown terminal, an
unknown method, in turn), reads the replies in a thread, and answers
``FLOOD-DONE <replies read> replies`` once it has them all. The idle run is the same with
N = 0. The worker prints its peak RSS (VmHWM, Linux), the envelope's status and output, and
the run's duration; the parent alternates idle and flood runs and prints medians and the
ratio. Transcripts are on, as by default.

    .venv/bin/python benchmarks/request_flood.py [--n 20000] [--rounds 3] [--timeout 60]

"On time" means: the flood run ends ``done`` with every reply read, well within its timeout
(before the bounded pool, 20 000 requests made 20 000 tasks, 167 MB against 39 MB idle, and
a run answered in time reported ``timeout``).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "tests" / "agents" / "unruly_agent.py"


def peak_rss_kib() -> int:
    status = Path("/proc/self/status").read_text()
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    assert match, "no VmHWM in /proc/self/status"
    return int(match.group(1))


def worker(n: int, timeout: float) -> dict[str, Any]:
    import anyio

    from acp_bridge import acp_spawn
    from acp_bridge.config import load_config

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        (workspace / "hello.txt").write_text("hello\n")
        profile = {
            "name": "flood",
            "command": sys.executable,
            "args": [str(AGENT), "flood", str(n)],
            "timeouts": {"run": timeout},
        }
        config = root / "acp-bridge.yaml"
        config.write_text(
            json.dumps(
                {"transcripts": {"dir": str(root / "transcripts")}, "acp": {"agents": [profile]}}
            )
        )
        loaded = load_config(config, search=False)
        started = time.perf_counter()
        result = anyio.run(lambda: acp_spawn("flood", "go", cwd=workspace, config=loaded))
        duration = time.perf_counter() - started
    return {
        "n": n,
        "peak_rss_mib": peak_rss_kib() / 1024,
        "status": result.status,
        "output": result.output,
        "error": result.error,
        "duration_s": duration,
    }


def run_worker(n: int, timeout: float) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", str(n), "--timeout", str(timeout)],
        capture_output=True,
        text=True,
        timeout=timeout + 30,
        check=True,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args.timeout)))
        return 0
    idle, flood = [], []
    for _ in range(args.rounds):
        idle.append(run_worker(0, args.timeout))
        flood.append(run_worker(args.n, args.timeout))
    ok = all(f["status"] == "done" and f["output"] == f"FLOOD-DONE {args.n} replies" for f in flood)
    idle_rss = statistics.median(r["peak_rss_mib"] for r in idle)
    flood_rss = statistics.median(r["peak_rss_mib"] for r in flood)
    flood_s = statistics.median(r["duration_s"] for r in flood)
    print(f"idle run:   peak RSS {idle_rss:.1f} MiB (median of {args.rounds})")
    print(
        f"flood run:  peak RSS {flood_rss:.1f} MiB, {args.n} requests answered in {flood_s:.2f} s"
    )
    print(f"ratio:      {flood_rss / idle_rss:.2f}x idle (budget: < 2x)")
    print(f"on time:    {'yes' if ok else 'NO'}: done, every reply read, within {args.timeout:g} s")
    if not ok:
        print(json.dumps(flood, indent=1))
    return 0 if ok and flood_rss < 2 * idle_rss else 1


if __name__ == "__main__":
    sys.exit(main())
