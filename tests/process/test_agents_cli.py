"""``acp-bridge agents`` offline: a profile finds the pinned package in the managed prefix (an
install laid out as npm lays it out, made here without a registry), runs it from there in
its sandbox, and what cannot be installed is refused with the reason. The real installs
from the registries are in tests/interop/test_agents_install.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROFILE = {
    "name": "fake",
    "description": "a demo agent, installed as an npm package would be",
    "command": "fake-acp",
    "package": {"npm": "@example/fake-acp", "version": "1.2.3"},
}


def run_cli(
    root: Path,
    *argv: str,
    env: dict[str, str] | None = None,
    unprivileged: bool = False,
    timeout: float = 60,
) -> tuple[int, str, str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root / "home"),
        "XDG_DATA_HOME": str(root / "data"),
        "XDG_STATE_HOME": str(root / "state"),
        **{k: v for k, v in os.environ.items() if k == "ACP_BRIDGE_SANDBOX"},
        **(env or {}),
    }
    # Root reads and writes every folder: without these two capabilities, mode bits hold.
    drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    done = subprocess.run(
        [*(drop if unprivileged and os.geteuid() == 0 else []),
         sys.executable, "-m", "acp_bridge", *argv],
        cwd=root, env=env, capture_output=True, text=True, timeout=timeout, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    config = {"acp": {"agents": [PROFILE, {"name": "own", "command": "own-acp",
                                           "install": "see the vendor's site"}]}}  # fmt: skip
    (tmp_path / "acp-bridge.yaml").write_text(json.dumps(config))
    return tmp_path


def lay_out_install(root: Path, data: str = "data") -> Path:
    """What `agents install fake` leaves: the prefix, its .bin link, the stamp."""
    prefix = root / data / "acp-bridge" / "agents" / "npm" / "@example+fake-acp@1.2.3"
    package = prefix / "node_modules" / "@example" / "fake-acp"
    (package / "bin").mkdir(parents=True)
    script = package / "bin" / "fake-acp.sh"
    # It checks that its own .bin folder is first on PATH (where npm's Node would be).
    script.write_text(
        "#!/bin/sh\n"
        'case "$PATH" in "$(dirname "$0")"*|*/node_modules/.bin:*) ;; *) exit 9;; esac\n'
        f"exec {sys.executable} -m acp_bridge._demo.agent\n"
    )
    script.chmod(0o755)
    (prefix / "node_modules" / ".bin").mkdir()
    (prefix / "node_modules" / ".bin" / "fake-acp").symlink_to(
        "../@example/fake-acp/bin/fake-acp.sh"
    )
    (prefix / "acp-bridge-install.json").write_text(json.dumps({"version": "1.2.3"}))
    return prefix


def test_a_profile_runs_its_managed_install(root: Path) -> None:
    code, out, err = run_cli(root, "run", "fake", "Reply with exactly MANAGED", "--cwd", "work")
    assert code == 2 and "acp-bridge agents install fake" in err  # not installed yet: no such agent
    prefix = lay_out_install(root)
    code, out, _ = run_cli(root, "agents", "list", "--json")
    (row,) = [r for r in json.loads(out) if r["name"] == "fake"]
    assert row["managed"] and row["version"] == "1.2.3" and row["from"].startswith(str(prefix))
    code, out, err = run_cli(root, "run", "fake", "Reply with exactly MANAGED", "--cwd", "work")
    envelope = json.loads(out)
    assert code == 0 and envelope["output"] == "MANAGED", (envelope["error"], err)
    rows = json.loads(run_cli(root, "profiles", "list", "--json")[1])
    assert [r["installed"] for r in rows if r["name"] == "fake"] == [True]
    code, out, _ = run_cli(root, "agents", "install", "fake")  # nothing to do
    assert code == 0 and out.startswith("fake: already installed: npm @example/fake-acp@1.2.3")


@pytest.mark.parametrize(
    "mode", [pytest.param(m, marks=pytest.mark.sandbox_mode(m)) for m in ("bwrap", "landlock")]
)
@pytest.mark.parametrize("through", ["home", "data"])
def test_a_managed_install_reached_through_a_symlinked_folder_runs(
    root: Path, mode: str, through: str
) -> None:
    """``HOME`` (or ``XDG_DATA_HOME``) is a link to the real folder, here under the host's
    /tmp, which the sandbox replaces: the agent is called by the path through the link, and
    bubblewrap's /tmp had no link (exit 127)."""
    assert str(root).startswith("/tmp/")
    if through == "home":
        (root / "home-real" / ".local").mkdir(parents=True)
        lay_out_install(root, "home-real/.local/share")
        (root / "home-link").symlink_to(root / "home-real")
        env = {"HOME": str(root / "home-link"), "XDG_DATA_HOME": ""}
    else:
        lay_out_install(root, "data-real")
        (root / "data-link").symlink_to(root / "data-real")
        env = {"XDG_DATA_HOME": str(root / "data-link")}
    env["ACP_BRIDGE_SANDBOX"] = mode
    code, out, err = run_cli(
        root, "run", "fake", "Reply with exactly LINKED", "--cwd", "work", env=env
    )
    envelope = json.loads(out)
    assert code == 0 and envelope["output"] == "LINKED", (envelope["error"], err)
    assert envelope["meta"]["sandbox"]["mode"] == mode


