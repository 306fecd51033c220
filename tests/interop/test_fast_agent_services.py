"""fast-agent (a real third-party ACP agent) using the client's fs, terminal and permission
services through ``acp_spawn``, with escape attempts.

fast-agent's offline ``passthrough`` model runs one tool per prompt from a directive,
``***CALL_TOOL <tool> <json>``; with ``--shell`` its ``execute`` tool runs through the
client's ``terminal/*`` methods. Each run starts fast-agent afresh (3-7 s).

Uses the shared interop install (``tests/interop/install.sh fast-agent``), or the
executable named by ``ACP_BRIDGE_FAST_AGENT``; without either the tests are skipped.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_bridge._entries.acp_spawn.entry import acp_spawn
from acp_bridge._os.process.marked_processes import marked_processes
from acp_bridge.config import load_config
from acp_bridge.envelope import SubtaskResult
from tests.interop.harness import INTEROP_DIR
from tests.security.conftest import SECRET, World, make_world

# The shared interop install (tests/interop/install.sh), else one named explicitly.
_SHARED = INTEROP_DIR / "fast-agent" / "bin" / "fast-agent"
FAST_AGENT = os.environ.get("ACP_BRIDGE_FAST_AGENT") or (str(_SHARED) if _SHARED.exists() else "")
MARKER = "ACP_TEST_RUN_MARKER"

pytestmark = [
    pytest.mark.interop,
    pytest.mark.anyio,
    pytest.mark.skipif(not FAST_AGENT, reason="fast-agent not installed (ACP_BRIDGE_FAST_AGENT)"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """The escape-attempt world of tests/security (its teardown checks nothing outside
    the roots changed)."""
    yield from make_world(tmp_path)


async def fast_agent(world: World, tool: str, args: dict[str, Any], *extra: str) -> SubtaskResult:
    """One turn of fast-agent-passthrough calling ``tool``; no process may be left after."""
    marker = secrets.token_hex(8)
    home = world.base / "fast-agent-home"
    config = world.base / "acp-bridge.yaml"
    agent_args = ["--no-update-check", "acp", "--model", "passthrough", "--shell"]
    config.write_text(
        json.dumps(
            {
                "transcripts": {"enabled": False},
                "acp": {
                    "agents": [
                        {
                            # Over the built-in profile: its rules (execute allowed) apply.
                            "name": "fast-agent-passthrough",
                            "command": FAST_AGENT,
                            "args": [*agent_args, "--home", str(home), *extra],
                            "cwd": str(world.ws),
                            "read_roots": [str(world.ref)],
                            "write_roots": [str(world.ws)],
                            "env": {MARKER: marker},
                            "timeouts": {"startup": 60, "run": 60},
                        }
                    ]
                },
            }
        )
    )
    try:
        loaded = load_config(config, environ={"PATH": os.environ.get("PATH", "")})
        with anyio.fail_after(120):
            result = await acp_spawn(
                "fast-agent-passthrough", f"***CALL_TOOL {tool} {json.dumps(args)}", config=loaded
            )
    finally:
        config.unlink()
        shutil.rmtree(home, ignore_errors=True)
    assert marked_processes(MARKER, marker) == [], "a process of the run was left behind"
    return result


async def test_reads_inside_the_roots(world: World) -> None:
    result = await fast_agent(world, "read_text_file", {"path": f"{world.ws}/notes.txt"})
    assert result.status == "done" and "line 2" in result.output
    assert result.meta.permissions and result.meta.permissions[0].decision == "allowed"


async def test_writes_inside_the_roots(world: World) -> None:
    target = world.ws / "made" / "by-fast-agent.txt"
    result = await fast_agent(
        world, "write_text_file", {"path": str(target), "content": "written by fast-agent\n"}
    )
    assert result.status == "done", result.to_json()
    assert target.read_text() == "written by fast-agent\n"
    assert result.meta.files_changed == [str(target)]
    assert result.meta.permissions and result.meta.permissions[0].decision == "allowed"


async def test_terminal_runs_with_the_constructed_env(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACP_TEST_HOST_SECRET", "hunter2")
    command = "echo [$ACP_TEST_HOST_SECRET] depth=$ACP_BRIDGE_DEPTH; pwd; sleep 300 &"
    result = await fast_agent(world, "execute", {"command": command})
    assert result.status == "done", result.to_json()
    assert "[] depth=1" in result.output and str(world.ws) in result.output
    assert "hunter2" not in result.output
    assert result.meta.terminals and result.meta.terminals[0].exit_code == 0
    # The background sleep outlived the command; release ended it (checked in fast_agent).


async def test_read_outside_is_refused_by_the_policy(world: World) -> None:
    result = await fast_agent(world, "read_text_file", {"path": str(world.secret)})
    assert SECRET.strip() not in json.dumps(result.to_dict())
    assert result.meta.permissions and result.meta.permissions[0].decision == "rejected"
    assert "[1 permission request refused]" in result.summary


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_text_file", {"path": "{ws}/link_out"}),
        ("read_text_file", {"path": "{ws}/../outside/secret.txt"}),
        ("write_text_file", {"path": "{ws}/dir_out/new.txt", "content": "x"}),
        ("write_text_file", {"path": "{ws}/hard", "content": "x"}),
    ],
)
async def test_without_permission_requests_the_services_still_refuse(
    world: World, tool: str, args: dict[str, str]
) -> None:
    """--no-permissions: fast-agent asks nothing and goes straight to fs/*, which must hold."""
    spelled = {k: v.format(ws=world.ws) for k, v in args.items()}
    result = await fast_agent(world, tool, spelled, "--no-permissions")
    assert SECRET.strip() not in json.dumps(result.to_dict())
    # A write is refused twice: fast-agent first reads the file for its diff.
    assert result.meta.refusals and {r.target for r in result.meta.refusals} == {spelled["path"]}
    assert re.search(r"\[\d file/terminal requests? refused\]", result.summary)
    assert not (world.outside / "new.txt").exists()
