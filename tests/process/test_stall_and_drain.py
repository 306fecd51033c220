"""``timeouts.stall`` (a turn without progress ends ``stalled``; progress resets it) and the
drain of updates sent just after the prompt's reply, through the real agent process."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from acp_bridge.errors import ErrorCode
from tests.spy import Spy

# Seconds each (timeouts waited out, hostile cases): out of the default run, in CI's.
pytestmark = pytest.mark.slow


def chunk(text: str) -> dict[str, Any]:
    return {"say": text}


def terminal_wait(seconds: float) -> list[dict[str, Any]]:
    command = {"command": sys.executable, "args": ["-c", f"import time; time.sleep({seconds})"]}
    return [
        {"request": "terminal/create", "params": command},
        {"request": "terminal/wait_for_exit", "params": {"terminalId": "term_1"}},
    ]


ALLOW_ALL = {"mode": "approve-all"}
STEADY = [step for _ in range(6) for step in (chunk("."), {"sleep": 0.4})]
# (prompt steps, stall seconds, stalled?)
SHAPES: dict[str, tuple[list[dict[str, Any]], float, bool]] = {
    "silent from the start": ([{"sleep": 30}], 1.0, True),
    "silent after a chunk": ([chunk("a"), {"sleep": 30}], 1.0, True),
    "a chunk every 0.4 s for 2.4 s": (STEADY, 1.0, False),
    "a request served for 2.5 s": (terminal_wait(2.5), 1.0, False),
    "silent 2 s, no stall limit": ([{"sleep": 2}], 0.0, False),
    "silent 0.5 s under a 2 s limit": ([{"sleep": 0.5}], 2.0, False),
}  # fmt: skip


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_turn_without_progress_ends_stalled_and_progress_resets_the_clock(
    spy: Spy, shape: str
) -> None:
    steps, stall, stalled = SHAPES[shape]
    config = spy.config(
        {"prompt": steps, "answer": "DONE"},
        timeouts={"run": 20, "stall": stall},
        permissions=ALLOW_ALL,
    )
    result = spy.harness.run("spy", "go", config)
    if stalled:
        assert result.meta.error_code == ErrorCode.STALLED, result.error
        assert f"no progress for {stall:g}s" in result.error
        assert (result.meta.duration_ms or 0) < 10_000  # by the stall, not the run's 20 s
    else:
        assert result.status == "done" and result.output.endswith("DONE"), result.error


def test_updates_right_after_the_prompt_reply_are_part_of_a_checked_answer(spy: Spy) -> None:
    late = (
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%SESSION%",'
        '"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":'
        + json.dumps(json.dumps({"ok": True}))
        + "}}}}"
    )
    usage = (
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%SESSION%",'
        '"update":{"sessionUpdate":"usage_update","used":12,"size":100}}}'
    )
    script = {"answer": "", "after_reply": [late, usage], "after_reply_pause": 0.005}
    config = spy.config(script, repair_turns=1)
    result = spy.harness.run("spy", "go", config, output_schema="x.v1")
    assert (result.status, result.output) == ("done", {"ok": True}), result.error
    assert spy.methods().count("session/prompt") == 1  # checked with it: no repair turn
    assert (result.meta.usage or {}).get("context_used") == 12
