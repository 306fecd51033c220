"""Fixtures shared by the whole suite: host-level isolation, and real agent processes under
a harness that finds what they leave behind."""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import settings

from acp_bridge._entries.acp_spawn.entry import acp_spawn, acp_spawn_with_follow_ups
from acp_bridge._entries.acp_spawn.live_turns import FollowUps
from acp_bridge._os.process.environment import DEPTH_ENV, MAX_DEPTH_ENV
from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.envelope import SubtaskResult
from tests.helpers import kill_quietly
from tests.helpers import processes_with as find_marked

# No per-example deadline: these examples make folders, files and processes on a shared
# machine, where a loaded moment took one past hypothesis's default 200 ms and failed a
# test about file modes. A test asserts behaviour, never a time (speed is benchmarks/').
settings.register_profile("acp-bridge", deadline=None)
settings.load_profile("acp-bridge")

AGENTS = Path(__file__).parent / "agents"
MARKER_VAR = "ACP_BRIDGE_TEST_MARKER"


def processes_with(marker: str) -> list[int]:
    return find_marked(MARKER_VAR, marker)


@dataclass
class AgentHarness:
    """Builds configs whose agents carry a unique marker, runs them, finds what is left."""

    root: Path
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def workspace(self) -> Path:
        path = self.root / "workspace"
        path.mkdir(exist_ok=True)
        return path

    def config(self, agents: dict[str, dict[str, Any]], **settings: Any) -> LoadedConfig:
        entries = []
        for name, profile in agents.items():
            entry = {"name": name, **profile}
            entry["env"] = {**entry.get("env", {}), MARKER_VAR: self.marker}
            entry.setdefault("timeouts", {})
            entry["timeouts"] = {"shutdown_grace": 1, "cancel_grace": 1, **entry["timeouts"]}
            entries.append(entry)
        data = {
            "transcripts": {"dir": str(self.root / "transcripts")},
            **settings,
            "acp": {"agents": entries},
        }
        path = self.root / "acp-bridge.yaml"
        path.write_text(json.dumps(data, indent=1))  # JSON is YAML
        return load_config(path, environ=dict(os.environ), search=False)

    def fault(self, mode: str, **profile: Any) -> LoadedConfig:
        """A config whose profile ``fault`` runs tests/agents/fault_agent.py in ``mode``."""
        command = {"command": sys.executable, "args": [str(AGENTS / "fault_agent.py"), mode]}
        return self.config({"fault": {**command, **profile}})

    def run(
        self,
        agent: str,
        task: str,
        config: LoadedConfig,
        *,
        guard: float = 30,
        follow_ups: FollowUps | None = None,
        **kwargs: Any,
    ) -> SubtaskResult:
        """acp_spawn under a hard deadline: a deadlock fails the test instead of hanging.
        Given ``follow_ups``, the run layer's form that keeps the session for further turns."""

        async def bounded() -> SubtaskResult:
            kwargs.update(cwd=self.workspace, config=config)
            with anyio.fail_after(guard):
                if follow_ups is None:
                    return await acp_spawn(agent, task, **kwargs)
                return await acp_spawn_with_follow_ups(agent, task, follow_ups=follow_ups, **kwargs)

        return anyio.run(bounded)

    def leftovers(self, wait: float = 2.0) -> list[int]:
        """Processes of this test still alive, after giving SIGKILLed ones time to vanish."""
        deadline = time.monotonic() + wait
        while (alive := processes_with(self.marker)) and time.monotonic() < deadline:
            time.sleep(0.05)
        return alive


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[AgentHarness]:
    harness = AgentHarness(tmp_path)
    yield harness
    leaked = harness.leftovers()
    for pid in leaked:  # never leave them to the next test, even when failing this one
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not leaked, f"processes left behind: {leaked}"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile the package and the test agents once, in the controller, before any worker.

    Why: the suite starts hundreds of Python processes (agents, supervisors, the CLI), and
    with ``PYTHONDONTWRITEBYTECODE`` set (this machine kind, where CI runs, sets it) an
    editable install has no bytecode, so each of them compiled every module it imported
    again (~0.15 s of CPU each).
    """
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller did it
        return
    root = Path(__file__).parent.parent
    for folder in (root / "acp_bridge", root / "tests"):
        compileall.compile_dir(folder, quiet=2, workers=1)


@pytest.fixture(autouse=True, scope="session")
def private_state_and_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Transcripts and the YAML parse cache of the whole run (child processes included) go
    to the run's own folders, never to the user's."""
    names = ("XDG_STATE_HOME", "XDG_CACHE_HOME", "ACP_BRIDGE_DEMO_STATE")
    saved = {name: os.environ.get(name) for name in names}
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    # The demo agent's memory of sessions (it passes through to the agent).
    os.environ["ACP_BRIDGE_DEMO_STATE"] = str(tmp_path_factory.mktemp("demo-memory"))
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def host_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts at the host level, even when the suite itself runs inside a
    subtask (where ACP_BRIDGE_DEPTH and ACP_BRIDGE_MAX_DEPTH are set)."""
    monkeypatch.delenv(DEPTH_ENV, raising=False)
    monkeypatch.delenv(MAX_DEPTH_ENV, raising=False)


@pytest.fixture(autouse=True)
def sandbox_mode_needed(request: pytest.FixtureRequest) -> None:
    """A test that needs a sandbox mode (``@pytest.mark.sandbox_mode("bwrap")``, or a
    ``mode`` parameter in tests/sandbox and tests/security) is skipped where that mode does
    not work, with the reason and the fix (tests/sandbox_modes.py)."""
    from tests.sandbox_modes import require

    for mark in request.node.iter_markers("sandbox_mode"):
        for mode in mark.args:
            require(mode)
    callspec = getattr(request.node, "callspec", None)
    folder = request.node.path.parent.name
    if callspec is not None and folder in ("sandbox", "security"):
        mode = callspec.params.get("mode")
        if isinstance(mode, str):
            require(mode)


@pytest.fixture
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user or local config leaks in: cwd is the test's own folder, HOME an empty one."""
    monkeypatch.chdir(tmp_path)
    # A home of its own beside the working folder, not above it: a run never gets the home
    # folder, or a folder above it, as its write root.
    home = tmp_path.parent / f"{tmp_path.name}-home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("ACP_BRIDGE_CONFIG", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)


@pytest.fixture
def marker() -> Iterator[str]:
    """A value for ``MARKER_VAR``: give it to a command's environment, and every process it
    starts carries it — inside a sandbox too (host /proc sees them), under any pid. Whatever
    still carries it at the end is killed, whether the test passed or not."""
    value = uuid.uuid4().hex
    yield value
    kill_quietly(processes_with(value))


@pytest.fixture
def spy(harness: AgentHarness) -> Any:
    """The spy agent (tests/agents/spy_agent.py) under this test's harness."""
    from tests.spy import Spy

    return Spy(harness)
