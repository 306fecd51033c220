"""`acp-bridge ui` over 10 000 runs: the first page of runs against `ps --all --json`.

    python benchmarks/ui_pages.py [--runs 10000] [--rounds 5]

A store of ``--runs`` ended runs shaped like a batch's tasks (ps_scale.py's), the viewer
started on it as a command, then, each round: the runs list's first page (``GET /``, 50
runs, rendered), the same page filtered by a text no run holds (the worst case: every run
looked at), a run's page, and a cold ``acp-bridge ps --all --json`` (every run, the
reference). Prints the medians and each page's ratio to the reference: the issue asks that
10 000 runs open in under a second; a keyset page should cost what 50 runs cost, whatever
the store holds. Not a test: times are measured here, never asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from ps_scale import CLI, cold, fill

URL = re.compile(r"open (http://\S+)")


def fetch(url: str, token: str) -> float:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    began = time.monotonic()
    with urllib.request.urlopen(request, timeout=60) as answer:
        answer.read()
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ui-pages-") as folder:
        path = Path(folder, "runs.db")
        began = time.monotonic()
        fill(path, args.runs)
        print(f"filled {args.runs} runs in {time.monotonic() - began:.0f} s")
        env = {**os.environ, "ACP_BRIDGE_RUNS_DB": str(path)}
        began = time.monotonic()
        viewer = subprocess.Popen(
            [*CLI, "ui", "--port", "0"], env=env, stderr=subprocess.PIPE, text=True
        )
        try:
            assert viewer.stderr is not None
            found = URL.search(viewer.stderr.readline())
            assert found, "acp-bridge ui printed no URL"
            base, token = found.group(1).split("/?token=")
            first = fetch(base + "/", token)
            print(f"ui: started and first page served in {time.monotonic() - began:.2f} s "
                  f"(that page {first * 1000:.0f} ms)")  # fmt: skip
            pages = {
                "first page of runs": base + "/",
                "filtered, no match (every run read)": base + "/?q=no-such-text",
                "a run's page": base + f"/runs/sub_{0:012x}",
            }
            times: dict[str, list[float]] = {name: [] for name in pages}
            reference: list[float] = []
            cold(["ps", "--all", "--json"], path)  # migrated and in the page cache first
            for _ in range(args.rounds):
                for name, url in pages.items():
                    times[name].append(fetch(url, token))
                reference.append(cold(["ps", "--all", "--json"], path))
        finally:
            viewer.terminate()
            viewer.wait(15)
        ps = statistics.median(reference)
        print(f"reference: ps --all --json, cold, {args.runs} runs: {ps * 1000:.0f} ms")
        for name, measured in times.items():
            page = statistics.median(measured)
            print(f"ui {name}: {page * 1000:.1f} ms, {page / ps:.3f}x the reference")


if __name__ == "__main__":
    main()
