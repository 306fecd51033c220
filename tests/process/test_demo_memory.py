"""Follow-up turns offline: the demo agent remembers its sessions, so a later run can resume
or load one (ACP session/resume, session/load) and list them (session/list)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from acp_bridge import SubtaskResult, acp_spawn
from acp_bridge.config import load_config
from tests.helpers import run_bounded


def demo(task: str, cwd: Path, **kwargs: object) -> SubtaskResult:
    # The real environment: the demo profile's memory folder is ${ACP_BRIDGE_DEMO_STATE}.
    config = load_config(None, search=False)
    return run_bounded(acp_spawn, "demo", task, cwd=cwd, config=config, **kwargs)


def test_a_later_run_resumes_or_loads_the_session_and_remembers(tmp_path: Path) -> None:
    first = demo("remember PINEAPPLE", tmp_path)
    assert first.output == "Remembered: PINEAPPLE" and first.meta.session_method == "session/new"
    session = first.meta.session_id
    assert session is not None
    resumed = demo("recall", tmp_path, resume=session)
    assert resumed.output == "PINEAPPLE" and resumed.meta.session_id == session
    assert resumed.meta.session_method == "session/resume"  # preferred over load
    again = demo("remember MANGO\nrecall", tmp_path, resume=session)
    assert again.output == "Remembered: MANGO\nPINEAPPLE, MANGO"


def test_sessions_are_listed_for_their_directory(tmp_path: Path) -> None:
    first = demo("remember KIWI", tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    demo("remember PLUM", other)
    listed = subprocess.run(
        [sys.executable, "-m", "acp_bridge", "sessions", "demo", "--cwd", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    ids = [s["session_id"] for s in json.loads(listed.stdout)]
    assert first.meta.session_id in ids and len(ids) == 1
