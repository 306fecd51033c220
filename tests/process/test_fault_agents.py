"""Real agent processes that crash, hang, flood and misbehave: every run still ends in a
well-formed envelope with the right error_code, and no process of it is left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ErrorCode
from acp_bridge.events import Event
from tests.conftest import AgentHarness
from tests.helpers import killed_after_sigterm

# Seconds each (timeouts waited out, hostile cases): out of the default run, in CI's.
pytestmark = pytest.mark.slow

FAST = {"startup": 5, "session": 5, "run": 10, "cancel_grace": 0.5, "shutdown_grace": 0.5}


def run_fault(harness: AgentHarness, mode: str, **profile: object) -> SubtaskResult:
    profile.setdefault("timeouts", FAST)
    result = harness.run("fault", "go", harness.fault(mode, **profile))
    assert harness.leftovers() == [], f"{mode}: processes left behind"
    # Every envelope is the contract: it round-trips through its own model.
    assert SubtaskResult.model_validate(result.to_dict()) == result
    return result


def test_ok_baseline(harness: AgentHarness) -> None:
    result = run_fault(harness, "ok")
    assert result.status == "done" and result.output == "ANSWER"
    assert result.meta.stop_reason == "end_turn" and result.meta.session_id == "fault_session_1"
    transcript = Path(result.meta.transcript or "")
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [m["msg"].get("method") for m in lines if m["dir"] == "out"][:3] == [
        "initialize",
        "session/new",
        "session/prompt",
    ]


def test_crash_before_initialize(harness: AgentHarness) -> None:
    result = run_fault(harness, "crash-before-initialize")
    assert result.meta.error_code == ErrorCode.AGENT_EXITED
    assert "exited with code 3 during initialize" in result.error
    assert "boom: cannot start" in (result.meta.stderr_tail or "")


def test_crash_mid_turn_keeps_partial_output(harness: AgentHarness) -> None:
    result = run_fault(harness, "crash-mid-turn")
    assert result.meta.error_code == ErrorCode.AGENT_EXITED
    assert "exited with code 1 during prompt" in result.error
    assert result.output == "partial answer"
    assert "fell over mid-turn" in (result.meta.stderr_tail or "")


def test_hang_at_initialize_times_out(harness: AgentHarness) -> None:
    result = run_fault(harness, "hang-at-initialize", timeouts={**FAST, "startup": 1})
    assert result.meta.error_code == ErrorCode.TIMEOUT
    assert "did not answer initialize within 1s" in result.error


def test_hang_mid_turn_timeout_cancel_kill(harness: AgentHarness) -> None:
    # The run timeout counts from the start: room for start-up, then the turn times out.
    result = run_fault(harness, "hang-mid-turn", timeouts={**FAST, "run": 3})
    assert result.meta.error_code == ErrorCode.TIMEOUT
    assert result.output == "thinking..."
    transcript = Path(result.meta.transcript or "").read_text()
    assert '"method":"session/cancel"' in transcript  # the agent was told before being killed


def test_cancel_aware_agent_stops_with_cancelled(harness: AgentHarness) -> None:
    result = run_fault(harness, "cancel-aware", timeouts={**FAST, "run": 3})
    assert result.meta.error_code == ErrorCode.TIMEOUT
    assert result.meta.stop_reason == "cancelled"
    assert result.output == "partial before cancel"


def test_grandchildren_that_ignore_sigterm_all_die(harness: AgentHarness) -> None:
    result = run_fault(harness, "grandchildren", timeouts={**FAST, "run": 1})
    assert result.meta.error_code == ErrorCode.TIMEOUT
    notes = Path(result.meta.transcript or "").read_text().splitlines()
    assert any(killed_after_sigterm(note, result) for note in notes)


def test_twenty_megabyte_line_is_read_whole_and_its_answer_kept_to_the_cap(
    harness: AgentHarness,
) -> None:
    from acp_bridge._acp.turn.messages import MAX_ANSWER_BYTES

    result = run_fault(harness, "huge-line")
    assert result.status == "done"
    assert result.output == "x" * MAX_ANSWER_BYTES  # the head, up to the answer's cap
    cut = 20 * 1024 * 1024 - MAX_ANSWER_BYTES
    assert any(f"{cut} more characters" in w for w in result.meta.warnings or [])


def test_line_over_the_ceiling_is_a_protocol_error(harness: AgentHarness) -> None:
    result = run_fault(harness, "huge-line", max_message_bytes=1024 * 1024)
    assert result.meta.error_code == ErrorCode.PROTOCOL_ERROR
    assert "longer than 1048576 bytes" in result.error


def test_fifty_megabytes_of_stderr_do_not_block(harness: AgentHarness) -> None:
    result = run_fault(harness, "stderr-flood")
    assert result.status == "done" and result.output == "ANSWER"
    tail = result.meta.stderr_tail or ""
    assert tail.endswith("LAST STDERR LINE\n") and len(tail) <= 4000


def test_garbage_on_stdout_is_skipped_and_counted(harness: AgentHarness) -> None:
    result = run_fault(harness, "garbage-stdout")
    assert result.status == "done" and result.output == "ANSWER"
    warning = next(w for w in result.meta.warnings or [] if "non-JSON" in w)
    assert "skipped 4 non-JSON line(s)" in warning


def test_unknown_updates_are_tolerated(harness: AgentHarness) -> None:
    result = run_fault(harness, "unknown-updates")
    assert result.status == "done" and result.output == "ANSWER"
    assert any("future_update_kind" in w for w in result.meta.warnings or [])


def test_updates_before_the_session_new_reply(harness: AgentHarness) -> None:
    result = run_fault(harness, "early-updates")
    assert result.status == "done" and result.output == "ANSWER"  # the greeting is not it


def test_updates_after_the_prompt_reply_still_count(harness: AgentHarness) -> None:
    result = run_fault(harness, "late-updates")
    assert result.status == "done" and result.output == "ANSWER"


def test_permission_request_before_its_tool_call(harness: AgentHarness) -> None:
    result = run_fault(harness, "permission-before-tool-call")
    assert result.status == "done"
    assert json.loads(result.output) == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    [record] = result.meta.permissions or []
    assert (record.tool_call_id, record.decision, record.option_id) == ("call_9", "allowed", "yes")
    [call] = result.meta.tool_calls or []
    assert (call.title, call.status) == ("Edit notes.md", "completed")


def test_string_request_ids_are_echoed(harness: AgentHarness) -> None:
    (harness.workspace / "hello.txt").write_text("hello world\n")
    result = run_fault(harness, "string-ids")
    assert result.status == "done"
    assert result.output == "hello world|-32002"  # a missing file is resource-not-found
    transcript = Path(result.meta.transcript or "").read_text()
    assert '"id":"req-abc"' in transcript and '"id":"req-def"' in transcript


def test_narration_before_a_tool_call_is_not_the_answer(harness: AgentHarness) -> None:
    result = run_fault(harness, "narration")
    assert result.output == "ANSWER"


@pytest.mark.parametrize(
    ("mode", "code"),
    [
        ("refusal", ErrorCode.REFUSAL),
        ("max_tokens", ErrorCode.MAX_TOKENS),
        ("max_turn_requests", ErrorCode.MAX_TURN_REQUESTS),
    ],
)
def test_stop_reasons_map_to_error_codes(harness: AgentHarness, mode: str, code: ErrorCode) -> None:
    result = run_fault(harness, mode)
    assert result.status == "failed" and result.meta.error_code == code
    assert result.output == "partial" and result.meta.stop_reason == mode


def test_unknown_stop_reason_is_done_with_a_warning(harness: AgentHarness) -> None:
    result = run_fault(harness, "brand_new_stop")
    assert result.status == "done"
    assert any("unknown stop reason 'brand_new_stop'" in w for w in result.meta.warnings or [])


def test_other_protocol_version_is_a_clear_error(harness: AgentHarness) -> None:
    # Under `auto` an answer of 2 is v2 (test_spy_v2.py); a profile held to 1 refuses it.
    result = run_fault(harness, "version-2", protocol="1")
    assert result.meta.error_code == ErrorCode.PROTOCOL_ERROR
    assert "protocol version 2" in result.error


def test_malformed_initialize_reply(harness: AgentHarness) -> None:
    result = run_fault(harness, "malformed-initialize")
    assert result.meta.error_code == ErrorCode.PROTOCOL_ERROR
    assert "malformed reply to initialize: protocolVersion" in result.error


def test_auth_required_then_env_var_method_then_retry(
    harness: AgentHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_fault(harness, "auth-env", env={"FAKE_AGENT_KEY": "k-123456"})
    assert result.status == "done" and result.output == "ANSWER"
    missing = run_fault(harness, "auth-env")
    assert missing.meta.error_code == ErrorCode.AUTH_REQUIRED
    assert "fake-key needs FAKE_AGENT_KEY" in missing.error


def test_terminal_login_is_never_attempted_headless(harness: AgentHarness) -> None:
    result = run_fault(harness, "auth-terminal")
    assert result.meta.error_code == ErrorCode.AUTH_REQUIRED
    assert "needs an interactive login: run `" in result.error and "--login`" in result.error


def test_missing_command_is_a_config_error(harness: AgentHarness) -> None:
    config = harness.config(
        {"ghost": {"command": "no-such-agent-anywhere", "install": "npm i -g ghost-agent"}}
    )
    result = harness.run("ghost", "hi", config)
    assert result.meta.error_code == ErrorCode.CONFIG_ERROR  # not installed: no such agent
    assert result.error.startswith("command not found: no-such-agent-anywhere (set at ")
    # The error names where the command was configured, and how to install it.
    assert ":9:16: acp.agents[0].command)" in result.error
    assert result.error.endswith("; install it with: npm i -g ghost-agent")


def test_caller_cancel_is_graceful(harness: AgentHarness) -> None:
    import anyio

    from acp_bridge._entries.acp_spawn.entry import acp_spawn

    config = harness.fault("cancel-aware", timeouts=FAST)

    async def cancel_soon() -> SubtaskResult:
        cancel = anyio.Event()

        def on_event(event: Event) -> None:  # once the turn is under way (a cancel before
            if event.data.get("phase") == "prompting":  # it is a cancelled start-up)
                cancel.set()

        with anyio.fail_after(20):
            return await acp_spawn(
                "fault", "go", cwd=harness.workspace, config=config, cancel=cancel,
                on_event=on_event,
            )  # fmt: skip

    result = anyio.run(cancel_soon)
    assert result.meta.error_code == ErrorCode.CANCELLED
    assert result.meta.stop_reason == "cancelled"
    assert harness.leftovers() == []
