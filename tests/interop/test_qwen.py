"""qwen-code (npm @qwen-code/qwen-code 0.15.x) against a fake OpenAI API on 127.0.0.1.

It reads and writes through our ``fs/*`` methods, asks permission for writes and shell
commands, runs the shell locally, and after each model call sends an *empty*
``agent_message_chunk`` that carries ``_meta.usage`` (which must not become the answer).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_models import REPLY, TOOL_DONE, FakeModels, call_tool
from tests.interop.harness import installed, run

pytestmark = pytest.mark.interop

AGENT = "qwen"


@pytest.fixture
def model() -> Iterator[FakeModels]:
    with FakeModels() as server:
        yield server


def profile(model: FakeModels, home: Path, **extra: Any) -> dict[str, Any]:
    folder = installed(AGENT)
    home.mkdir(exist_ok=True)
    return {
        "command": str(folder / "node_modules" / ".bin" / "qwen"),
        "args": ["--acp", "--auth-type", "openai"],
        "env": {
            "OPENAI_API_KEY": "fake-key",
            "OPENAI_BASE_URL": f"{model.url}/v1",
            "OPENAI_MODEL": "fake-model",
            "QWEN_CODE_NO_RELAUNCH": "true",
            "HOME": str(home),
        },
        "timeouts": {"startup": 60, "session": 60, "run": 60},
        # Its HOME is a test folder under /tmp, which the sandbox replaces by a private one:
        # declared as its state, as the built-in profile declares ~/.qwen.
        "sandbox": {"state": [str(home)]},
        **extra,
    }


def test_chat_turn_ignores_the_empty_usage_chunk(
    model: FakeModels, tmp_path: Path, workdir: Path
) -> None:
    done = run(AGENT, profile(model, tmp_path / "home"), "say hi", workdir)
    result = done.result
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    assert result.output == REPLY
    assert result.meta.stop_reason == "end_turn"
    assert any(r.path.endswith("/chat/completions") for r in model.requests)
    chunks = [
        m["params"]["update"]
        for m in done.incoming()
        if m.get("method") == "session/update"
        and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    ]
    assert chunks[-1]["content"]["text"] == "" and "usage" in chunks[-1]["_meta"]


def test_reads_a_file_through_the_client(model: FakeModels, tmp_path: Path, workdir: Path) -> None:
    sample = workdir / "sample.txt"
    sample.write_text("qwen sample\n")
    done = run(
        AGENT,
        profile(model, tmp_path / "home"),
        call_tool("read_file", file_path=str(sample)),
        workdir,
    )
    result = done.result
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    assert result.output == TOOL_DONE
    (read,) = done.requests("fs/read_text_file")
    assert read["params"]["path"] == str(sample)
    assert read["params"]["limit"] == 1000
    reply = next(m for m in done.outgoing() if m.get("id") == read["id"] and "result" in m)
    assert reply["result"] == {"content": "qwen sample\n"}


def test_writes_a_new_file_through_the_client_after_a_permission(
    model: FakeModels, tmp_path: Path, workdir: Path
) -> None:
    target = workdir / "new.txt"
    task = call_tool("write_file", file_path=str(target), content="qwen wrote this")
    done = run(AGENT, profile(model, tmp_path / "home"), task, workdir)
    result = done.result
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    assert target.read_text() == "qwen wrote this"
    assert result.meta.files_changed == [str(target)]
    (permission,) = result.meta.permissions or []
    assert (permission.kind, permission.decision, permission.option_id) == (
        "edit",
        "allowed",
        "proceed_once",
    )
    (write,) = done.requests("fs/write_text_file")
    assert write["params"]["_meta"] == {"bom": False}  # an extension field, tolerated
