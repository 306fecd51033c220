"""Third-party agents' modes, model lists and sessions, set from the command line as a user
would: ``acp-bridge run AGENT TASK --mode M --model X``, ``acp-bridge sessions AGENT``,
``--resume SESSION_ID``.

- gemini-cli offers modes and the older ``models`` list (``session/set_model``); the fake
  Gemini API sees which model each request is for;
- qwen-code offers config options of category ``mode`` and ``model``;
- fast-agent offers ``session/list`` and ``session/resume``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_models import REPLY, FakeModels
from tests.interop import test_fast_agent, test_gemini, test_qwen
from tests.interop.harness import MARKER_NAME, assert_no_leftovers

pytestmark = pytest.mark.interop


def cli(agent: str, profile: dict[str, Any], workdir: Path, *args: str) -> dict[str, Any]:
    """``acp-bridge ARGS`` with a config holding one profile; stdout, stderr, exit code, the
    envelope and transcript (for ``run``); asserts no process of it is left."""
    marker = uuid.uuid4().hex
    state = workdir.parent / f"{workdir.name}-state"
    state.mkdir(exist_ok=True)
    config = state / "acp-bridge.yaml"
    profile = {"name": agent, **profile, "env": {**profile.get("env", {}), MARKER_NAME: marker}}
    config.write_text(
        json.dumps({"transcripts": {"dir": str(state / "t")}, "acp": {"agents": [profile]}})
    )
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=workdir,
        stdin=subprocess.DEVNULL,
    )
    assert_no_leftovers(marker)
    found: dict[str, Any] = {"code": done.returncode, "out": done.stdout, "err": done.stderr}
    if args[0] == "run" and done.stdout.strip():
        envelope = json.loads(done.stdout)
        found["envelope"] = envelope
        transcript = envelope["meta"].get("transcript")
        lines = Path(transcript).read_text().splitlines() if transcript else []
        found["sent"] = [
            m["msg"] for m in map(json.loads, lines) if m["dir"] == "out" and "msg" in m
        ]
    return found


def _params(found: dict[str, Any], method: str) -> list[dict[str, Any]]:
    return [m["params"] for m in found["sent"] if m.get("method") == method]


@pytest.fixture
def gemini_api() -> Iterator[FakeModels]:
    with FakeModels() as server:
        yield server


def test_gemini_mode_and_model_from_the_cli(
    gemini_api: FakeModels, tmp_path: Path, workdir: Path
) -> None:
    profile = test_gemini.profile(gemini_api, tmp_path / "home")
    found = cli(
        "gemini", profile, workdir, "run", "gemini", "say hi", "--mode", "plan",
        "--model", "gemini-2.5-pro", "-q",
    )  # fmt: skip
    envelope = found["envelope"]
    assert found["code"] == 0, (envelope["error"], envelope["meta"].get("stderr_tail"))
    assert envelope["output"] == REPLY
    (mode,) = _params(found, "session/set_mode")
    (model,) = _params(found, "session/set_model")
    assert (mode["modeId"], model["modelId"]) == ("plan", "gemini-2.5-pro")
    assert envelope["meta"]["model"] == "gemini-2.5-pro"
    assert envelope["meta"]["mode"] == "plan"
    asked = [r.path for r in gemini_api.requests if ":streamGenerateContent" in r.path]
    assert asked and all("/models/gemini-2.5-pro:" in path for path in asked), asked


def test_gemini_unknown_model_lists_its_models(
    gemini_api: FakeModels, tmp_path: Path, workdir: Path
) -> None:
    profile = test_gemini.profile(gemini_api, tmp_path / "home")
    found = cli("gemini", profile, workdir, "run", "gemini", "say hi", "--model", "gpt-9", "-q")
    assert found["code"] == 2
    error = found["envelope"]["error"]
    assert error.startswith("--model: model 'gpt-9' is not offered (offered: ")
    assert "gemini-2.5-pro" in error
    assert not _params(found, "session/prompt")


@pytest.fixture
def openai_api() -> Iterator[FakeModels]:
    with FakeModels() as server:
        yield server


def test_qwen_mode_through_its_config_option(
    openai_api: FakeModels, tmp_path: Path, workdir: Path
) -> None:
    profile = test_qwen.profile(openai_api, tmp_path / "home")
    found = cli("qwen", profile, workdir, "run", "qwen", "say hi", "--mode", "plan", "-q")
    envelope = found["envelope"]
    assert found["code"] == 0, (envelope["error"], envelope["meta"].get("stderr_tail"))
    (option,) = _params(found, "session/set_config_option")
    assert (option["configId"], option["value"]) == ("mode", "plan")
    assert envelope["meta"]["mode"] == "plan"
    unknown = cli("qwen", profile, workdir, "run", "qwen", "hi", "--model", "nope", "-q")
    assert unknown["code"] == 2 and "coder-model(qwen-oauth)" in unknown["envelope"]["error"]


def test_fast_agent_sessions_list_and_resume(tmp_path: Path, workdir: Path) -> None:
    profile = test_fast_agent.profile(tmp_path / "home")
    first = cli("fast-agent", profile, workdir, "run", "fast-agent", "remember 42", "-q")
    assert first["code"] == 0, first["envelope"]["error"]
    session_id = first["envelope"]["meta"]["session_id"]

    listed = cli("fast-agent", profile, workdir, "sessions", "fast-agent", "--json")
    assert listed["code"] == 0, listed["err"]
    assert session_id in [s["session_id"] for s in json.loads(listed["out"])]

    again = cli(
        "fast-agent", profile, workdir, "run", "fast-agent", "again", "--resume", session_id, "-q"
    )
    envelope = again["envelope"]
    assert again["code"] == 0, envelope["error"]
    assert envelope["output"] == "again"
    assert envelope["meta"]["session_id"] == session_id
    assert envelope["meta"]["session_method"] == "session/resume"
    assert not _params(again, "session/new")
