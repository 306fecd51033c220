"""The parent tool registry: built-ins, switches, host tools, specs, calls, confinement."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import jsonschema
import pytest
from pydantic import BaseModel, Field

from acp_bridge._entries.depth import subtask_level
from acp_bridge._entries.local_loop.builtin_tools import ToolRegistry
from acp_bridge._loop.toolset import json_parameters
from acp_bridge._os.limits import MAX_SECONDS
from acp_bridge.config import load_config
from acp_bridge.errors import ConfigError, ErrorCode
from tests.helpers import default_config, run_bounded


def config_with(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "acp-bridge.yaml"
    path.write_text(text)
    return load_config(path, environ={})


class Weather(BaseModel):
    city: str = Field(description="a city name")
    days: int = Field(1, ge=1)


def test_builtins_follow_the_switches(tmp_path: Path) -> None:
    assert ToolRegistry(default_config(), cwd=tmp_path).names() == [
        "bash",
        "read_file",
        "write_file",
        "spawn",
    ]
    both = config_with(tmp_path, "tools: {spawn: {enabled: false}, acp_spawn: {enabled: true}}\n")
    assert ToolRegistry(both, cwd=tmp_path).names() == [
        "bash",
        "read_file",
        "write_file",
        "acp_spawn",
    ]


def test_specs_in_openai_and_anthropic_shapes(tmp_path: Path) -> None:
    registry = ToolRegistry(default_config(), cwd=tmp_path)
    openai = {s["function"]["name"]: s for s in registry.specs("openai")}
    anthropic = {s["name"]: s for s in registry.specs("anthropic")}
    assert set(openai) == set(anthropic) == set(registry.names())
    for name, spec in openai.items():
        assert spec["type"] == "function"
        params = spec["function"]["parameters"]
        assert params == anthropic[name]["input_schema"]
        assert params["type"] == "object" and "title" not in params
        jsonschema.Draft202012Validator.check_schema(params)
    bash = openai["bash"]["function"]["parameters"]
    assert bash["required"] == ["command"]
    timeout = bash["properties"]["timeout"]  # the options model's, the null branch dropped
    assert timeout == {
        "type": "number",
        "exclusiveMinimum": 0,
        "maximum": MAX_SECONDS,
        "description": timeout["description"],
    }
    assert timeout["description"].startswith("seconds the run may take")
    spawn = openai["spawn"]["function"]["parameters"]["properties"]["tools"]
    assert spawn["items"]["enum"] == ["bash", "read_file", "write_file"]


def test_acp_spawn_agent_lists_the_allowed_profiles(tmp_path: Path) -> None:
    loaded = config_with(
        tmp_path,
        """
tools: {acp_spawn: {enabled: true}}
acp:
  agents:
    - {name: demo, description: A demo agent, command: {python}}
    - {name: missing, description: not installed here, command: no-such-agent-acp}
    - {name: broken, command: x, timeouts: {run: -1}}
