"""chuk-acp's echo agent (PyPI chuk-acp): the smallest real third-party ACP agent.

Quirks it brings: an empty ``agentCapabilities``, no ``authMethods``, log output to a file,
and it answers every method it does not know, notifications included, with an error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.interop.harness import installed, run

pytestmark = pytest.mark.interop

AGENT = "chuk"


def profile() -> dict[str, object]:
    folder = installed(AGENT)
    return {
        "command": str(folder / "bin" / "python"),
        "args": [str(folder / "share" / "chuk-acp" / "examples" / "echo_agent.py")],
        "timeouts": {"startup": 30, "session": 30, "run": 30},
    }


def test_echo_turn(tmp_path: Path) -> None:
    done = run(AGENT, profile(), "hello", tmp_path)
    result = done.result
    assert result.status == "done", result.error
    assert result.output == "Echo: You said 'hello'"
    assert result.meta.stop_reason == "end_turn"
    assert result.meta.session_id and result.meta.session_id.startswith("session_")
    assert result.meta.agent == AGENT
    assert not result.meta.warnings, result.meta.warnings
    assert not result.meta.permissions and not result.meta.terminals
    # It advertises no session/close: the bridge must not send one.
    assert all(m.get("method") != "session/close" for m in done.outgoing())


def test_multiline_prompt_is_delivered_whole(tmp_path: Path) -> None:
    done = run(AGENT, profile(), "first line\nsecond line: ünïcødé ✓", tmp_path)
    assert done.result.status == "done", done.result.error
    assert done.result.output == "Echo: You said 'first line\nsecond line: ünïcødé ✓'"
    assert done.result.summary == "Echo: You said 'first line"
