"""Fixtures for the MCP server tests: a real ``acp-bridge mcp`` process per module, driven by
the official ``mcp`` client, and a check that nothing of a test is left running.

Each module starts its servers once (module-scoped, on one event loop: the anyio plugin
shares it across the module's tests). The servers and every agent they start carry a marker
variable (the server's environment; the profiles' ``env`` for agents, which get a constructed
environment), so what a test leaves behind is found in ``/proc``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import AGENTS, MARKER_VAR, processes_with
from tests.helpers import kill_quietly

ACP_BRIDGE = [sys.executable, "-m", "acp_bridge"]
ASK_RULE = {"rules": [{"kind": "execute", "decision": "ask"}]}
FORM = {
    "type": "object",
    "properties": {"strategy": {"type": "string", "enum": ["safe", "bold"]}},
    "required": ["strategy"],
}
"""What the ``questioner`` agent asks its user (an ACP elicitation form)."""
SECRET = "sk-test-5b1f0c9e77"
"""The ``leaky`` profile's API token: its agent puts it where the bridge writes about the run."""


@dataclass
class Answers:
    """What the test's host answers to elicitations (and what it was asked)."""

    decision: str | None = "allow"
    """For a permission question; None: decline."""
    form: dict[str, Any] = field(default_factory=lambda: {"strategy": "bold"})
    """For any other form."""
    asked: list[types.ElicitRequestParams] = field(default_factory=list)

    async def __call__(self, ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        if not isinstance(params, types.ElicitRequestFormParams):
            return types.ElicitResult(action="decline")
        if "decision" not in params.requested_schema.get("properties", {}):
            return types.ElicitResult(action="accept", content=self.form)
        if self.decision is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": self.decision})


@dataclass
class Bridge:
    """One ``acp-bridge mcp`` setup: its config, marker, run store and environment."""

    root: Path
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    answers: Answers = field(default_factory=Answers)
    logs: list[types.LoggingMessageNotificationParams] = field(default_factory=list)
    logged: anyio.Event | None = None
    """Set when the next log message arrives."""

    @property
    def config(self) -> Path:
        return self.root / "acp-bridge.yaml"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    def write_config(self) -> None:
        self.workspace.mkdir(parents=True, exist_ok=True)
        agent = {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]}
        marker = {"env": {MARKER_VAR: self.marker}, "cwd": str(self.workspace)}
        grace = {"timeouts": {"shutdown_grace": 1, "cancel_grace": 1}}
        script = self.root / "questioner.json"
        question = {"mode": "form", "message": "How bold?", "requestedSchema": FORM}
        script.write_text(
            json.dumps({"prompt": [{"request": "elicitation/create", "params": question}]})
        )
        questioner = {
            "command": sys.executable,
            "args": [str(AGENTS / "spy_agent.py"), str(script)],
        }
        leaks = self.root / "leaky.json"
        steps = [
            {"update": {"sessionUpdate": f"kind-{SECRET}"}},
            {"request": "fs/write_text_file", "params": {"path": f"/{SECRET}", "content": "x"}},
        ]
        leaks.write_text(json.dumps({"prompt": steps, "answer": "done"}))
        leaky = {
            "command": sys.executable,
            "args": [str(AGENTS / "spy_agent.py"), str(leaks)],
            "env": {MARKER_VAR: self.marker, "API_TOKEN": SECRET},
            "cwd": str(self.workspace),
        }
        agents = [
            # The built-in demo profile, with the marker (a later layer merges over it).
            {"name": "demo", **marker, **grace},
            {"name": "asker", "description": "demo, asking the host before commands",
             **agent, **marker, **grace, "permissions": ASK_RULE},
            {"name": "questioner", "description": "asks its user one question (a form)",
             **questioner, **marker, **grace},
            {"name": "leaky", "description": "names its API token in what it sends",
             **leaky, **grace},
            {"name": "writer", "description": "demo, writing expected.txt whatever it is asked",
             **agent, **marker, **grace,
             "session": {"system_prompt": "write expected.txt: written by the writer"}},
            {"name": "chatty", "description": "answers in 2000 message chunks",
             "command": sys.executable, "args": [str(AGENTS / "unruly_agent.py"), "chatty", "2000"],
             **marker, **grace},
        ]  # fmt: skip
        # supervisor_idle: the background runs' supervisors leave soon after (each test waits
        # for them to, and the default wait for more runs is 2 s).
        data = {
            "transcripts": {"dir": str(self.root / "transcripts")},
            "runs": {"supervisor_idle": 0.25},
            "acp": {"agents": agents},
        }
        self.config.write_text(json.dumps(data))  # JSON is YAML

    def env(self, **extra: str) -> dict[str, str]:
        env = {**os.environ, MARKER_VAR: self.marker, **extra}
        env["ACP_BRIDGE_RUNS_DB"] = str(self.root / "runs.db")
        env.pop("ACP_BRIDGE_CONFIG", None)
        return env

    def command(self, *args: str) -> list[str]:
        return [*ACP_BRIDGE, "mcp", "--config", str(self.config), *args]

    def stdio(self, *args: str, **env: str) -> StdioServerParameters:
        command = self.command(*args)
        return StdioServerParameters(
            command=command[0], args=command[1:], env=self.env(**env), cwd=str(self.workspace)
        )

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        if self.logged is not None:
            self.logged.set()

    def client(self, server: Any, mode: str = "auto", *, elicit: bool = True) -> Client:
        return Client(
            server,
            mode=mode,
            elicitation_callback=self.answers if elicit else None,
            logging_callback=self.on_log,
            log_level="debug",  # 2026-07-28 hosts opt in to log messages per request
            read_timeout_seconds=60,
        )

    def leftovers(self, servers: set[int], wait: float = 5.0) -> list[int]:
        """Processes of this bridge still alive other than ``servers`` (agents, commands,
        supervisors), after giving the ones that are ending time to go."""
        deadline = time.monotonic() + wait
        while True:
            alive = [pid for pid in processes_with(self.marker) if pid not in servers]
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.05)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bridge]:
    bridge = Bridge(tmp_path_factory.mktemp("mcp"))
    bridge.write_config()
    yield bridge
    kill_quietly(processes_with(bridge.marker))


def server_pids(marker: str) -> set[int]:
    """The ``acp-bridge mcp`` processes carrying ``marker`` (not what they started)."""
    found = set()
    for pid in processes_with(marker):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"mcp" in argv and b"acp_bridge" in argv:
            found.add(pid)
    return found


@asynccontextmanager
async def bounded(seconds: float = 30) -> AsyncIterator[None]:
    """A deadlock guard for one step: fails (never hangs) past ``seconds``."""
    with anyio.fail_after(seconds):
        yield


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
