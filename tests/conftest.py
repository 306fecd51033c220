"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_bridge.subtasks import DEPTH_ENV
from tests.helpers import kill_quietly, read_pids


@pytest.fixture(autouse=True)
def host_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts at the host level, even when the suite itself runs inside a
    subtask (where ACP_BRIDGE_DEPTH is set)."""
    monkeypatch.delenv(DEPTH_ENV, raising=False)


@pytest.fixture
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user or local config leaks in: cwd and HOME are the test's own folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("ACP_BRIDGE_CONFIG", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    """A file a test command writes its background pids to; whatever is still alive at the
    end is killed, whether the test passed or not."""
    path = tmp_path / "pids"
    yield path
    kill_quietly(read_pids(path))
