"""A run started in the whole filesystem or the home folder does not get it as its write
root: the envelope says why and how to allow it, nothing is started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _cli(*args: str, home: Path, cwd: Path) -> tuple[int, dict[str, object]]:
    env = {k: v for k, v in os.environ.items() if k != "ACP_BRIDGE_CONFIG"}
    env["HOME"] = str(home)  # no config of the user's: none under this home, none in cwd
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
    )
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("where", ["/", "home"])
def test_bash_in_a_broad_folder_is_refused(tmp_path: Path, where: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    cwd = Path("/") if where == "/" else home
    code, envelope = _cli("bash", "--cwd", str(cwd), "--", "touch refused", home=home, cwd=tmp_path)
    assert code == 2 and envelope["meta"]["error_code"] == "config_error"  # type: ignore[index]
    assert "would be the run's write root" in str(envelope["error"])
    assert not (cwd / "refused").exists()


def test_a_profile_that_names_the_home_folder_may_write_there(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = tmp_path / "acp-bridge.yaml"
    config.write_text(
        "acp:\n  agents:\n    - name: homely\n      command: ${ACP_BRIDGE_PYTHON}\n"
        "      args: [-m, acp_bridge._demo.agent]\n"
        f"      write_roots: [{home}]\n"
    )
    code, envelope = _cli(
        "--config", str(config), "run", "homely", "write note.txt: hi", "--cwd", str(home),
        home=home, cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, envelope
    assert (home / "note.txt").read_text().strip() == "hi"
    code, envelope = _cli(
        "--config", str(config), "run", "demo", "write note.txt: no", "--cwd", str(home),
        home=home, cwd=tmp_path,
    )  # fmt: skip
    assert code == 2 and "home folder itself" in str(envelope["error"])
