"""The defects a review and a new user's first hour found (issue 10, class 7), each held by a
test: served reads and timed-out terminals in meta, every event kind deliverable, usage
errors with an envelope, one-line fenced JSON, invalid schema files caught by validate, the
profile schema, non-empty tool enums, the opencode profile asking, no pydantic-ai banner,
and Mistermorph's acp.agents keys."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from acp_bridge._output_schema.structured_output import parse_structured_output
from acp_bridge.cli import main
from acp_bridge.config import load_config, profile_json_schema
from acp_bridge.errors import ErrorCode, ProfileError
from acp_bridge.events import Event
from tests.conftest import AGENTS, AgentHarness


def test_served_reads_thoughts_stderr_and_a_timed_out_terminal_reach_the_caller(
    harness: AgentHarness,
) -> None:
    (harness.workspace / "hello.txt").write_text("hi there\n")
    argv = [str(AGENTS / "unruly_agent.py"), "chores"]
    profile = {
        "command": sys.executable,
        "args": argv,
        "permissions": {"rules": [{"kind": "execute", "command": "sleep", "decision": "allow"}]},
        "terminal": {"timeout": 0.5},
    }
    events: list[Event] = []
    result = harness.run(
        "chores",
        "go",
        harness.config({"chores": profile}),
        on_event=events.append,
        observe_profile="verbose",
    )
    assert result.status == "done", result.error
    report = json.loads(result.output)
    assert report["read"] == "hi there\n"
    # Ended by the bridge: by a signal, or (in a sandbox launcher) a non-zero exit.
    assert report["exit"]["signal"] in ("SIGTERM", "SIGKILL") or report["exit"]["exitCode"]
    assert result.meta.files_read == [str(harness.workspace / "hello.txt")]
    [terminal] = result.meta.terminals or []
    assert terminal.timed_out and terminal.command == "sleep 30"
    kinds = {event.kind for event in events}
    assert {"thought", "stderr", "terminal", "message", "permission"} - kinds == {"permission"}
    assert [e.data["text"] for e in events if e.kind == "thought"] == ["pondering"]
    assert any(e.data["line"] == "a line on stderr" for e in events if e.kind == "stderr")


@pytest.mark.parametrize(
    ("argv", "entry"),
    [
        (["run", "demo"], "acp_spawn"),
        (["run", "demo", "hi", "--timeout", "nan"], "acp_spawn"),
        (["bash", "--timeout", "-1", "--", "true"], "bash"),
        (["spawn", "hi"], "spawn"),
        (["ask", "hi", "--timeout", "inf"], "ask"),
        (["bash", "--max-output-bytes", "1e13", "--", "true"], "bash"),
        (["bash", "--no-such-option", "--", "true"], "bash"),
        (["run", "demo", "hi", "--max-cost", "nan"], "acp_spawn"),
        (["bash", "--max-tokens", "-5", "--", "true"], "bash"),
    ],
)
def test_usage_errors_of_entry_commands_come_with_an_envelope(
    argv: list[str], entry: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    envelope = json.loads(out)
    assert envelope["status"] == "failed" and envelope["meta"]["error_code"] == "config_error"
    assert envelope["meta"]["entry"] == entry
    assert "usage:" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["wait", "--timeout", "nan", "x"],
        ["wait", "--timeout", "1e999", "x"],
        ["prune", "--older-than", "-1"],
        ["prune", "--keep", "1.5"],
    ],
)
def test_numbers_of_run_store_commands_are_checked_as_typed(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "must be" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "answer",
    [
        '```json {"ok": true, "value": 1}```',
        '```{"ok": true, "value": 1}```',
        '```JSON\n{"ok": true, "value": 1}\n```',
    ],
)
def test_a_fenced_json_answer_on_one_line_is_json(answer: str) -> None:
    assert parse_structured_output(answer, "x.v1", None) == {"ok": True, "value": 1}


def write_config_with_schema(tmp_path: Path, schema_text: str) -> Path:
    schema = tmp_path / "bad.schema.json"
    schema.write_text(schema_text)
    config = tmp_path / "acp-bridge.yaml"
    config.write_text(f"schemas:\n  my.label.v1: {schema}\n")
    return config


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"type": "object",', "not valid JSON"),
        ('{"type": "no-such-type"}', "not a valid JSON Schema"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
    ],
    ids=["not JSON", "not a schema", "100000 deep"],
)
def test_profiles_validate_catches_a_broken_schema_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    config = write_config_with_schema(tmp_path, text)
    assert main(["--config", str(config), "profiles", "validate"]) == 2
    assert main(["profiles", "validate", str(config)]) == 2
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all(message in line for line in out), out
    assert all(line.startswith(f"{config}:2:16: schemas.my.label.v1: ") for line in out), out


def test_a_run_with_a_broken_schema_fails_before_the_agent_starts(harness: AgentHarness) -> None:
    config = write_config_with_schema(harness.root, '{"type": 5}')
    text = config.read_text() + "acp:\n  agents:\n    - {name: never, command: /nonexistent}\n"
    config.write_text(text)
    loaded = load_config(config, environ=dict(os.environ), search=False)
    result = harness.run("never", "go", loaded, output_schema="my.label.v1")
    assert result.meta.error_code == ErrorCode.CONFIG_ERROR  # not spawn_failed: never spawned
    assert "not a valid JSON Schema" in result.error


def test_the_profile_schema_does_not_require_a_name(tmp_path: Path) -> None:
    schema = profile_json_schema()
    assert "name" not in schema.get("required", [])
    jsonschema.validate({"command": "agent", "args": ["--acp"]}, schema)


def test_tool_specs_never_offer_an_empty_enum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "acp-bridge.yaml"
    config.write_text("tools: {acp_spawn: {enabled: true}}\n")
    assert main(["--config", str(config), "tools", "--tools", "acp_spawn,spawn"]) == 0
    specs = {
        s["function"]["name"]: s["function"]["parameters"]
        for s in json.loads(capsys.readouterr().out)
    }
    inner = specs["spawn"]["properties"]["tools"]["items"]["enum"]
    assert inner == ["bash", "read_file", "write_file"]  # from the full set: spawn can use them
    assert "demo" in specs["acp_spawn"]["properties"]["agent"]["enum"]

    def enums(node: Any) -> list[list[Any]]:
        if isinstance(node, dict):
            return ([node["enum"]] if "enum" in node else []) + [
                e for v in node.values() for e in enums(v)
            ]
        return [e for v in node for e in enums(v)] if isinstance(node, list) else []

    assert all(enums(specs)), "an empty enum"


def test_the_builtin_opencode_profile_makes_opencode_ask() -> None:
    profile = load_config(None, search=False, environ={}).profiles.get("opencode").profile
    # opencode 2.x reads its permission block from the config it is given (it dropped
    # OPENCODE_PERMISSION, and without the block edits and commands ran unasked).
    permission = json.loads(profile.env["OPENCODE_CONFIG_CONTENT"])["permission"]
    assert {permission[k] for k in ("edit", "bash", "webfetch")} == {"ask"}


def test_mistermorph_agent_keys_are_accepted_and_mapped(harness: AgentHarness) -> None:
    demo = {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]}
    agents = {
        "morph": {**demo, "type": "stdio", "enable": True, "session_options": {"x": "y"}},
        "off": {**demo, "enable": False},
    }
    loaded = harness.config(agents)
    morph = loaded.profiles.get("morph").profile
    assert morph.session.config_options == {"x": "y"}
    assert "off" not in loaded.profiles.usable()
    result = harness.run("off", "hi", loaded)
    assert result.meta.error_code == ErrorCode.CONFIG_ERROR
    assert "is disabled (enable: false" in result.error
    with pytest.raises(ProfileError, match="type: must be one of 'stdio'"):
        harness.config({"ws": {**demo, "type": "websocket"}}).profiles.get("ws")


def test_no_pydantic_ai_banner_on_a_terminal(tmp_path: Path) -> None:
    # The banner shows on a terminal's stderr unless CI or a test run is detected: neither here.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_VERSION", "CI")}
    env["HOME"] = str(tmp_path)
    main_fd, tty = pty.openpty()
    run = subprocess.run(
        [sys.executable, "-m", "acp_bridge", "spawn", "hi", "--tools", "bash", "-q"],
        stdout=subprocess.PIPE,
        stderr=tty,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    os.close(tty)
    seen = b""
    try:
        while chunk := os.read(main_fd, 65536):
            seen += chunk
    except OSError:  # the terminal's other end is closed: all read
        pass
    os.close(main_fd)
    assert run.returncode == 0 and json.loads(run.stdout)["output"] == "hi"
    assert seen == b"", seen.decode(errors="replace")
