"""Ctrl-C ends any size of work: ``smoke`` with thousands of cases, ``batch`` with thousands
of tasks, ``compare`` with several attempts, each on the demo agent, interrupted twice. The
first SIGINT asks politely, the second ends it: exit 130, the reports for what ended written
and well formed (JUnit, JSON, ``--out`` results), and nothing of the run left running (every
process the command started carries the test's marker; none may outlive it). One mechanism
serves the three (``cli/_signals.py``). No timing is asserted: the wait is a generous guard,
and the time to exit after the second signal is measured in benchmarks, not here."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xmlschema

from tests.conftest import MARKER_VAR, AgentHarness, processes_with

ROOT = Path(__file__).parents[2]
SCHEMA = xmlschema.XMLSchema(ROOT / "tests" / "fixtures" / "junit" / "junit-10.xsd")
CASES = 3000
"""Thousands: enough that skipping the rest one by one, or recording each, is felt."""


def setup(harness: AgentHarness, kind: str) -> list[str]:
    harness.config(
        {
            "demo2": {
                "command": sys.executable,
                "args": ["-m", "acp_bridge._demo.agent"],
                "timeouts": {"cancel_grace": 2, "shutdown_grace": 2},
            }
        }
    )
    root = harness.root
    if kind == "smoke":
        cases = "".join(f"  - {{name: c{i}, task: sleep 30}}\n" for i in range(CASES))
        (root / "suite.yaml").write_text(
            f"defaults: {{agents: [demo2], timeout: 60}}\ncases:\n{cases}"
        )
        return [
            "smoke",
            "suite.yaml",
            "--parallel",
            "3",
            "--junit",
            "out.xml",
            "--json",
            "out.json",
        ]
    if kind == "batch":
        work = str(harness.workspace)
        task = {"entry": "acp_spawn", "agent": "demo2", "task": "sleep 30", "cwd": work}
        lines = (json.dumps({**task, "key": f"t{i}"}) + "\n" for i in range(CASES))
        (root / "tasks.jsonl").write_text("".join(lines))
        return ["batch", "tasks.jsonl", "--concurrency", "3", "--out", "out.jsonl"]
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=harness.workspace, check=True)
    subprocess.run(
        [*git, "commit", "-q", "--allow-empty", "-m", "s"], cwd=harness.workspace, check=True
    )
    return ["compare", "demo2", "sleep 30", "--n", "6", "--cwd", str(harness.workspace),
            "--junit", "out.xml"]  # fmt: skip


def start(harness: AgentHarness, argv: list[str]) -> subprocess.Popen[str]:
    config = str(harness.root / "acp-bridge.yaml")
    return subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "--config", config, *argv],
        cwd=harness.root, env={**os.environ, MARKER_VAR: harness.marker},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def agents_running(harness: AgentHarness, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 240  # a guard against a hang, not a timing
    ours = {process.pid}
    while not set(processes_with(harness.marker)) - ours:  # an agent (or its sandbox) runs
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no agent ever started"
        time.sleep(0.05)


@pytest.mark.parametrize("kind", ["smoke", "batch", "compare"])
def test_two_interrupts_end_any_size_of_work_with_its_reports(
    harness: AgentHarness, kind: str
) -> None:
    process = start(harness, setup(harness, kind))
    agents_running(harness, process)
    process.send_signal(signal.SIGINT)  # asks politely
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)  # ends it
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    assert harness.leftovers() == []
    root = harness.root
    if kind == "batch":
        rows = [json.loads(line) for line in (root / "out.jsonl").read_text().splitlines()]
        assert len(rows) <= CASES
        assert all(r["status"] == "failed" and r["meta"]["error_code"] == "cancelled" for r in rows)
        return
    SCHEMA.validate(root / "out.xml")
    if kind == "smoke":
        report = json.loads((root / "out.json").read_text())
        assert report["interrupted"] is True and len(report["cases"]) == CASES
        assert {c["verdict"] for c in report["cases"]} == {"skipped"}
        assert "3000 case(s)" in out


def test_two_interrupts_while_a_big_suite_loads_end_it_at_once(harness: AgentHarness) -> None:
    """Before the loop nothing ran and nothing is owed: the second signal ends the command
    there (here, most likely while its 15 000 cases are read), without a traceback, and no
    case starts."""
    cases = "".join(f"  - {{name: c{i}, task: sleep 30}}\n" for i in range(15000))
    suite = harness.root / "suite.yaml"
    suite.write_text(f"defaults: {{agents: [demo2], timeout: 60}}\ncases:\n{cases}")
    setup(harness, "compare")  # the config (and a repository nobody uses)
    process = start(harness, ["smoke", str(suite), "--junit", "out.xml"])
    deadline = time.monotonic() + 60
    while not _handles_sigterm(process.pid):  # the CLI's handlers are in: it is ours now
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    time.sleep(2)  # into the suite's loading (an action's pace, not an assertion)
    process.send_signal(signal.SIGINT)
    time.sleep(0.3)  # two signals at once are one (POSIX merges a pending signal)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    if (harness.root / "out.xml").exists():  # the load was quicker: the loop saw them
        SCHEMA.validate(harness.root / "out.xml")
    else:
        assert err.strip().endswith("interrupted"), err[-2000:]
    assert harness.leftovers() == []


def _handles_sigterm(pid: int) -> bool:
    """Whether the process catches SIGTERM (the CLI installs its handler first thing)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
