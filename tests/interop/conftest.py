"""Fixtures shared by the interop tests (helpers are in harness.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The session cwd: a folder of its own, so tmp_path has room for files outside it."""
    work = tmp_path / "work"
    work.mkdir()
    return work
