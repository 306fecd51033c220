"""Hostile agents (tests/agents/unruly_agent.py) against the real bridge: every wait has a
deadline, every malformed message is skipped or a clean protocol_error, everything is
bounded — and whatever happens, the envelope keeps what was gathered."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_bridge._entries.enveloped import END_GRACE
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ErrorCode
from tests.conftest import AGENTS, AgentHarness
from tests.helpers import killed_after_sigterm

# Seconds each (timeouts waited out, hostile cases): out of the default run, in CI's.
pytestmark = pytest.mark.slow

FAST = {"startup": 10, "session": 10, "cancel_grace": 1, "shutdown_grace": 1}
SLACK = 5.0
"""Seconds a loaded CI machine may add to a bound (a deadlock is minutes, not seconds)."""


def hostile(harness: AgentHarness, mode: str, *args: str, **profile: Any) -> Any:
    command = {"command": sys.executable, "args": [str(AGENTS / "unruly_agent.py"), mode, *args]}
    timeouts = {**FAST, **profile.pop("timeouts", {})}
    settings = profile.pop("settings", {})
    return harness.config({"hostile": {**command, "timeouts": timeouts, **profile}}, **settings)


def transcript_lines(result: SubtaskResult) -> list[dict[str, Any]]:
    assert result.meta.transcript, result.meta
    return [json.loads(line) for line in Path(result.meta.transcript).read_text().splitlines()]


def test_an_agent_that_stops_reading_ends_by_the_timeout_plus_grace(
    harness: AgentHarness,
) -> None:
    run = 3.0  # from the run's start: start-up (in the sandbox) fits, then the turn hangs
    config = hostile(harness, "deaf", "3000", timeouts={"run": run})
    prompt = "p" * (2 << 20)  # 2 MiB: far more than a pipe holds
    # The bound is the point of the test: the run must end by T + grace, whatever the agent
    # does (it ignores SIGTERM, its stdin is full and it never reads it).
    result = harness.run("hostile", prompt, config, guard=run + END_GRACE + SLACK)
    assert result.meta.error_code == ErrorCode.TIMEOUT, result.error
    assert "stopped reading its stdin" in result.error or "did not finish" in result.error
    assert result.output == "partial before going deaf"
    assert result.meta.session_id == "hostile_session_1"
    assert "not reading stdin any more" in (result.meta.stderr_tail or "")
    lines = transcript_lines(result)
    sent = [line["msg"].get("method") for line in lines if line["dir"] == "out"]
    assert "session/prompt" not in sent  # never logged as sent: it was never written
    notes = [line["note"] for line in lines if line["dir"] == "note"]
    assert any(n.startswith("not sent: session/prompt") for n in notes), notes


@pytest.mark.parametrize("made_by", ["agent", "user"])
def test_measuring_what_a_run_changed_keeps_the_bound(harness: AgentHarness, made_by: str) -> None:
    # A 1 GiB (sparse) file in a git work tree: git would hash it for over ten seconds to
    # record it (before the run: the baseline) or to measure the change (after). Both get
    # only the run's time: the baseline counts against T, the measurement against the grace.
    subprocess.run(["git", "init", "-q", str(harness.workspace)], check=True, timeout=30)
    if made_by == "user":
        with (harness.workspace / "big.bin").open("wb") as file:
            file.truncate(1 << 30)
    run = 3.0
    config = hostile(harness, "sprawl", "1024", timeouts={"run": run})
    result = harness.run("hostile", "go", config, guard=run + END_GRACE + SLACK)
    assert result.meta.error_code == ErrorCode.TIMEOUT, result.error
    if made_by == "user":  # the agent never started
        assert "files were being recorded" in result.error and result.meta.session_id is None
        return
    assert result.output == "partial before going deaf"
    assert (harness.workspace / "big.bin").stat().st_size == 1 << 30
    notes = result.to_dict()["meta"].get("files_changed_notes") or []  # an extension key
    said = [*(result.meta.warnings or []), *notes]
    unmeasured = [w for w in said if "not measured" in w]
    assert unmeasured or result.meta.files_changed, result.meta


def test_malformed_messages_are_skipped_and_counted(harness: AgentHarness) -> None:
    result = harness.run("hostile", "go", hostile(harness, "malformed"))
    assert result.status == "done", result.error
    assert result.output == "ANSWER"
    warnings = "\n".join(result.meta.warnings or [])
    assert "malformed message(s) from the agent" in warnings
    assert "non-JSON line(s)" in warnings
    assert "reply(ies) to requests never sent" in warnings
    assert "duplicate or late reply(ies)" in warnings
    assert "malformed session/update(s)" in warnings
    assert "lone UTF-16 surrogates" in warnings
    assert result.meta.usage == {"output_tokens": 3}  # true and "x" are not token counts
    json.dumps(result.to_dict(), ensure_ascii=False).encode()  # printable, always


@pytest.mark.parametrize(
    ("mode", "phase"), [("bad-result", "session/prompt"), ("bad-session", "session/new")]
)
def test_a_malformed_reply_is_a_protocol_error_that_keeps_what_was_gathered(
    harness: AgentHarness, mode: str, phase: str
) -> None:
    result = harness.run("hostile", "go", hostile(harness, mode))
    assert result.meta.error_code == ErrorCode.PROTOCOL_ERROR, result.error
    assert f"malformed reply to {phase}" in result.error
    assert result.meta.transcript and Path(result.meta.transcript).exists()
    if mode == "bad-result":
        assert result.output == "partial answer kept"
        assert result.meta.session_id == "hostile_session_1"
        assert "about to send a list" in (result.meta.stderr_tail or "")


def test_a_request_flood_is_answered_and_the_answer_is_on_time(harness: AgentHarness) -> None:
    (harness.workspace / "hello.txt").write_text("hi\n")
    config = hostile(harness, "flood", "3000", timeouts={"run": 60})
    result = harness.run("hostile", "go", config, guard=60)
    assert result.status == "done", result.error
    assert result.output == "FLOOD-DONE 3000 replies"  # every request got its reply


def test_the_transcript_has_a_cap_and_says_where_it_was_cut(harness: AgentHarness) -> None:
    cap = 64 * 1024
    settings = {"transcripts": {"dir": str(harness.root / "transcripts"), "max_bytes": cap}}
    result = harness.run("hostile", "go", hostile(harness, "chatty", "500", settings=settings))
    assert result.status == "done", result.error
    assert len(result.output) > 500 * 1000  # the answer is whole: only the transcript is cut
    path = Path(result.meta.transcript or "")
    assert path.stat().st_size <= cap
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["dir"] == "note" and "transcript cut here" in last["note"]
    assert any("transcript cut at its cap" in w for w in result.meta.warnings or [])


def test_an_agent_that_ignores_sigterm_and_eof_is_killed(harness: AgentHarness) -> None:
    result = harness.run("hostile", "go", hostile(harness, "slow-exit"), guard=END_GRACE + SLACK)
    assert result.status == "done" and result.output == "ANSWER"
    notes = [n["note"] for n in transcript_lines(result) if n["dir"] == "note"]
    assert any(killed_after_sigterm(note, result) for note in notes), notes


@pytest.mark.parametrize("bad", ["missing", "directory"])
def test_a_bad_command_names_the_file_and_line_that_set_it(harness: AgentHarness, bad: str) -> None:
    command = "no-such-agent-anywhere" if bad == "missing" else str(harness.workspace)
    result = harness.run("bad", "go", harness.config({"bad": {"command": command}}))
    if bad == "missing":  # not installed (yet): no such agent here, as an unknown name
        assert result.meta.error_code == ErrorCode.CONFIG_ERROR
        assert "command not found" in result.error
    else:  # a folder is never a program: the profile is wrong
        assert result.meta.error_code == ErrorCode.CONFIG_ERROR
        assert "is a directory" in result.error
    assert "acp-bridge.yaml:9:16: acp.agents[0].command" in result.error, result.error


@pytest.mark.parametrize(
    ("raw_input", "expected"),
    [
        # rawInput.command names it: the request (kind left out, as zed's claude-code-acp
        # does) is judged as the execute its tool_call announced, and the terminal follows.
        ("1", {"permission": {"outcome": {"outcome": "selected", "optionId": "yes"}}}),
        # Only the title names it ("run echo hello"): no command rule matches that, so the
        # request is refused — and so is the terminal it leads to, though its text alone
        # ("echo hello") would match the rule: one decision.
        ("0", {"permission": {"outcome": {"outcome": "selected", "optionId": "no"}}}),
    ],
    ids=["raw-input", "title-only"],
)
def test_a_zed_style_request_and_its_terminal_are_one_decision(
    harness: AgentHarness, raw_input: str, expected: dict[str, Any]
) -> None:
    rules = [{"kind": "execute", "command": "echo hello", "decision": "allow"}]
    config = hostile(harness, "zed", raw_input, permissions={"rules": rules})
    result = harness.run("hostile", "go", config)
    assert result.status == "done", result.error
    report = json.loads(result.output)
    assert report["permission"] == expected["permission"]
    if raw_input == "1":
        assert report["output"] == "hello\n"
        assert [p.kind for p in result.meta.permissions or []] == ["execute"]
    else:
        assert (
            "refused with the permission request of tool call call_zed"
            in (report["terminal_error"])
        )


def test_a_terminal_line_that_walks_around_a_rule_is_refused(harness: AgentHarness) -> None:
    rules = [{"kind": "execute", "title": "echo hello*", "decision": "allow"}]
    marker = harness.workspace / "pwned"
    env = {"HOSTILE_COMMAND": f"echo hello; touch {marker}"}  # what the agent will run
    config = hostile(harness, "zed", "1", permissions={"rules": rules}, env=env)
    result = harness.run("hostile", "go", config)
    report = json.loads(result.output)
    assert report["permission"]["outcome"]["optionId"] == "no"
    assert "refused" in report["terminal_error"]
    assert not marker.exists()
