"""gemini-cli (npm @google/gemini-cli) against a fake Gemini API on 127.0.0.1.

It reads files itself but writes them through our ``fs/write_text_file`` (for paths inside
the session cwd), asks ``session/request_permission`` with its own option ids
(``proceed_once`` …), runs shell commands locally (no ``terminal/*``), and adds
``_meta.quota`` to the prompt reply. Known bug of 0.61.0: writing a *new* file through the
client always fails, so the write test edits an existing one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_models import REPLY, TOOL_DONE, FakeModels, call_tool
from tests.interop.harness import installed, run

pytestmark = pytest.mark.interop

AGENT = "gemini"


@pytest.fixture
def model() -> Iterator[FakeModels]:
    with FakeModels() as server:
        yield server


def profile(model: FakeModels, home: Path, **extra: Any) -> dict[str, Any]:
    folder = installed(AGENT)
    home.mkdir(exist_ok=True)
    return {
        "command": str(folder / "node_modules" / ".bin" / "gemini"),
        # -m: without it, it first asks a routing model and prints a stack trace when that
        # answer is not what it expects.
        "args": ["--acp", "-m", "gemini-2.5-flash"],
        "env": {
            "GEMINI_API_KEY": "fake-key",
            "GOOGLE_GEMINI_BASE_URL": model.url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
            "HOME": str(home),
        },
        "timeouts": {"startup": 60, "session": 60, "run": 60},
        **extra,
    }


def test_chat_turn(model: FakeModels, tmp_path: Path, workdir: Path) -> None:
    done = run(AGENT, profile(model, tmp_path / "home"), "say hi", workdir)
    result = done.result
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    assert result.output == REPLY
    assert result.meta.stop_reason == "end_turn"
    assert any(":streamGenerateContent" in r.path for r in model.requests)
    # The prompt reply's _meta (quota) is tolerated.
    reply = next(m for m in done.incoming() if "stopReason" in m.get("result", {}))
    assert "_meta" in reply["result"]


def test_edits_an_existing_file_through_the_client(
    model: FakeModels, tmp_path: Path, workdir: Path
) -> None:
    target = workdir / "notes.txt"
    target.write_text("old content\n")
    task = call_tool("write_file", file_path=str(target), content="gemini wrote this\n")
    done = run(AGENT, profile(model, tmp_path / "home"), task, workdir)
    result = done.result
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    assert result.output == TOOL_DONE
    assert target.read_text() == "gemini wrote this\n"
    assert result.meta.files_changed == [str(target)]
    (permission,) = result.meta.permissions or []
    assert (permission.decision, permission.option_id) == ("allowed", "proceed_once")
    assert len(done.requests("fs/write_text_file")) == 1


def test_a_rejected_shell_command_does_not_run(
    model: FakeModels, tmp_path: Path, workdir: Path
) -> None:
    rules = {"permissions": {"rules": [{"kind": "execute", "decision": "reject"}]}}
    task = call_tool("run_shell_command", command="echo ran > ran.txt")
    done = run(AGENT, profile(model, tmp_path / "home", **rules), task, workdir)
    result = done.result
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    assert not (workdir / "ran.txt").exists()
    (permission,) = result.meta.permissions or []
    assert (permission.kind, permission.decision, permission.option_id) == (
        "execute",
        "rejected",
        "cancel",
    )
    assert "1 permission request refused" in result.summary


def test_an_allowed_shell_command_runs_locally_and_leaves_nothing(
    model: FakeModels, tmp_path: Path, workdir: Path
) -> None:
    task = call_tool("run_shell_command", command="echo ran > ran.txt")
    commands = {"rules": [{"kind": "execute", "decision": "allow"}]}
    done = run(AGENT, profile(model, tmp_path / "home", permissions=commands), task, workdir)
    result = done.result
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    # Its shell tool runs in its own process, not through our terminals.
    assert (workdir / "ran.txt").read_text() == "ran\n"
    assert not done.requests("terminal/create")
    assert [p.decision for p in result.meta.permissions or []] == ["allowed"]
