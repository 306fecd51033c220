"""Every folder the bridge owns, in every state a user's disk can leave it: a file where the
folder should be, a symlink to elsewhere, a symlink to nowhere, a half-written install, and
another process writing it. One treatment (``_os/fs/private_files.py``): the run is refused
with the path and the fix (or, where the bridge can go on without the folder, warned about
naming it), never a traceback, never a write through the link or the making of its target;
an install is built under a lock and stamped last and atomically. Real ``acp-bridge``
processes; installs use a fake ``npm`` on ``PATH`` (offline: it lays out what npm would)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROFILES = [
    {"name": "demo2", "command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]},
    {"name": "fake", "command": "fake-acp",
     "package": {"npm": "@example/fake-acp", "version": "1.2.3"}},
]  # fmt: skip
VERSION = "data/acp-bridge/agents/npm/@example+fake-acp@1.2.3"

# A fake npm: `npm install --prefix P …` lays out P/node_modules/.bin/fake-acp, slowly
# enough (a second) that two installs started together overlap.
FAKE_NPM = """#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in --prefix) P="$2"; shift;; esac; shift; done
echo "$$" >> "LOG"
sleep 1
mkdir -p "$P/node_modules/.bin" || exit 1
printf '#!/bin/sh\\nexec PYTHON -m acp_bridge._demo.agent\\n' > "$P/node_modules/.bin/fake-acp"
chmod +x "$P/node_modules/.bin/fake-acp"
echo '{}' > "$P/package-lock.json"
"""

# folder → what a run (or an install) does when it is in a bad state: refused (exit 2,
# the path named), warned (the run goes on; a warning names the path), followed (the
# state directory itself may be a link the user made, to another disk).
FOLDERS: dict[str, tuple[str, str, dict[str, str]]] = {
    # name: (path under the test's root, command, outcome per state)
    "state": ("state/acp-bridge", "run",
              {"file": "refused", "link": "followed", "dangling": "refused"}),
    "worktrees": ("state/acp-bridge/worktrees", "run",
                  {"file": "refused", "link": "refused", "dangling": "refused"}),
    "transcripts": ("state/acp-bridge/transcripts", "run",
                    {"file": "warned", "link": "warned", "dangling": "warned"}),
    "run store": ("state/acp-bridge/runs.db", "run",
                  {"file": "warned", "link": "warned", "dangling": "warned"}),
    "parse cache": ("cache/acp-bridge/yaml", "run",
                    {"file": "ignored", "link": "ignored", "dangling": "ignored"}),
    "agents": ("data/acp-bridge/agents", "install",
               {"file": "refused", "link": "followed", "dangling": "refused"}),
    "agents of npm": ("data/acp-bridge/agents/npm", "install",
                      {"file": "refused", "link": "refused", "dangling": "refused"}),
    "agent version": (VERSION, "install",
                      {"file": "refused", "link": "refused", "dangling": "refused"}),
}  # fmt: skip
CASES = [
    pytest.param(name, state, id=f"{name}-{state}")
    for name, (_, _, outcomes) in FOLDERS.items()
    for state in outcomes
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for folder in ("home", "bin", "elsewhere"):
        (tmp_path / folder).mkdir()
    npm = tmp_path / "bin" / "npm"
    npm.write_text(
        FAKE_NPM.replace("LOG", str(tmp_path / "npm-runs")).replace("PYTHON", sys.executable)
    )
    npm.chmod(0o755)
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], cwd=repo, check=True)
    # YAML, so that its parse is cached (in the parse cache, one of the folders here).
    profiles = "".join(f"    - {json.dumps(p)}\n" for p in PROFILES)
    (tmp_path / "acp-bridge.yaml").write_text(f"acp:\n  agents:\n{profiles}")
    return tmp_path


def start_cli(root: Path, *argv: str) -> subprocess.Popen[str]:
    env = {
        "PATH": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(root / "home"),
        "XDG_DATA_HOME": str(root / "data"),
        "XDG_STATE_HOME": str(root / "state"),
        "XDG_CACHE_HOME": str(root / "cache"),
        **{k: v for k, v in os.environ.items() if k == "ACP_BRIDGE_SANDBOX"},
    }
    return subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "--config", str(root / "acp-bridge.yaml"), *argv],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def run_cli(root: Path, *argv: str) -> tuple[int, str, str]:
    process = start_cli(root, *argv)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def command(root: Path, kind: str) -> tuple[str, ...]:
    if kind == "install":
        return ("agents", "install", "fake")
    return ("run", "demo2", "Reply with exactly OK", "--cwd", str(root / "repo"),
            "--isolation", "worktree")  # fmt: skip


def put(path: Path, state: str, root: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if state == "file":
        path.write_text("the user's own file\n")
    elif state == "link":
        path.symlink_to(root / "elsewhere")
    else:
        path.symlink_to(root / "nowhere")


@pytest.mark.parametrize(("name", "state"), CASES)
def test_an_owned_folder_in_a_bad_state_is_refused_or_warned_naming_it(
    root: Path, name: str, state: str
) -> None:
    where, kind, outcomes = FOLDERS[name]
    path = root / where
    put(path, state, root)
    code, out, err = run_cli(root, *command(root, kind))
    said = err + out
    assert "Traceback" not in said and "internal_error" not in said, said
    outcome = outcomes[state]
    if outcome == "refused":
        assert code == 2, said
        assert str(path) in said, said  # the path the user must fix
        assert "remove" in said or "move it away" in said or "make that folder" in said, said
    elif outcome == "warned":
        assert code == 0, said
        assert str(path) in said, said
    else:  # followed or ignored: the run is as it would be
        assert code == 0, said
    if kind == "run" and code == 0:
        assert json.loads(out)["output"] == "OK", said
    # Never written through: the link's target stays as it was, a link to nowhere stays one.
    assert not (root / "nowhere").exists()
    if outcome != "followed":
        assert list((root / "elsewhere").iterdir()) == []
    if state == "file":
        assert path.read_text() == "the user's own file\n"
    else:
        assert path.is_symlink()


def test_a_half_written_install_is_not_used_and_is_built_again(root: Path) -> None:
    """An install killed before its stamp: the folder is there, the stamp is not. It is
    never run from, and the next install replaces it."""
    prefix = root / VERSION
    (prefix / "node_modules" / ".bin").mkdir(parents=True)
    (prefix / "node_modules" / ".bin" / "fake-acp").write_text("#!/bin/sh\nexit 7\n")
    (prefix / "node_modules" / ".bin" / "fake-acp").chmod(0o755)
    (prefix / ".acp-bridge-install.json.123.tmp").write_text('{"vers')  # a stamp cut short
    code, out, _ = run_cli(root, "agents", "list", "--json")
    (row,) = [r for r in json.loads(out) if r["name"] == "fake"]
    assert not row["managed"], row
    code, out, err = run_cli(root, "agents", "install", "fake")
    assert code == 0 and out.startswith("fake: installed: npm @example/fake-acp@1.2.3"), err
    assert not (prefix / ".acp-bridge-install.json.123.tmp").exists()
    stamp = json.loads((prefix / "acp-bridge-install.json").read_text())
    assert stamp["version"] == "1.2.3"
    code, out, err = run_cli(root, "run", "fake", "Reply with exactly MANAGED", "--cwd", "repo")
    assert code == 0 and json.loads(out)["output"] == "MANAGED", err


# Three show one builder and two waiters; two (slow) prove nothing three do not.
@pytest.mark.parametrize("installs", [pytest.param(2, marks=pytest.mark.slow), 3])
def test_concurrent_installs_of_one_agent_install_it_once(root: Path, installs: int) -> None:
    """Started together: one builds the install, the others wait for its lock and find it
    installed. Each ends ok; npm ran once; the install is whole and runs."""
    processes = [start_cli(root, "agents", "install", "fake") for _ in range(installs)]
    ended = [(p, *p.communicate(timeout=120)) for p in processes]
    for process, _, err in ended:
        assert process.returncode == 0, err
    outs = sorted(out.split(":")[1].strip() for _, out, _ in ended)
    assert outs == ["already installed"] * (installs - 1) + ["installed"], outs
    assert len((root / "npm-runs").read_text().split()) == 1  # npm ran once
    prefix = root / VERSION
    assert json.loads((prefix / "acp-bridge-install.json").read_text())["version"] == "1.2.3"
    assert [p.name for p in prefix.iterdir() if p.name.endswith(".tmp")] == []
    code, out, err = run_cli(root, "run", "fake", "Reply with exactly ONCE", "--cwd", "repo")
    assert code == 0 and json.loads(out)["output"] == "ONCE", err


def test_a_forced_install_waits_for_the_one_building(root: Path) -> None:
    """``--force`` beside a first install: it waits, then builds again; neither destroys
    the other's folder half-way, and what is left is one whole install."""
    first = start_cli(root, "agents", "install", "fake")
    second = start_cli(root, "agents", "install", "fake", "--force")
    for process in (first, second):
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    assert len((root / "npm-runs").read_text().split()) in (1, 2)
    stamp = json.loads((root / VERSION / "acp-bridge-install.json").read_text())
    assert stamp["version"] == "1.2.3"
    code, out, err = run_cli(root, "run", "fake", "Reply with exactly FORCED", "--cwd", "repo")
    assert code == 0 and json.loads(out)["output"] == "FORCED", err
