"""The real HTTP path of the model layer, against a scripted OpenAI-compatible server on
127.0.0.1: tool-call round trips, JSON output, repair turns, endpoint failures."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from acp_bridge._entries.local_loop.ask import ask
from acp_bridge._entries.local_loop.spawn import spawn
from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ErrorCode
from tests.fake_models import FakeModels
from tests.helpers import ECHO_SCHEMA, run_bounded


@pytest.fixture(autouse=True)
def model_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", "k3y")


def config_for(tmp_path: Path, base_url: str) -> LoadedConfig:
    (tmp_path / "echo.json").write_text(json.dumps(ECHO_SCHEMA))
    path = tmp_path / "acp-bridge.yaml"
    path.write_text(
        f"""
schemas: {{subagent.demo.echo.v1: ./echo.json}}
models:
  default: fake
  entries:
    fake:
      base_url: {base_url}
      model: test-model
      api_key_env: FAKE_KEY
      max_retries: 0
      request_timeout: 5
      temperature: 0
"""
    )
    return load_config(path, environ={})


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    """An assistant message that calls one tool."""
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def api(server: FakeModels) -> str:
    """The base URL a model entry names: the OpenAI API's root."""
    return f"{server.url}/v1"


def bodies(server: FakeModels) -> list[dict[str, Any]]:
    """The bodies of the requests the server received, in order."""
    return [request.body for request in server.requests]


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def run_spawn(tmp_path: Path, base_url: str, task: str, **kwargs: Any) -> SubtaskResult:
    config = config_for(tmp_path, base_url)
    return run_bounded(spawn, task, ["bash"], config=config, cwd=tmp_path, **kwargs)


def test_tool_call_round_trip(tmp_path: Path) -> None:
    def script(request: dict[str, Any]) -> dict[str, Any]:
        results = tool_results(request)
        if not results:
            return tool_call("bash", {"command": "echo hi"})
        return text("the command said " + json.loads(results[0]["content"])["stdout"].strip())

    with FakeModels(chat_script=script) as server:
        result = run_spawn(tmp_path, api(server), "Run echo hi with bash.")
    assert result.ok and result.output == "the command said hi", result.error
    first, second = bodies(server)
    assert first["model"] == "test-model" and first["temperature"] == 0
    assert server.requests[0].headers["authorization"] == "Bearer k3y"
    (spec,) = first["tools"]
    assert spec["type"] == "function" and spec["function"]["name"] == "bash"
    assert spec["function"]["parameters"]["required"] == ["command"]
    roles = [m["role"] for m in first["messages"]]
    assert roles[0] == "system" and roles[-1] == "user"
    assert "worker agent" in first["messages"][0]["content"]
    (returned,) = tool_results(second)
    assert returned["tool_call_id"] == "call_1"
    assert json.loads(returned["content"])["exit_code"] == 0
    assert result.meta.model == "fake"
    assert result.meta.usage == {
        "requests": 2,
        "tool_calls": 1,
        "input_tokens": 22,
        "output_tokens": 14,
    }
    (record,) = result.meta.tool_calls or []
    assert record.tool_call_id == "call_1" and record.title == "bash: echo hi"


def test_json_output_with_a_registered_schema(tmp_path: Path) -> None:
    def script(request: dict[str, Any]) -> dict[str, Any]:
        return text('```json\n{"ok": true, "value": 42}\n```')

    with FakeModels(chat_script=script) as server:
        result = run_spawn(
            tmp_path, api(server), "Echo the demo value.", output_schema="subagent.demo.echo.v1"
        )
    assert result.ok, result.error
    assert result.output_kind == "json" and result.output == {"ok": True, "value": 42}
    prompt = bodies(server)[0]["messages"][-1]["content"]
    assert "Answer with a single JSON value only (contract: subagent.demo.echo.v1)" in prompt
    assert '"required"' in prompt  # the schema itself is shown to the model


def test_repair_turn_fixes_a_bad_answer(tmp_path: Path) -> None:
    answers = iter([text("Sure! The value is 42."), text('{"ok": true, "value": 42}')])

    with FakeModels(chat_script=lambda request: next(answers)) as server:
        result = run_spawn(
            tmp_path, api(server), "Echo the demo value.", output_schema="subagent.demo.echo.v1"
        )
    assert result.ok and result.output == {"ok": True, "value": 42}
    repair = bodies(server)[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Sure! The value is 42."}
    assert (
        "Your answer cannot be used: output for subagent.demo.echo.v1 is not valid JSON"
        in (repair[-1]["content"])
    )


def test_http_error_is_a_model_error(tmp_path: Path) -> None:
    def script(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 500, {"error": {"message": "upstream exploded", "type": "server_error"}}

    with FakeModels(chat_script=script) as server:
        result = run_spawn(tmp_path, api(server), "anything")
    assert result.status == "failed" and result.meta.error_code == ErrorCode.MODEL_ERROR
    assert "model 'fake'" in result.error and len(server.requests) == 1


def test_unreachable_endpoint_is_a_model_error(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run_spawn(tmp_path, f"http://127.0.0.1:{port}/v1", "anything")
    assert result.meta.error_code == ErrorCode.MODEL_ERROR


def test_ask_host_loop_over_http_runs_bash_in_a_subtask(tmp_path: Path) -> None:
    command = "printf 'one\\ntwo\\nthree\\n' | tail -n 1"

    def script(request: dict[str, Any]) -> dict[str, Any]:
        results = tool_results(request)
        if not results:
            return tool_call("bash", {"command": command, "run_in_subtask": True})
        return text(json.loads(results[0]["content"])["output"]["stdout"].strip())

    with FakeModels(chat_script=script) as server:
        config = config_for(tmp_path, api(server))
        result = run_bounded(ask, "Run it in a subtask.", config=config, cwd=tmp_path)
    assert result.ok and result.output == "three"
    offered = {t["function"]["name"] for t in bodies(server)[0]["tools"]}
    assert offered == {"bash", "read_file", "write_file", "spawn"}
    (subtask,) = result.meta.subtasks or []
    assert subtask["output_schema"] == "subtask.bash.result.v1" and subtask["meta"]["depth"] == 1
