"""Running real third-party ACP agents through acp_spawn, and checking what they leave behind.

Agents live in ``$ACP_BRIDGE_INTEROP_DIR`` (default ``~/.cache/acp-bridge-interop``), put
there by ``tests/interop/install.sh``. A test asks for one with :func:`installed`: missing,
it is skipped (``ACP_BRIDGE_INTEROP_REQUIRE=1`` makes that a failure, for CI that opts in).

:func:`run` writes a config with one profile for the agent, runs ``acp_spawn`` under an
overall deadline, then checks that no process of the run is left: the profile's env carries
a unique marker variable, which the agent, its children and the terminals we start for it
all inherit, and ``/proc/*/environ`` is scanned for it.

With ``ACP_BRIDGE_RECORD_GOLDEN=1`` every run also saves representative incoming messages
from its transcript as golden files under ``tests/golden/wire/<agent>/`` (see
:func:`record_golden`).
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_bridge._entries.acp_spawn.entry import acp_spawn_with_follow_ups
from acp_bridge._entries.acp_spawn.live_turns import FollowUps
from acp_bridge.config import load_config
from acp_bridge.envelope import SubtaskResult
from acp_bridge.events import Event
from tests.helpers import command_line
from tests.helpers import processes_with as find_marked

INTEROP_DIR = Path(
    os.environ.get("ACP_BRIDGE_INTEROP_DIR") or Path.home() / ".cache" / "acp-bridge-interop"
)
GOLDEN_WIRE = Path(__file__).resolve().parent.parent / "golden" / "wire"
MARKER_NAME = "ACP_BRIDGE_INTEROP_MARKER"
LEFTOVER_WAIT = 3.0  # seconds for killed processes to disappear from /proc


def installed(name: str) -> Path:
    """The install folder of agent ``name``; skips (or fails) the test when it is missing."""
    folder = INTEROP_DIR / name
    if (folder / ".installed").is_file():
        return folder
    message = f"{name} is not installed in {INTEROP_DIR}: run tests/interop/install.sh {name}"
    if os.environ.get("ACP_BRIDGE_INTEROP_REQUIRE") == "1":
        pytest.fail(message)
    pytest.skip(message)


@dataclass
class Run:
    result: SubtaskResult
    events: list[Event]
    transcript: list[dict[str, Any]]
    marker: str

    def incoming(self) -> Iterator[dict[str, Any]]:
        return (line["msg"] for line in self.transcript if line["dir"] == "in" and "msg" in line)

    def outgoing(self) -> Iterator[dict[str, Any]]:
        return (line["msg"] for line in self.transcript if line["dir"] == "out" and "msg" in line)

    def requests(self, method: str) -> list[dict[str, Any]]:
        """The agent's requests to us with this method."""
        return [m for m in self.incoming() if m.get("method") == method and "id" in m]

    def update_kinds(self) -> set[str]:
        return {
            str(m["params"]["update"].get("sessionUpdate"))
            for m in self.incoming()
            if m.get("method") == "session/update"
        }


def run(
    agent: str,
    profile: dict[str, Any],
    task: str,
    workdir: Path,
    *,
    timeout: float | None = None,
    deadline: float = 180.0,
    config_extra: dict[str, Any] | None = None,
    follow_ups: FollowUps | None = None,
    resume: str | None = None,
) -> Run:
    """``acp_spawn`` of ``task`` on a profile named ``agent`` (given ``follow_ups``, the run
    layer's form that keeps the session for further turns); asserts no process is left."""
    marker = uuid.uuid4().hex
    profile = {
        "name": agent,
        **profile,
        "env": {**profile.get("env", {}), MARKER_NAME: marker},
    }
    state = workdir.parent / f"{workdir.name}-state"
    config = {
        "transcripts": {"enabled": True, "dir": str(state / "transcripts")},
        "acp": {"agents": [profile]},
        **(config_extra or {}),
    }
    config_path = state / "acp-bridge.yaml"
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(json.dumps(config, indent=2))  # JSON is YAML
    loaded = load_config(config_path, search=False)
    events: list[Event] = []
    results: list[SubtaskResult] = []

    async def main() -> None:
        # The profile's timeouts bound each phase; this bounds the whole run, so a deadlock
        # in the bridge fails the test instead of hanging it.
        with anyio.fail_after(deadline):
            results.append(
                await acp_spawn_with_follow_ups(
                    agent,
                    task,
                    follow_ups=follow_ups,
                    cwd=workdir,
                    config=loaded,
                    timeout=timeout,
                    on_event=events.append,
                    resume=resume,
                )
            )

    anyio.run(main)
    result = results[0]
    transcript: list[dict[str, Any]] = []
    if result.meta.transcript:
        with Path(result.meta.transcript).open() as lines:
            transcript = [json.loads(line) for line in lines]
    assert_no_leftovers(marker)
    done = Run(result, events, transcript, marker)
    if os.environ.get("ACP_BRIDGE_RECORD_GOLDEN") == "1":
        record_golden(agent, done)
    return done


def processes_with(marker: str) -> list[tuple[int, str]]:
    """(pid, command line) of every process whose environment carries the marker."""
    return [(pid, command_line(pid)) for pid in find_marked(MARKER_NAME, marker)]


def assert_no_leftovers(marker: str) -> None:
    deadline = time.monotonic() + LEFTOVER_WAIT
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)  # a killed process may take a moment to be reaped
    assert not left, f"processes of the run are still alive: {left}"


# --- golden wire messages --------------------------------------------------------------------


def _slug(method: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "-", method).strip("-")


def golden_name(message: dict[str, Any], methods_by_id: dict[Any, str]) -> str | None:
    """The golden file name for an incoming message, or None when it is not worth keeping.

    ``<method>.reply[.<stopReason>].json`` for replies to our requests,
    ``session-update.<kind>.json`` for updates, ``<method>[.<tool kind>].request.json`` for
    the agent's requests to us.
    """
    method = message.get("method")
    if method is None:
        asked = methods_by_id.get(message.get("id"))
        if asked not in ("initialize", "session/new", "session/prompt", "authenticate"):
            return None
        result = message.get("result")
        stop = result.get("stopReason") if isinstance(result, dict) else None
        suffix = f".{stop}" if stop else ".error" if "error" in message else ""
        return f"{_slug(asked)}.reply{suffix}.json"
    if method == "session/update":
        kind = message.get("params", {}).get("update", {}).get("sessionUpdate")
        return f"session-update.{_slug(str(kind))}.json"
    if "id" in message:
        tool_kind = message.get("params", {}).get("toolCall", {}).get("kind")
        qualifier = f".{_slug(tool_kind)}" if isinstance(tool_kind, str) else ""
        return f"{_slug(method)}{qualifier}.request.json"
    return None


def record_golden(agent: str, run: Run, keep: Callable[[str], bool] = lambda _: True) -> None:
    """Save the first incoming message of each golden name (see :func:`golden_name`)."""
    methods_by_id = {m["id"]: m["method"] for m in run.outgoing() if "id" in m and "method" in m}
    folder = GOLDEN_WIRE / agent
    folder.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for message in run.incoming():
        name = golden_name(message, methods_by_id)
        if name is None or name in seen or not keep(name):
            continue
        seen.add(name)
        (folder / name).write_text(json.dumps(message, indent=2, ensure_ascii=False) + "\n")
