"""The TypeScript SDK's example agent (npm @zed-industries/agent-client-protocol), bundled.

Its scripted turn takes ~5 s: a message, a ``read`` tool call, another message, an ``edit``
tool call with a ``session/request_permission`` for ``/home/user/project/config.json``, and a
last message that depends on the answer. No message ids: tool calls split the messages.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.interop.harness import installed, run

pytestmark = pytest.mark.interop

AGENT = "ts-example"
ALLOWED = "Perfect! I've successfully updated the configuration. The changes have been applied."
SKIPPED = "I understand you prefer not to make that change. I'll skip the configuration update."


def profile(**extra: Any) -> dict[str, Any]:
    folder = installed(AGENT)
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH")
    return {
        "command": node,
        "args": [str(folder / "agent.mjs")],
        "timeouts": {"startup": 30, "session": 30, "run": 60, "cancel_grace": 5},
        **extra,
    }


def test_an_edit_outside_the_workspace_is_refused_and_the_answer_is_the_last_message(
    tmp_path: Path,
) -> None:
    done = run(AGENT, profile(), "hello", tmp_path)
    result = done.result
    assert result.status == "done", result.error
    # Narration before the tool calls is not the answer.
    assert result.output.strip() == SKIPPED
    (permission,) = result.meta.permissions or []
    assert (permission.tool_call_id, permission.kind) == ("call_2", "edit")
    assert (permission.decision, permission.option_id) == ("rejected", "reject")
    assert "outside the write roots" in permission.reason
    assert result.summary.endswith("[1 permission request refused]")
    calls = {c.tool_call_id: c for c in result.meta.tool_calls or []}
    assert calls["call_1"].kind == "read" and calls["call_1"].status == "completed"
    assert calls["call_2"].kind == "edit"


def test_approve_all_lets_the_edit_through(tmp_path: Path) -> None:
    done = run(AGENT, profile(permissions={"mode": "approve-all"}), "hello", tmp_path)
    result = done.result
    assert result.status == "done", result.error
    assert result.output.strip() == ALLOWED
    (permission,) = result.meta.permissions or []
    assert (permission.decision, permission.option_id) == ("allowed", "allow")
    calls = {c.tool_call_id: c for c in result.meta.tool_calls or []}
    assert calls["call_2"].status == "completed"


def test_timeout_mid_turn_cancels_it(tmp_path: Path) -> None:
    done = run(AGENT, profile(), "hello", tmp_path, timeout=1.5)
    result = done.result
    assert result.status == "failed"
    assert result.meta.error_code == "timeout"
    assert result.meta.stop_reason == "cancelled"
    # What it said before the cancel is kept as partial output.
    assert "Let me start by reading" in result.output
