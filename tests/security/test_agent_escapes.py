"""Escape attempts end to end: a real agent process (tests/agents/probe_agent.py, on the
official SDK's agent side) asks the bridge for files and terminals through ``acp_spawn``.

Each run is bounded by a timeout, and afterwards no process of the run may be left: the
profile gives the agent a unique marker variable, which its terminals and everything they
start inherit, and ``/proc/*/environ`` is scanned for it.
"""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_bridge._entries.acp_spawn.entry import acp_spawn
from acp_bridge._os.process.marked_processes import marked_processes
from acp_bridge.config import load_config
from acp_bridge.envelope import SubtaskResult

from .conftest import SECRET, World

pytestmark = pytest.mark.anyio

AGENT = Path(__file__).parent.parent / "agents" / "probe_agent.py"
MARKER = "ACP_TEST_RUN_MARKER"


async def run_probe(
    world: World, steps: list[dict[str, Any]], profile: str = "", hook: Any = None
) -> tuple[SubtaskResult, list[dict[str, Any]]]:
    """One acp_spawn run of the probe agent; returns the envelope and the step results."""
    marker = secrets.token_hex(8)
    config = world.base / "acp-bridge.yaml"
    config.write_text(
        f"""
transcripts: {{enabled: false}}
acp:
  agents:
    - name: probe
      command: {sys.executable}
      args: [{AGENT}]
      cwd: {world.ws}
      read_roots: [{world.ref}]
      write_roots: [{world.ws}]
      env: {{{MARKER}: "{marker}"}}
      timeouts: {{startup: 30, run: 30, shutdown_grace: 2}}
{profile}"""
    )
    loaded = load_config(config, environ={"PATH": "/usr/bin:/bin"})
    try:
        with anyio.fail_after(60):
            result = await acp_spawn(
                "probe", json.dumps(steps), config=loaded, permission_hook=hook
            )
    finally:
        config.unlink()
    assert marked_processes(MARKER, marker) == [], "a process of the run was left behind"
    assert result.status == "done", result.to_json()
    return result, json.loads(result.output)


async def test_file_escapes_through_a_real_agent(world: World) -> None:
    ws, out = world.ws, world.outside
    steps = [
        {"op": "read", "path": f"{ws}/notes.txt", "line": 2, "limit": 1},
        {"op": "write", "path": f"{ws}/new/made.txt", "content": "by the agent\n"},
        {"op": "read", "path": f"{ws}/../outside/secret.txt"},
        {"op": "read", "path": f"{ws}/link_out"},
        {"op": "read", "path": f"/proc/self/root{out}/secret.txt"},
        {"op": "read", "path": f"{ws}/fifo"},
        {"op": "write", "path": f"{ws}/dir_out/new.txt", "content": "x"},
        {"op": "write", "path": f"{ws}/hard", "content": "x"},
        {"op": "write", "path": f"{ws}/abs_out", "content": "x"},
        {"op": "write", "path": f"{world.ref}/reference.txt", "content": "x"},
        {"op": "read", "path": f"{ws}/missing.txt"},
    ]
    result, replies = await run_probe(world, steps)
    assert replies[0] == {"ok": True, "result": "line 2\n"}
    assert replies[1]["ok"] and (ws / "new" / "made.txt").read_text() == "by the agent\n"
    refusals = replies[2:10]
    assert all(not r["ok"] and r["code"] == -32602 for r in refusals), refusals
    assert all(SECRET.strip() not in json.dumps(r) for r in replies)
    assert replies[10]["code"] == -32002 and "Resource not found" in replies[10]["message"]
    assert result.meta.files_changed == [f"{ws}/new/made.txt"]
    # Every call that did not succeed is recorded: the 8 refused, and the missing file failed.
    assert result.meta.refusals is not None and len(result.meta.refusals) == 9, result.summary
    assert result.meta.refusals[-1].target.endswith("missing.txt"), result.meta.refusals[-1]
    assert "[8 file/terminal requests refused] [1 file/terminal request failed]" in result.summary


