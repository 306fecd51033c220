"""`acp-bridge smoke` as CI runs it: real agents, failing, timing-out and crashing cases,
reports that validate, Ctrl-C, and nothing left running."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import xmlschema

from tests.conftest import AGENTS, AgentHarness, processes_with

ROOT = Path(__file__).parents[2]
SCHEMA = xmlschema.XMLSchema(ROOT / "tests" / "fixtures" / "junit" / "junit-10.xsd")


def write_suite(harness: AgentHarness, text: str) -> Path:
    faulty = {
        "command": sys.executable,
        "args": [str(AGENTS / "fault_agent.py"), "crash-mid-turn"],
        "timeouts": {"startup": 10, "cancel_grace": 0.5, "shutdown_grace": 0.5},
    }
    harness.config(
        {
            "demo2": {
                "command": sys.executable,
                "args": ["-m", "acp_bridge._demo.agent"],
                "timeouts": {"cancel_grace": 0.5, "shutdown_grace": 0.5},
            },
            "crasher": faulty,
        }
    )
    path = harness.root / "suite.yaml"
    path.write_text(text)
    return path


def smoke(harness: AgentHarness, suite: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "acp_bridge",
            "--config",
            str(harness.root / "acp-bridge.yaml"),
            "smoke",
            str(suite),
            "--junit",
            str(harness.root / "out.xml"),
            "--json",
            str(harness.root / "out.json"),
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=harness.root,
    )


MIXED = """
name: mixed
defaults: {agents: [demo2], timeout: 30}
cases:
  - name: passes
    task: Reply with exactly OK
    expect: {status: done, output: OK}
  - name: wrong expectation
    task: Reply with exactly YES
    expect: {output: NO}
  - name: times out
    task: sleep 30
    timeout: 1
    expect: {status: done}
  - name: agent crashes
    agents: [crasher]
    task: go
    expect: {status: done}
  - name: bash too
    entry: bash
    command: echo fine
    expect: {status: done, envelope: {output: {stdout: "fine\\n"}}}
"""


def test_failures_timeouts_and_crashes_each_get_the_right_result(harness: AgentHarness) -> None:
    suite = write_suite(harness, MIXED)
    process = smoke(harness, suite, "--parallel", "3")
    out, err = process.communicate(timeout=90)
    assert process.returncode == 1, err
    report = json.loads((harness.root / "out.json").read_text())
    verdicts = {c["case"]: (c["verdict"], c["failures"]) for c in report["cases"]}
    assert verdicts["passes"] == ("passed", [])
    assert verdicts["wrong expectation"] == ("failed", ["output YES, expected NO"])
    assert verdicts["times out"][0] == "failed"
    assert verdicts["times out"][1][0].startswith("status failed (timeout: ")
    assert verdicts["agent crashes"][0] == "failed"
    assert "agent_exited" in verdicts["agent crashes"][1][0]
    assert verdicts["bash too"] == ("passed", [])
    assert report["totals"] == {"passed": 2, "failed": 3, "total": 5}
    SCHEMA.validate(harness.root / "out.xml")
    assert "5 case(s): 2 passed, 3 failed" in out
    assert harness.leftovers() == []


def test_ctrl_c_stops_everything_and_still_writes_reports(harness: AgentHarness) -> None:
    suite = write_suite(
        harness,
        """
defaults: {agents: [demo2], timeout: 60}
cases:
"""
        + "".join(f"  - {{name: slow{i}, task: sleep 30}}\n" for i in range(6)),
    )
    process = smoke(harness, suite, "--parallel", "2")
    deadline = time.monotonic() + 30
    while len(processes_with(harness.marker)) < 2:  # two cases running: their agents exist
        assert time.monotonic() < deadline and process.poll() is None, "cases never started"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    report = json.loads((harness.root / "out.json").read_text())
    assert report["interrupted"] is True
    assert [c["verdict"] for c in report["cases"]] == ["skipped"] * 6
    reasons = sorted(c["failures"][0] for c in report["cases"])
    assert reasons == ["interrupted before it started"] * 4 + ["interrupted while running"] * 2
    assert all(
        c["envelope"]["meta"]["error_code"] == "cancelled" for c in report["cases"] if c["envelope"]
    )
    SCHEMA.validate(harness.root / "out.xml")
    assert harness.leftovers() == []


def test_demo_suite_passes_offline(harness: AgentHarness) -> None:
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_bridge",
            "smoke",
            str(ROOT / "examples/smoke/demo.yaml"),
            "--junit",
            str(harness.root / "demo.xml"),
            "--parallel",
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=harness.root,
        env={**__import__("os").environ, "HOME": str(harness.root)},
    )
    assert process.returncode == 0, process.stdout + process.stderr
    SCHEMA.validate(harness.root / "demo.xml")


HOSTILE_NAMES = r"""
name: "suite\e]0;title\a"
defaults: {agents: [demo2], timeout: 30}
cases:
  - name: "clip\e]52;c;aGk=\a"
    task: Reply with exactly OK
    expect: {output: "\e[2J"}
  - name: "c1\x9b2J \u202eevil"
    entry: bash
    command: printf 'out\001\033[31m\377'
    expect: {status: failed}
  - name: "nul\0 and \x7f del, cr\r, newline\n"
    entry: bash
    command: "true"
    expect: {status: done}
"""


def test_hostile_case_names_and_output_make_safe_text_and_well_formed_xml(
    harness: AgentHarness,
) -> None:
    from tests.helpers import terminal_controls

    suite = write_suite(harness, HOSTILE_NAMES)
    process = smoke(harness, suite)
    out, err = process.communicate(timeout=90)
    assert process.returncode == 1, err  # two cases fail their expectations
    assert not terminal_controls(out.replace("\n", "")) and not terminal_controls(err), (out, err)
    assert "clip\\x1b]52;c;aGk=\\x07" in out and "c1\\x9b2J \\u202eevil" in out
    SCHEMA.validate(harness.root / "out.xml")
    names = {c["case"] for c in json.loads((harness.root / "out.json").read_text())["cases"]}
    assert "clip\x1b]52;c;aGk=\x07" in names  # the JSON report keeps the data, escaped
    assert not terminal_controls((harness.root / "out.json").read_text().replace("\n", ""))


def test_a_report_path_that_cannot_be_written_is_refused_before_any_case(
    harness: AgentHarness,
) -> None:
    suite = write_suite(harness, MIXED)
    (harness.root / "a-file").write_text("")
    for bad in (harness.root, harness.root / "a-file" / "out.xml"):
        process = subprocess.run(
            [sys.executable, "-m", "acp_bridge", "--config", str(harness.root / "acp-bridge.yaml"),
             "smoke", str(suite), "--junit", str(bad)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert process.returncode == 2, process.stderr
        assert f"--junit {bad}: " in process.stderr and "Traceback" not in process.stderr
        assert process.stdout == "" and harness.leftovers() == []  # nothing ran
