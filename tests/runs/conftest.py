"""Fixtures for durable runs: a private run store per test, and nothing left running after.

Supervisors inherit the test's environment, so the suite's marker variable finds them; the
commands and agents they start get a constructed environment instead, so tests that must see
those gone give them a unique command line (``sleep 30.<random>``) and look for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from acp_bridge._entries.request import EntryRequest
from acp_bridge._runs import foreground, liveness
from acp_bridge._runs.caller.handle import RunHandle, stop_run
from acp_bridge._runs.caller.start import start_run_sync
from acp_bridge._runs.run_options import RunOptions
from acp_bridge._runs.store import supervisors
from acp_bridge._runs.store.run_store import Store, close_stores
from acp_bridge.config import LoadedConfig, load_config
from tests.conftest import MARKER_VAR, processes_with

USAGE_AGENT = Path(__file__).parent / "usage_agent.py"
SUPERVISOR_IDLE = 0.25
"""``runs.supervisor_idle`` in these tests, unless one sets its own: every test ends by waiting for
its supervisors to leave, and the default 2 s wait for more runs cost ~2 s a test (the
supervisor's waiting is tested on its own, in test_runners.py)."""


def processes_running(needle: str) -> list[int]:
    """Pids whose command line contains ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_until_gone(needle: str, limit: float = 5.0) -> list[int]:
    deadline = time.monotonic() + limit
    while (alive := processes_running(needle)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


@dataclass
class RunsEnv:
    root: Path
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    loaded: LoadedConfig | None = None
    """The config :meth:`config` wrote, passed to every start (else each loads its own)."""

    @property
    def db(self) -> Path:
        return self.root / "state" / "runs.db"

    def store(self) -> Store:
        return Store(self.db)

    def sleeper(self, seconds: int = 30) -> str:
        """A ``sleep`` argument no other process on the host has: findable in /proc."""
        return f"{seconds}.{random.randrange(10**8, 10**9)}"

    def config(self, agents: dict[str, dict[str, Any]] | None = None, **runs: Any) -> LoadedConfig:
        """Writes ./acp-bridge.yaml (found by every process started here) and loads it:
        ``agents`` are profiles (merged over built-in ones of the same name), ``runs`` the
        config's ``runs:`` section."""
        entries = [
            {"name": name, "timeouts": {"shutdown_grace": 1, "cancel_grace": 1}, **profile}
            for name, profile in (agents or {}).items()
        ]
        path = self.write_config({"supervisor_idle": SUPERVISOR_IDLE, **runs}, entries)
        self.loaded = load_config(path)
        return self.loaded

    def write_config(self, runs: dict[str, Any], agents: list[dict[str, Any]]) -> Path:
        path = self.root / "acp-bridge.yaml"
        path.write_text(json.dumps({"runs": runs, "acp": {"agents": agents}}))  # JSON is YAML
        return path

    def usage_agent_config(self) -> LoadedConfig:
        return self.config({"usage": {"command": sys.executable, "args": [str(USAGE_AGENT)]}})

    def start(self, entry: str, task: str, agent: str | None = None, **options: Any) -> RunHandle:
        """A detached run of ``entry`` (``acp_spawn`` needs ``agent``) under RunOptions."""
        request = EntryRequest(entry=entry, task=task, agent=agent)  # type: ignore[arg-type]
        return start_run_sync(request, options=RunOptions(**options), config=self.loaded)

    def demo(self, task: str = "Reply with exactly OK", **options: Any) -> RunHandle:
        return self.start("acp_spawn", task, "demo", **options)

    def bash(self, command: str, **options: Any) -> RunHandle:
        return self.start("bash", command, **options)


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunsEnv]:
    env = RunsEnv(tmp_path)
    monkeypatch.chdir(tmp_path)
    # A home of its own beside the working folder, not above it: a run never gets the home
    # folder, or a folder above it, as its write root.
    home = tmp_path.parent / f"{tmp_path.name}-home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("ACP_BRIDGE_CONFIG", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("ACP_BRIDGE_RUNS_DB", str(env.db))
    monkeypatch.setenv(MARKER_VAR, env.marker)  # every supervisor inherits it
    env.write_config({"supervisor_idle": SUPERVISOR_IDLE}, [])  # found from the cwd by every start
    yield env
    _clean_up(env)


def _clean_up(env: RunsEnv) -> None:
    """Stop whatever a test left running (even a failing one), then insist nothing is left:
    no active run, and no supervisor still alive a few seconds after its run ended."""
    close_stores()
    foreground.close()
    store = env.store() if env.db.exists() else None
    leftover_runs = []
    if store is not None:
        for run in store.active():
            if run.detached:  # this process's own foreground runs ended with their tests
                with contextlib.suppress(Exception):
                    stop_run(run.id, store=env.db)
        deadline = time.monotonic() + 5
        while store.active() and time.monotonic() < deadline:
            time.sleep(0.05)
        leftover_runs = store.active()
    # A supervisor waits runs.supervisor_idle seconds for more runs before it exits (a test may
    # have set the default, or up to 30 s, and ended its supervisor itself).
    deadline = time.monotonic() + 5 + max(supervisors.IDLE, SUPERVISOR_IDLE)
    while (alive := processes_with(env.marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if store is not None:
        if alive:
            time.sleep(0.1)
            liveness.reap(store)  # the killed supervisors' runs: lost, their groups killed
        store.close()
    assert not leftover_runs, f"runs still active after the test: {leftover_runs}"
    assert not alive, f"supervisors left behind: {alive}"