async def test_terminal_escapes_through_a_real_agent(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACP_TEST_HOST_SECRET", "hunter2")
    ws = world.ws
    pidfile = ws / "daemon.pid"
    steps = [
        {"op": "capabilities"},
        {"op": "terminal", "command": "echo [$ACP_TEST_HOST_SECRET] $ACP_BRIDGE_DEPTH"},
        {"op": "terminal", "command": "pwd", "cwd": str(world.outside)},
        {"op": "terminal", "command": "pwd", "cwd": f"{ws}/dir_out"},
        {"op": "terminal", "command": "printf 'é%.0s' $(seq 1000)", "outputByteLimit": 101},
        # Left running, never released: the session's end must take them down.
        {"op": "spawn", "command": "sleep 300"},
        {
            "op": "terminal",
            "command": f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' >/dev/null 2>&1 &"
            f"\nwhile [ ! -s {pidfile} ]; do sleep 0.01; done",
            "release": False,
        },
    ]
    commands = "      permissions: {rules: [{kind: execute, decision: allow}]}\n"
    result, replies = await run_probe(world, steps, profile=commands)
    assert replies[0]["result"]["terminal"] is True
    assert replies[1]["result"]["output"] == "[] 1\n"
    for refused in replies[2:4]:
        assert not refused["ok"] and "terminal cwd refused" in refused["message"], refused
    tail = replies[4]["result"]
    assert tail["truncated"] and tail["output"] == "é" * 50  # 101 bytes: cut before a char
    # The daemon (it left the group, in a sandbox or not) is gone with the run: run_probe
    # checks that no process carrying the profile's marker is left.
    assert pidfile.read_text().strip()
    assert result.meta.terminals is not None and len(result.meta.terminals) >= 4


async def test_permission_requests_through_a_real_agent(world: World) -> None:
    ws = world.ws
    steps = [
        {"op": "permission", "kind": "edit", "title": "edit a", "locations": [f"{ws}/a.py"]},
        {"op": "permission", "kind": "edit", "title": "edit out", "locations": ["/etc/passwd"]},
        {"op": "permission", "kind": "edit", "title": "raw", "rawInput": {"path": "/etc/x"}},
        {"op": "permission", "kind": "execute", "title": "rm -rf ~"},
        {"op": "permission", "kind": "execute", "title": "git status"},
        {"op": "permission", "kind": "read", "title": "peek", "locations": [str(world.secret)]},
    ]
    rules = "      permissions: {rules: [{kind: execute, title: 'git *', decision: allow}]}\n"
    result, replies = await run_probe(world, steps, profile=rules)
    chosen = [r["result"].get("optionId") for r in replies]
    assert chosen == ["once", "no", "no", "no", "once", "no"]
    assert result.meta.permissions is not None
    assert [p.decision for p in result.meta.permissions] == [
        "allowed",
        "rejected",
        "rejected",
        "rejected",
        "allowed",
        "rejected",
    ]
    assert "[4 permission requests refused]" in result.summary


async def test_what_is_not_served_is_not_advertised(world: World) -> None:
    profile = "      fs: {write: false}\n      terminal: {enabled: false}\n"
    steps = [
        {"op": "capabilities"},
        {"op": "write", "path": f"{world.ws}/x.txt", "content": "x"},
        {"op": "terminal", "command": "true"},
    ]
    _, replies = await run_probe(world, steps, profile=profile)
    caps = replies[0]["result"]
    assert caps["fs"] == {"readTextFile": True, "writeTextFile": False} and not caps["terminal"]
    assert replies[1]["code"] == replies[2]["code"] == -32601
    assert not (world.ws / "x.txt").exists()


async def test_what_the_agent_did_not_ask_for_is_judged_like_a_tool_call(world: World) -> None:
    ws = world.ws
    # Default mode: a command run without asking first is refused, and nothing runs.
    result, replies = await run_probe(world, [{"op": "terminal", "command": "touch made.txt"}])
    assert not replies[0]["ok"] and "refused by the permission policy" in replies[0]["message"]
    assert not (ws / "made.txt").exists()
    [refusal] = result.meta.refusals or []
    assert (refusal.method, refusal.target) == ("terminal/create", "touch made.txt")
    assert "[1 file/terminal request refused]" in result.summary
    # read-only: reads are served, writes are not, asked for or not.
    steps = [
        {"op": "read", "path": f"{ws}/notes.txt"},
        {"op": "write", "path": f"{ws}/new.txt", "content": "x"},
    ]
    _, replies = await run_probe(world, steps, profile="      permissions: {mode: read-only}\n")
    assert replies[0]["ok"] and not replies[1]["ok"] and not (ws / "new.txt").exists()
    assert "mode read-only" in replies[1]["message"]
    # deny-all: not even a read.
    _, replies = await run_probe(world, steps[:1], profile="      permissions: {mode: deny-all}\n")
    assert not replies[0]["ok"] and "mode deny-all" in replies[0]["message"]


async def test_a_granted_ask_covers_the_request_that_follows(world: World) -> None:
    asked: list[str] = []

    async def host(question: Any) -> bool:
        asked.append(question.title)
        return True

    steps = [
        # The request and the terminal it leads to are one decision, linked by the command
        # (rawInput.command here; the title would do too): the host is asked once.
        {
            "op": "permission",
            "kind": "execute",
            "title": "create a file",
            "rawInput": {"command": "touch granted.txt"},
        },
        {"op": "terminal", "command": "touch granted.txt"},  # covered by the grant above
        {"op": "terminal", "command": "touch unasked.txt"},  # not asked for: the host decides
        {"op": "terminal", "command": "touch granted.txt"},  # a grant covers one command
    ]
    rules = "      permissions: {rules: [{kind: execute, decision: ask}]}\n"
    _, replies = await run_probe(world, steps, profile=rules, hook=host)
    assert all(r["ok"] for r in replies), replies
    assert asked == ["create a file", "touch unasked.txt", "touch granted.txt"]
    assert (world.ws / "granted.txt").exists() and (world.ws / "unasked.txt").exists()


async def test_a_grant_does_not_cover_a_different_command(world: World) -> None:
    asked: list[str] = []

    async def host(question: Any) -> bool:
        asked.append(question.title)
        return question.title == "create a file"

    steps = [
        {
            "op": "permission",
            "kind": "execute",
            "title": "create a file",
            "rawInput": {"command": "touch granted.txt"},
        },
        {"op": "terminal", "command": "touch granted.txt; touch sneaky.txt"},
    ]
    rules = "      permissions: {rules: [{kind: execute, decision: ask}]}\n"
    _, replies = await run_probe(world, steps, profile=rules, hook=host)
    assert replies[0]["ok"] and not replies[1]["ok"], replies
    assert asked == ["create a file", "touch granted.txt; touch sneaky.txt"]
    assert not (world.ws / "sneaky.txt").exists()