def test_what_cannot_be_installed_is_refused_before_anything_is(root: Path) -> None:
    code, out, err = run_cli(root, "agents", "install", "fake", "own")
    assert code == 2 and out == ""
    assert err.strip() == (
        "error: profile 'own' names no package: acp-bridge cannot install it "
        "(install it yourself: see the vendor's site)"
    )
    assert not (root / "data" / "acp-bridge" / "agents" / "npm").exists()
    code, _, err = run_cli(root, "agents", "install", "nosuch")
    assert code == 2 and err.startswith("error: no agent profile named 'nosuch'")


def test_a_package_must_be_pinned_and_from_one_registry(root: Path) -> None:
    bad = {**PROFILE, "package": {"npm": "x", "pypi": "y", "version": "^1.0"}}
    (root / "acp-bridge.yaml").write_text(json.dumps({"acp": {"agents": [bad]}}))
    code, _, err = run_cli(root, "profiles", "validate")
    assert code == 2
    assert "package.version: must be one exact version (e.g. 0.16.0), not a range" in err + _


def test_an_own_install_on_path_says_its_version_in_its_sandbox(root: Path) -> None:
    """`agents list` asks an operator's own install its version in the agent's sandbox: an
    agent whose --version writes its state (codex's did) leaves the home folder as it was."""
    own = root / "bin" / "fake-acp"
    own.parent.mkdir()
    own.write_text(
        "#!/bin/sh\n"
        'mkdir -p "$HOME/.fake-acp" 2>/dev/null && echo login > "$HOME/.fake-acp/auth"\n'
        "echo 'fake-acp 9.8.7'\n"
    )
    own.chmod(0o755)
    env_path = f"{own.parent}{os.pathsep}{os.environ['PATH']}"
    env = {"PATH": env_path, "HOME": str(root / "home"), "XDG_DATA_HOME": str(root / "data"),
           "XDG_STATE_HOME": str(root / "state"),
           **{k: v for k, v in os.environ.items() if k == "ACP_BRIDGE_SANDBOX"}}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", "agents", "list", "--json"], cwd=root, env=env,
        capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    (row,) = [r for r in json.loads(done.stdout) if r["name"] == "fake"]
    assert not row["managed"] and row["from"] == str(own) and row["version"] == "9.8.7", row
    assert not (root / "home" / ".fake-acp").exists()
    subprocess.run([own], env=env, check=True, capture_output=True)  # outside it, it does write
    assert (root / "home" / ".fake-acp" / "auth").exists()


PYPI = {"name": "pyfake", "command": "pyfake-acp",
        "package": {"pypi": "pyfake-acp", "version": "1.0.0", "python": "3.99"}}  # fmt: skip


def test_an_unreadable_pyenv_is_no_pyenv(root: Path) -> None:
    """``runuser`` keeps the caller's ``PYENV_ROOT`` (``/root/.pyenv``, mode 0700): looking
    into it fails, and the install says what it needs instead of a traceback."""
    (root / "acp-bridge.yaml").write_text(json.dumps({"acp": {"agents": [PYPI]}}))
    pyenv = root / "someone-elses-pyenv"
    (pyenv / "versions" / "3.99.0" / "bin").mkdir(parents=True)
    pyenv.chmod(0)
    try:
        code, _, err = run_cli(
            root, "agents", "install", "pyfake", env={"PYENV_ROOT": str(pyenv)}, unprivileged=True
        )
    finally:
        pyenv.chmod(0o700)
    assert "Traceback" not in err, err
    assert code == 1 and "needs Python >= 3.99" in err, err


def test_a_data_folder_that_cannot_be_written_is_a_clear_error(root: Path) -> None:
    (root / "data-is-a-file").write_text("")
    code, out, err = run_cli(
        root, "agents", "install", "fake", env={"XDG_DATA_HOME": str(root / "data-is-a-file")}
    )
    assert "Traceback" not in err, err
    assert code == 2 and out == "", err
    assert f"cannot install into {root / 'data-is-a-file'}/acp-bridge/agents/npm/" in err
    assert "set XDG_DATA_HOME to a writable folder" in err
    read_only = root / "read-only"
    (read_only / "acp-bridge").mkdir(parents=True)
    read_only.chmod(0o500)
    (read_only / "acp-bridge").chmod(0o500)
    try:
        code, out, err = run_cli(
            root, "agents", "install", "fake", env={"XDG_DATA_HOME": str(read_only)},
            unprivileged=True,
        )  # fmt: skip
    finally:
        (read_only / "acp-bridge").chmod(0o700)
        read_only.chmod(0o700)
    assert "Traceback" not in err, err
    assert code == 2 and "Permission denied" in err and "cannot install into" in err, (out, err)
