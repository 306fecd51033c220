"""The command line of sessions, logout and run's per-call session flags, against the spy
agent; and the terminal prompts on a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from typing import Any

from tests.spy import Spy

CAPS = {"sessionCapabilities": {"list": {}, "delete": {}}, "auth": {"logout": {}}}
SESSIONS = [
    {"sessionId": "s-1", "cwd": "/a", "title": "First", "updatedAt": "2026-11-01T10:00:00Z"},
    {"sessionId": "s-22", "cwd": "/b"},
]


def cli(spy: Spy, *args: str, stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    config = str(spy.harness.root / "acp-bridge.yaml")
    return subprocess.run(
        [sys.executable, "-m", "acp_bridge", "--config", config, *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        cwd=spy.harness.workspace,
    )


def test_sessions_lists_ids_and_titles(spy: Spy) -> None:
    spy.config({"initialize": {"agentCapabilities": CAPS}, "sessions": SESSIONS})
    done = cli(spy, "sessions", "spy", "--all")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "s-1   2026-11-01T10:00:00Z  First  /a",
        "s-22  -                     (untitled)  /b",
    ]
    listed = cli(spy, "sessions", "spy", "--all", "--json")
    rows: list[dict[str, Any]] = json.loads(listed.stdout)
    assert [r["session_id"] for r in rows] == ["s-1", "s-22"]
    here = cli(spy, "sessions", "spy")
    assert here.returncode == 0 and here.stdout == "" and "no sessions here" in here.stderr


def test_sessions_delete_and_logout(spy: Spy) -> None:
    spy.config({"initialize": {"agentCapabilities": CAPS}})
    assert cli(spy, "sessions", "spy", "--delete", "s-1").returncode == 0
    assert cli(spy, "logout", "spy").returncode == 0
    assert [m for m in spy.methods() if m != "initialize"] == ["session/delete", "logout"]


def test_not_offered_is_a_usage_error(spy: Spy) -> None:
    spy.config()
    for args in (["sessions", "spy"], ["logout", "spy"]):
        done = cli(spy, *args)
        assert done.returncode == 2
        assert "error: the agent does not offer" in done.stderr
    assert set(spy.methods()) == {"initialize"}


def test_run_flags_reach_the_session(spy: Spy) -> None:
    options = [{"id": "fast", "name": "Fast", "type": "boolean", "currentValue": False}]
    models = {"currentModelId": "a", "availableModels": [{"modelId": "a"}, {"modelId": "b"}]}
    caps = {"sessionCapabilities": {"resume": {}}}
    spy.config(
        {
            "initialize": {"agentCapabilities": caps},
            "setup": {"configOptions": options, "models": models},
            "answer": "OK",
        }
    )
    args = ["run", "spy", "hi", "--resume", "s-9", "--model", "b", "--set", "fast=yes", "-q"]
    done = cli(spy, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["meta"]["model"] == "b" and envelope["meta"]["config_options"] == {"fast": True}
    assert spy.methods() == [
        "initialize",
        "session/resume",
        "session/set_model",
        "session/set_config_option",
        "session/prompt",
    ]
    bad = cli(spy, "run", "spy", "hi", "--model", "z", "-q")
    assert bad.returncode == 2
    error = json.loads(bad.stdout)["error"]  # this session/new offers no model choice
    assert error == "--model: model 'z': the agent offers no model choice"
    assert cli(spy, "run", "spy", "hi", "--fork", "-q").returncode == 2


def _read_until(fd: int, needle: bytes, seen: bytearray, limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while needle not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no {needle!r} in {bytes(seen)!r}"
        seen += os.read(fd, 4096)


def test_terminal_prompts_offer_the_agents_options(spy: Spy) -> None:
    permission = {
        "toolCall": {"toolCallId": "t1", "title": "Edit notes.md", "kind": "edit"},
        "options": [
            {"optionId": "once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "always", "name": "Allow always", "kind": "allow_always"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        ],
    }
    form = {
        "type": "object",
        "properties": {
            "color": {"type": "string", "enum": ["red", "blue"]},
            "n": {"type": "integer"},
        },
        "required": ["color"],
    }
    spy.config(
        {
            "prompt": [
                {"request": "session/request_permission", "params": permission},
                {
                    "request": "elicitation/create",
                    "params": {"mode": "form", "message": "Pick one", "requestedSchema": form},
                },
            ]
        },
        permissions={"rules": [{"kind": "edit", "decision": "ask"}]},
    )
    controller, terminal = pty.openpty()
    config = str(spy.harness.root / "acp-bridge.yaml")
    process = subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "--config", config, "run", "spy", "go", "-q"],
        stdin=terminal,
        stderr=terminal,
        stdout=subprocess.PIPE,
        cwd=spy.harness.workspace,
    )
    os.close(terminal)
    seen = bytearray()
    try:
        _read_until(controller, b"[default: n in 60s]: ", seen)
        assert b"2) Allow always (allow_always)" in seen
        os.write(controller, b"2\n")
        _read_until(controller, b"answer? y/n", seen)
        os.write(controller, b"y\n")
        _read_until(controller, b"color* one of red | blue: ", seen)
        os.write(controller, b"green\n")  # not offered: asked once more
        _read_until(controller, b"not a valid string", seen)
        os.write(controller, b"blue\n")
        _read_until(controller, b"n (integer): ", seen)
        os.write(controller, b"7\n")
        out, _ = process.communicate(timeout=30)
    finally:
        process.kill()
        os.close(controller)
    envelope = json.loads(out)
    assert envelope["status"] == "done", envelope
    assert spy.reply_to("spy-0")["result"]["outcome"]["optionId"] == "always"
    assert spy.reply_to("spy-1")["result"] == {
        "action": "accept",
        "content": {"color": "blue", "n": 7},
    }
    (record,) = envelope["meta"]["permissions"]
    assert record["decision"] == "allowed" and "host picked Allow always" in record["reason"]


PERMISSION = {
    "toolCall": {"toolCallId": "t1", "title": "Edit notes.md", "kind": "edit"},
    "options": [
        {"optionId": "once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "no", "name": "Reject", "kind": "reject_once"},
    ],
}
ASK = {"rules": [{"kind": "edit", "decision": "ask"}]}


def test_yes_and_no_answer_every_ask_without_prompting(spy: Spy) -> None:
    spy.config(
        {"prompt": [{"request": "session/request_permission", "params": PERMISSION}]},
        permissions=ASK,
    )
    for flag, option in (("--yes", "once"), ("--no", "no")):
        spy.record.unlink(missing_ok=True)
        done = cli(spy, "run", "spy", "go", flag, "-q")
        assert done.returncode == 0, done.stdout
        assert spy.reply_to("spy-0")["result"]["outcome"]["optionId"] == option
        assert "elicitation" not in spy.request("initialize")["params"]["clientCapabilities"]


def test_an_unanswered_prompt_takes_the_safe_default(spy: Spy) -> None:
    spy.config(
        {"prompt": [{"request": "session/request_permission", "params": PERMISSION}]},
        permissions=ASK,
    )
    controller, terminal = pty.openpty()
    config = str(spy.harness.root / "acp-bridge.yaml")
    args = ["run", "spy", "go", "-q", "--ask-timeout", "0.2"]
    process = subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "--config", config, *args],
        stdin=terminal,
        stderr=terminal,
        stdout=subprocess.PIPE,
        cwd=spy.harness.workspace,
    )
    os.close(terminal)
    seen = bytearray()
    try:
        _read_until(controller, b"(no answer within 0.2s)", seen)
        out, _ = process.communicate(timeout=30)
    finally:
        process.kill()
        os.close(controller)
    assert b"[default: n in 0.2s]" in seen
    envelope = json.loads(out)
    assert spy.reply_to("spy-0")["result"]["outcome"]["optionId"] == "no"
    (record,) = envelope["meta"]["permissions"]
    assert record["decision"] == "rejected" and record["reason"].endswith("host rejected")
