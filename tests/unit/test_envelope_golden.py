"""Every envelope shape the project produces, pinned as golden JSON files.

Regenerate after an intended change with ``ACP_BRIDGE_REGEN_GOLDEN=1 pytest tests/unit``;
review the diff like code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from acp_bridge import envelope
from acp_bridge.envelope import (
    Meta,
    PermissionRecord,
    SubtaskResult,
    TerminalRecord,
    ToolCallRecord,
)
from acp_bridge.errors import ConfigError, DepthLimitError, ErrorCode, Problem, SourceLocation

GOLDEN = Path(__file__).parent.parent / "golden" / "envelope"
TASK = "sub_000000000000"
ACP_META = Meta(entry="acp_spawn", agent="demo", session_id="sess_1", duration_ms=1234)


def _acp(**extra: object) -> Meta:
    return ACP_META.model_copy(update=extra)


CASES: dict[str, Callable[[], SubtaskResult]] = {
    "done_text": lambda: envelope.done(
        "child result\nmore detail",
        task_id=TASK,
        meta=_acp(stop_reason="end_turn", usage={"input_tokens": 10, "output_tokens": 3}),
    ),
    "done_text_empty": lambda: envelope.done("", task_id=TASK, meta=_acp(stop_reason="end_turn")),
    "done_text_long_first_line": lambda: envelope.done("word " * 60, task_id=TASK),
    "done_json": lambda: envelope.done(
        {"ok": True, "value": 42},
        output_kind="json",
        output_schema="subagent.demo.echo.v1",
        task_id=TASK,
        meta=Meta(entry="spawn"),
    ),
    "done_with_refusals": lambda: envelope.done(
        "I could only read the files.",
        task_id=TASK,
        notes=["2 permission requests refused"],
        meta=_acp(
            stop_reason="end_turn",
            permissions=[
                PermissionRecord(
                    tool_call_id="t1",
                    title="rm -rf build",
                    kind="execute",
                    decision="rejected",
                    option_id="reject-once",
                    reason="mode read-only",
                ),
                PermissionRecord(
                    tool_call_id="t2",
                    title="Write notes.md",
                    kind="edit",
                    decision="rejected",
                    option_id="reject-once",
                    reason="mode read-only",
                ),
            ],
            tool_calls=[
                ToolCallRecord(
                    tool_call_id="t1", title="rm -rf build", kind="execute", status="failed"
                )
            ],
        ),
    ),
    "done_with_terminal": lambda: envelope.done(
        "tests pass",
        task_id=TASK,
        meta=_acp(
            stop_reason="end_turn",
            terminals=[
                TerminalRecord(
                    terminal_id="term_1", command="pytest -q", exit_code=0, truncated=True
                )
            ],
            files_changed=["src/app.py"],
        ),
    ),
    "failed_timeout": lambda: envelope.failed(
        "agent did not finish within 600s",
        ErrorCode.TIMEOUT,
        output="partial answer",
        task_id=TASK,
        meta=_acp(stop_reason="cancelled"),
    ),
    "failed_refusal": lambda: envelope.failed(
        "the agent refused to continue (stop reason: refusal)",
        ErrorCode.REFUSAL,
        output="I can't help with that.",
        task_id=TASK,
        meta=_acp(stop_reason="refusal"),
    ),
    "failed_agent_exited": lambda: envelope.failed(
        "agent exited with code 1 during the prompt turn",
        ErrorCode.AGENT_EXITED,
        task_id=TASK,
        meta=_acp(stderr_tail="Traceback (most recent call last):\n  boom\n"),
    ),
    "failed_config": lambda: envelope.from_error(
        ConfigError(
            [
                Problem(
                    'must be a positive number, got "ten"',
                    SourceLocation(Path("/etc/acp-bridge.yaml"), 14, 7),
                    "acp.agents[1].timeouts.run",
                )
            ]
        ),
        task_id=TASK,
        meta=Meta(entry="acp_spawn"),
    ),
    "failed_output_schema": lambda: envelope.failed(
        "output for subagent.demo.echo.v1 is not valid JSON: Expecting value (line 1, column 1)",
        ErrorCode.OUTPUT_SCHEMA,
        output="Sure! Here it is: {ok}",
        output_kind="text",
        output_schema="subagent.demo.echo.v1",
        task_id=TASK,
        meta=Meta(entry="spawn"),
    ),
    "failed_depth_limit": lambda: envelope.from_error(
        DepthLimitError("subtask depth limit reached (depth 1 of max 1)"),
        task_id=TASK,
        meta=Meta(entry="spawn", depth=1),
    ),
    "bash_done": lambda: envelope.bash_result(
        exit_code=0, stdout="three\n", stderr="", task_id=TASK, meta=Meta(entry="bash")
    ),
    "bash_nonzero": lambda: envelope.bash_result(
        exit_code=2,
        stdout="",
        stderr="ls: cannot access 'x': No such file or directory\n",
        task_id=TASK,
        meta=Meta(entry="bash"),
    ),
    "bash_timeout": lambda: envelope.bash_result(
        exit_code=124,
        stdout="partial\n",
        stderr="",
        timeout_s=5,
        task_id=TASK,
        meta=Meta(entry="bash"),
    ),
    "bash_cannot_start": lambda: envelope.bash_result(
        exit_code=-1,
        stdout="",
        stderr="",
        start_error="/bin/bash: No such file or directory",
        task_id=TASK,
        meta=Meta(entry="bash"),
    ),
    "bash_truncated": lambda: envelope.bash_result(
        exit_code=0,
        stdout="head\n[... 1048576 bytes omitted ...]\ntail\n",
        stderr="",
        stdout_truncated=True,
        task_id=TASK,
        meta=Meta(entry="bash"),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_envelope_matches_golden(name: str) -> None:
    result = CASES[name]().to_dict()
    path = GOLDEN / f"{name}.json"
    if os.environ.get("ACP_BRIDGE_REGEN_GOLDEN"):
        path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    assert path.exists(), f"missing golden file {path}; regenerate with ACP_BRIDGE_REGEN_GOLDEN=1"
    assert result == json.loads(path.read_text())
    # Golden files are also the contract: they must round-trip through the model.
    assert SubtaskResult.model_validate(json.loads(path.read_text())).to_dict() == result


def test_every_golden_file_is_used() -> None:
    files = {p.stem for p in GOLDEN.glob("*.json")}
    assert files == set(CASES), f"unused golden files: {sorted(files - set(CASES))}"


def test_golden_files_keep_the_stable_key_order() -> None:
    stable = [
        "task_id",
        "status",
        "summary",
        "output_kind",
        "output_schema",
        "output",
        "error",
        "meta",
    ]
    for path in GOLDEN.glob("*.json"):
        assert list(json.loads(path.read_text())) == stable, path.name