""".replace("{python}", sys.executable),
    )
    (spec,) = ToolRegistry(loaded, cwd=tmp_path).select(["acp_spawn"]).registry.specs()
    agent = spec["function"]["parameters"]["properties"]["agent"]
    # Only agents that would start here, as the MCP face offers them.
    assert "demo" in agent["enum"] and "broken" not in agent["enum"]
    assert "missing" not in agent["enum"]
    assert "demo: A demo agent" in agent["description"]


def test_host_tools_sync_and_async(tmp_path: Path) -> None:
    registry = ToolRegistry(default_config(), cwd=tmp_path, builtins=False)

    def weather(args: Weather) -> dict[str, object]:
        """Forecast for a city."""
        return {"city": args.city, "days": args.days, "sky": "clear"}

    async def shout(args: Weather) -> str:
        return args.city.upper()

    registry.register(weather)
    registry.register(shout, Weather, description="Shout a city name.")
    assert registry.names() == ["weather", "shout"]
    (spec,) = registry.select(["weather"]).registry.specs("anthropic")
    assert spec["description"] == "Forecast for a city."
    assert spec["input_schema"]["required"] == ["city"]
    text = run_bounded(registry.call, "weather", {"city": "Oslo"})
    assert json.loads(text) == {"city": "Oslo", "days": 1, "sky": "clear"}
    assert run_bounded(registry.call, "shout", '{"city": "Oslo"}') == "OSLO"


def test_registration_mistakes_are_config_errors(tmp_path: Path) -> None:
    registry = ToolRegistry(default_config(), cwd=tmp_path)

    def bash(args: Weather) -> str:
        """Shadow a built-in."""
        return ""

    def untyped(args):  # type: ignore[no-untyped-def]
        """No model."""

    with pytest.raises(ConfigError, match="already registered"):
        registry.register(bash)
    with pytest.raises(ConfigError, match="annotate its one parameter"):
        registry.register(untyped)
    with pytest.raises(ConfigError, match="needs a description"):
        registry.register(lambda args: "", Weather, name="nodoc")
    with pytest.raises(ConfigError, match="1-64 letters"):
        registry.register(bash, name="has space")


def test_call_reports_problems_as_text(tmp_path: Path) -> None:
    registry = ToolRegistry(default_config(), cwd=tmp_path)

    def boom(args: Weather) -> str:
        """Always fails."""
        raise RuntimeError("kaput")

    registry.register(boom)
    assert run_bounded(registry.call, "nope", {}).startswith("error: unknown tool 'nope'")
    bad = run_bounded(registry.call, "bash", {"command": 1, "extra": True})
    assert bad.startswith("error: invalid arguments for bash:") and "extra" in bad
    assert run_bounded(registry.call, "boom", {"city": "x"}) == (
        "error: boom failed: RuntimeError: kaput"
    )


def test_select_for_a_subtask_never_keeps_nesting_tools(tmp_path: Path) -> None:
    loaded = config_with(tmp_path, "tools: {acp_spawn: {enabled: true}}\n")
    registry = ToolRegistry(loaded, cwd=tmp_path)
    selection = registry.select(["bash", "spawn", "acp_spawn", "nope", "bash"], nesting=False)
    assert selection.registry.names() == ["bash"]
    assert selection.unknown == ["nope"] and selection.refused == ["spawn", "acp_spawn"]
    assert registry.select(["spawn", "bash"]).registry.names() == ["bash", "spawn"]


def test_bash_tool_plain_and_in_subtask(tmp_path: Path) -> None:
    registry = ToolRegistry(default_config(), cwd=tmp_path)
    plain = json.loads(run_bounded(registry.call, "bash", {"command": "pwd"}))
    assert plain["exit_code"] == 0 and plain["stdout"] == f"{tmp_path.resolve()}\n"
    late = json.loads(run_bounded(registry.call, "bash", {"command": "sleep 5", "timeout": 0.2}))
    assert late["exit_code"] == 124 and late["error"] == "timed out after 0.2s"
    sub = json.loads(
        run_bounded(registry.call, "bash", {"command": "echo hi", "run_in_subtask": True})
    )
    assert sub["status"] == "done" and sub["output"]["stdout"] == "hi\n"
    assert sub["output_schema"] == "subtask.bash.result.v1" and sub["meta"]["depth"] == 1
    outside = run_bounded(registry.call, "bash", {"command": "true", "cwd": ".."})
    assert outside.startswith("error:") and "outside the workspace" in outside


def test_file_tools_stay_inside_the_workspace(tmp_path: Path) -> None:
    registry = ToolRegistry(default_config(), cwd=tmp_path)
    wrote = run_bounded(registry.call, "write_file", {"path": "a/b.txt", "content": "1\n2\n3\n"})
    assert wrote == "wrote 6 bytes to a/b.txt"
    assert run_bounded(registry.call, "read_file", {"path": "a/b.txt"}) == "1\n2\n3\n"
    window = run_bounded(registry.call, "read_file", {"path": "a/b.txt", "offset": 2, "limit": 1})
    assert window == "2\n[... cut at line 3: read more with offset=3]\n"
    escape = run_bounded(registry.call, "read_file", {"path": "../../etc/passwd"})
    assert escape.startswith("error:") and "outside the read roots" in escape
    (tmp_path / "link").symlink_to("/etc/hostname")
    assert "outside the read roots" in run_bounded(registry.call, "read_file", {"path": "link"})
    missing = run_bounded(registry.call, "read_file", {"path": "none.txt"})
    assert missing.startswith("error: no such file")


def test_file_tools_get_the_services_confinement(tmp_path: Path) -> None:
    """The local loop's file tools are served like an ACP agent's requests."""
    work, outside = tmp_path / "work", tmp_path / "outside.txt"
    work.mkdir()
    outside.write_text("keep me\n")
    registry = ToolRegistry(default_config(), cwd=work)
    os.mkfifo(work / "pipe")
    assert "a FIFO" in run_bounded(registry.call, "read_file", {"path": "pipe"})  # no hang
    (work / "out").symlink_to(outside)
    refused = run_bounded(registry.call, "write_file", {"path": "out", "content": "x"})
    assert refused.startswith("error:") and outside.read_text() == "keep me\n"
    (work / "big.txt").write_text("".join(f"{n}\n" for n in range(1, 2101)))
    window = run_bounded(registry.call, "read_file", {"path": "big.txt"})
    assert window.endswith("2000\n[... cut at line 2001: read more with offset=2001]\n")


def test_acp_spawn_tool_checks_depth_first_and_says_when_it_is_absent(tmp_path: Path) -> None:
    loaded = config_with(tmp_path, "tools: {acp_spawn: {enabled: true}}\n")
    registry = ToolRegistry(loaded, cwd=tmp_path)
    args = {"agent": "demo", "task": "hi"}

    async def inside_a_subtask() -> str:
        with subtask_level(1):
            return await registry.call("acp_spawn", args)

    refused = json.loads(run_bounded(inside_a_subtask))
    assert refused["meta"]["error_code"] == ErrorCode.DEPTH_LIMIT
    assert refused["meta"]["entry"] == "acp_spawn" and refused["meta"]["agent"] == "demo"
    try:
        import acp_bridge._entries.acp_spawn.entry  # noqa: F401
    except ModuleNotFoundError:
        absent = json.loads(run_bounded(registry.call, "acp_spawn", args))
        assert absent["status"] == "failed" and "not available" in absent["error"]


def test_json_parameters_make_optional_fields_plain() -> None:
    class Args(BaseModel):
        name: str | None = None
        tags: list[str] | None = Field(None, description="labels")

    params = json_parameters(Args)
    assert params["properties"] == {
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}, "description": "labels"},
    }
