"""``acp-bridge agents install`` with the real registries (issue 20, "Done when"): the pinned
npm adapters (codex-acp, claude-agent-acp, gemini-cli, opencode) and one PyPI agent
(fast-agent, through its offline profile) go into the managed prefix, and ``doctor`` then
starts the built-in profile's agent in its default sandbox through ``initialize`` (no model
key needed for that), gives its version from the install record, and calls it ready only
where it also opens a session without a key: the agents that refuse one without a key
(codex, gemini) are not ready, and say which key. The managed prefix of this test lies under /tmp, a
directory the sandbox hides: each agent must still find its whole installation
(node_modules, the Node installed beside it, its venv).

Needs network to the npm registry and PyPI, npm, and for fast-agent a Python >= 3.12
(python3.12 on PATH or pyenv's). Several hundred MB; minutes. ``pytest -m interop``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.interop

# fast-agent's own profile needs a model configured even to start (its choice): its offline
# profile, the same PyPI package, is the one doctor can pass without a key.
AGENTS = ["codex", "claude", "gemini", "opencode", "fast-agent-passthrough"]
READY_WITHOUT_A_KEY = {"opencode", "fast-agent-passthrough"}
"""Open a session with no key (opencode's default provider is its free online models)."""
ASKS_FOR = {"codex": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY"}
"""Refuse session/new (-32000) without this key; claude opens one and says "Not logged in"."""
INSTALL_TIMEOUT = 1500


@pytest.fixture(scope="module")
def data_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One managed prefix for the module (under /tmp: hidden inside the sandbox)."""
    return tmp_path_factory.mktemp("agents-data")


def cli(
    root: Path, data_home: Path, *argv: str, timeout: float
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(root / "home"),
        "XDG_DATA_HOME": str(data_home),
        "XDG_STATE_HOME": str(root / "state"),
        "XDG_CONFIG_HOME": str(root / "config"),
    }
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "CODEX_API_KEY"):
        env.pop(key, None)  # no model key: what doctor says without one
    (root / "home").mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "acp_bridge", *argv],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.timeout(INSTALL_TIMEOUT + 300)  # an install takes minutes, not the suite's 120 s
@pytest.mark.parametrize("agent", AGENTS)
def test_installed_agent_starts_for_doctor(agent: str, data_home: Path, tmp_path: Path) -> None:
    if shutil.which("npm") is None and not agent.startswith("fast-agent"):
        pytest.skip("npm is not installed here")
    installed = cli(tmp_path, data_home, "agents", "install", agent, timeout=INSTALL_TIMEOUT)
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert f"{agent}: installed" in installed.stdout or "already installed" in installed.stdout
    assert str(data_home) in installed.stdout

    listed = json.loads(cli(tmp_path, data_home, "agents", "list", "--json", timeout=60).stdout)
    (row,) = [r for r in listed if r["name"] == agent]
    assert row["managed"] and row["from"].startswith(str(data_home)), row

    doctor = cli(tmp_path, data_home, "doctor", agent, "--json", timeout=180)
    (report,) = json.loads(doctor.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    shown = json.dumps(report, indent=1)
    assert checks["command"]["detail"].startswith(str(data_home))
    assert checks["version"]["detail"].endswith("(its install record)"), shown
    assert checks["start"]["ok"], shown
    assert "answered initialize in the sandbox" in checks["start"]["detail"]
    if agent in READY_WITHOUT_A_KEY:
        assert report["ready"] and doctor.returncode == 0, shown
    else:
        assert not report["ready"] and doctor.returncode == 1, shown
        (problem,) = [c for c in report["checks"] if not c["ok"]]
        assert problem["fix"], shown
    if agent in ASKS_FOR:
        assert ASKS_FOR[agent] in checks["auth"]["fix"], shown

    again = cli(tmp_path, data_home, "agents", "install", agent, timeout=120)
    assert again.returncode == 0 and "already installed" in again.stdout


def test_the_managed_prefix_keeps_lockfiles_and_hashes(data_home: Path) -> None:
    npm = list((data_home / "acp-bridge" / "agents" / "npm").glob("*/package-lock.json"))
    pypi = list((data_home / "acp-bridge" / "agents" / "pypi").glob("*/requirements.lock"))
    if not npm and not pypi:
        pytest.skip("no agent was installed by this module's run")
    for lock in npm:
        packages = json.loads(lock.read_text())["packages"]
        assert all("integrity" in p for name, p in packages.items() if name and "link" not in p)
    for lock in pypi:
        pins = [line for line in lock.read_text().splitlines() if "==" in line]
        assert pins and all("--hash=sha256:" in line for line in pins), pins[:3]
