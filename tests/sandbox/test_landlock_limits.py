"""Landlock's limits said where the user looks (issue 20): a cwd that holds a hidden path (the
home folder holds ~/.ssh) cannot be given whole — new entries directly in it fail with EACCES.
The run says so on stderr as it starts, ``meta.sandbox.warnings`` keeps it, and ``doctor``
shows it with the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.sandbox_mode("landlock")


def cli(home: Path, *argv: str) -> tuple[int, str, str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "XDG_STATE_HOME": str(home.parent / "state"),
        "ACP_BRIDGE_DEMO_STATE": os.environ["ACP_BRIDGE_DEMO_STATE"],
        "ACP_BRIDGE_SANDBOX": "landlock",
    }
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", *argv],
        cwd=home, env=env, capture_output=True, text=True, timeout=60, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE\n")
    return home


def test_a_cwd_holding_a_hidden_path_is_said_on_stderr_and_kept_in_meta(home: Path) -> None:
    # A project folder holding a path the config hides (the home folder itself, which holds
    # ~/.ssh, is never a write root by default).
    project = home / "project"
    (project / "secrets").mkdir(parents=True)
    (home / "acp-bridge.yaml").write_text(f"sandbox:\n  hidden: [{project / 'secrets'}]\n")
    code, out, err = cli(home, "run", "demo", "run mkdir made-here", "--cwd", str(project))
    envelope = json.loads(out)
    warning = f"landlock cannot give the agent all of {project}: it holds hidden {project}/secrets"
    assert any(line.startswith(f"! {warning}") for line in err.splitlines()), err
    assert any(w.startswith(warning) for w in envelope["meta"]["sandbox"]["warnings"])
    assert "Fix: choose a cwd that does not contain them" in err
    assert not (project / "made-here").exists()  # the limit is real: mkdir failed
    assert code in (0, 1)


def test_doctor_shows_the_limit_with_its_fix(home: Path) -> None:
    code, out, _ = cli(home, "doctor", "demo", "--json")
    (report,) = json.loads(out)
    (cwd,) = [c for c in report["checks"] if c["name"] == "cwd"]
    assert cwd["warning"] and cwd["detail"].startswith(
        f"landlock cannot give the agent all of {home}: it holds hidden {home}/.ssh"
    )
    assert "XDG_STATE_HOME" in cwd["fix"] and "bubblewrap" in cwd["fix"]
    assert report["ready"] and code == 0  # a limit to know about, not a broken agent
