"""The whole bridge around a hostile agent (issue 11, "Done when"): ``acp-bridge run`` as a
real process whose own environment holds a host secret, the agent acting on its own under
the default sandbox — and the file part again under Landlock, forced.

Nothing outside the write root changes, the user's secrets and the bridge's environment
stay unreadable, no process of the run survives it, and ``meta.files_changed`` lists what
the agent wrote in-process and through a terminal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.conftest import SECRET_ENV, Scene, survivors
from tests.sandbox_modes import auto_mode

AGENT = Path(__file__).resolve().parent.parent / "agents" / "hostile_agent.py"


def write_config(scene: Scene, mode: str) -> Path:
    hostile = json.loads(scene.argv()[-1]) | {"marker": scene.marker}
    (scene.ws / "hostile.json").write_text(json.dumps(hostile))
    profile = {
        "name": "hostile",
        "command": sys.executable,
        "args": [str(AGENT)],
        "env": {"HOSTILE_CONFIG": str(scene.ws / "hostile.json")},
        "permissions": {"rules": [{"kind": "execute", "decision": "allow"}]},
        "timeouts": {"run": 30, "shutdown_grace": 1},
        "sandbox": {"mode": mode},
    }
    config = scene.root / "acp-bridge.yaml"
    config.write_text(json.dumps({"acp": {"agents": [profile]}}))
    return config


def run_bridge(
    scene: Scene, config: Path, *, detach: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``acp-bridge run hostile`` as a separate process (or ``--detach``ed, run by a
    supervisor, then waited for); (envelope, the agent's report)."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(scene.home),
        SECRET_ENV: scene.token,  # in the bridge's own (initial) environment
        "XDG_STATE_HOME": str(scene.root / "state"),
        "XDG_CACHE_HOME": str(scene.root / "state" / "cache"),  # the bridge's, not the agent's
        **{k: v for k, v in os.environ.items() if k == "ACP_BRIDGE_SANDBOX"},  # what auto is
    }
    cli = [sys.executable, "-m", "acp_bridge", "--config", str(config)]
    done = subprocess.run(
        [*cli, "run", "hostile", "go", "-q", "--cwd", str(scene.ws),
         *(["--detach"] if detach else [])],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    if detach:
        run_id = json.loads(done.stdout)["task_id"]
        done = subprocess.run(
            [*cli, "wait", run_id, "--timeout", "100"],
            capture_output=True, text=True, timeout=120, env=env, check=False,
        )  # fmt: skip
    envelope = json.loads(done.stdout)
    assert envelope["status"] == "done", (envelope, done.stderr)
    return envelope, json.loads(envelope["output"])


def assert_files_confined(scene: Scene, envelope: dict[str, Any], report: dict[str, Any]) -> None:
    # A write may "succeed" into the run's private /tmp (the test's tree lives under /tmp);
    # what counts is that nothing outside the write root changed on the host (checked by the
    # caller) and that no secret was read.
    secrets = [p for p in report["reads"] if "/.ssh/" in p or "/gh/" in p or p.endswith("netrc")]
    for path in secrets:
        assert "KEY" not in report["reads"][path] and "token" not in report["reads"][path]
        assert "password" not in report["reads"][path], (path, report["reads"][path])
    assert report["inside"].startswith("ok") and report["terminal"] == "ok"
    changed = set(envelope["meta"]["files_changed"])
    ws = str(scene.ws)
    assert {f"{ws}/in-process.txt", f"{ws}/via-terminal.txt", f"{ws}/inside.txt"} <= changed


@pytest.mark.parametrize("mode", ["auto", "landlock"])
def test_a_hostile_agent_is_confined(scene: Scene, mode: str) -> None:
    config = write_config(scene, mode)
    before = scene.outside_state()
    envelope, report = run_bridge(scene, config)
    ran = envelope["meta"]["sandbox"]["mode"]
    assert ran == (auto_mode() if mode == "auto" else "landlock")
    assert report["started"] == 102  # 100 children, a setsid daemon, an env -i daemon
    assert_files_confined(scene, envelope, report)
    assert scene.outside_state() == before  # nothing outside the write root changed
    assert survivors(scene.marker) == []  # no process of the run survived it
    # bubblewrap: no process outside the run is even visible; Landlock: every process of the
    # bridge is non-dumpable, and the agent has none of the capabilities that read past that.
    assert report["environ_leaks"] == []
    assert scene.token not in report["ppid_environ"]


@pytest.mark.parametrize("mode", ["auto", "landlock"])
def test_a_detached_runs_supervisor_keeps_its_environment_from_the_agent(
    scene: Scene, mode: str
) -> None:
    envelope, report = run_bridge(scene, write_config(scene, mode), detach=True)
    assert envelope["meta"]["sandbox"]["mode"] == (auto_mode() if mode == "auto" else "landlock")
    assert report["environ_leaks"] == []  # the supervisor holds the caller's environment
    assert survivors(scene.marker) == []
