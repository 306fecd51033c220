"""The caller's repository is untouchable (issue 37, class 1): whatever an agent does in a
worktree run — ``isolation: worktree``, compare's attempts, a batch task's ``git`` workspace
— the caller's repository is byte for byte as before (every entry under it hashed: content,
link targets, modes, owners), ``git fsck`` finds it whole, nothing of the run is left in the
bridge's state but a worktree kept on purpose, and no program the agent planted ran outside
its sandbox — not while the bridge measured, kept or removed the worktree, nor when a person
then uses git in a kept one.

Each case of ``tests/sandbox/hostile_repository.py`` is one member of the class; every case
runs under bubblewrap and under Landlock, with the worktree removed and kept."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_bridge import batch, compare
from acp_bridge._batch.tasks import BatchTask, Workspace
from acp_bridge._entries.request import EntryRequest
from acp_bridge._os.fs.locations import state_dir
from acp_bridge._os.fs.removal import remove_tree
from acp_bridge.config import LoadedConfig
from tests.conftest import AgentHarness
from tests.helpers import run_bounded
from tests.sandbox.hostile_repository import CASES

MODES = ["bwrap", "landlock"]
AGENT = Path(__file__).parent.parent / "agents" / "repository_hostile_agent.py"
SCRIPT = Path(__file__).with_name("hostile_repository.py")
TOUCH = shutil.which("touch") or "/usr/bin/touch"


def git(where: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """git as a person runs it: their environment and configuration."""
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(where), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=check)


def snapshot(top: Path) -> dict[str, tuple[int, int, int, str]]:
    """Every entry under ``top``, ``top`` included: type and mode, owner, and the digest of
    its content (a file) or its target (a link)."""
    state = {}
    for folder, dirs, files in os.walk(top):
        for path in [Path(folder)] + [Path(folder, name) for name in (*dirs, *files)]:
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                what = "-> " + os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                what = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                what = ""
            state[str(path)] = (info.st_mode, info.st_uid, info.st_gid, what)
    return state


def whole(repo: Path) -> None:
    checked = git(repo, "fsck", "--strict", "--no-dangling", "--no-progress", check=False)
    assert checked.returncode == 0 and not checked.stdout + checked.stderr, checked


def folder_of(repo: Path) -> str:
    return f"{repo.name}-{hashlib.sha256(str(repo.resolve()).encode()).hexdigest()[:8]}"


def left_in_state(repo: Path) -> list[str]:
    """The worktrees and records of ``repo``'s runs in the bridge's state."""
    found = []
    for kind in ("worktrees", "worktree-records"):
        found += [str(p) for p in (state_dir() / kind / folder_of(repo)).glob("*")]
    return sorted(found)


class Caller:
    """The caller's repository, a marker no planted program may create, and the config."""

    def __init__(self, harness: AgentHarness, mode: str) -> None:
        self.repo = harness.workspace
        git(self.repo, "init", "-q", "-b", "main")
        (self.repo / "README.md").write_text("the project\n")
        (self.repo / "src").mkdir()
        (self.repo / "src" / "app.py").write_text("print('app')\n")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", "start")
        git(self.repo, "tag", "v1")
        (self.repo / "README.md").write_text("the caller's own work\n")  # not committed
        self.marker = harness.root / "planted-program-ran"
        self.hostile = {
            "caller_git": str(self.repo / ".git"),
            "caller_top": str(self.repo),
            "marker": str(self.marker),
            "touch": TOUCH,
        }
        profile = {
            "command": sys.executable,
            "args": [str(AGENT)],
            "env": {"HOSTILE_REPOSITORY": json.dumps(self.hostile)},
            "sandbox": {"mode": mode},
        }
        self.config: LoadedConfig = harness.config({"hostile": profile}, sandbox={"mode": mode})
        self.before = snapshot(self.repo)

    def assert_untouched(self, *, only_git: bool = False) -> None:
        git_dir = str(self.repo / ".git")
        now, before = snapshot(self.repo), self.before
        if only_git:
            now, before = (_below(d, git_dir) for d in (now, before))
        assert now == before
        whole(self.repo)
        assert not self.marker.exists(), "a planted program ran outside the sandbox"


def _below(entries: dict[str, Any], top: str) -> dict[str, Any]:
    return {
        path: what for path, what in entries.items() if path == top or path.startswith(top + "/")
    }


def use_as_a_person(kept: Path) -> None:
    """What a person does in a kept worktree: none of it may run the agent's programs."""
    assert (kept / ".git").is_dir() and not (kept / ".git").is_symlink()
    for args in (["status"], ["log", "-3", "--stat"], ["diff", "HEAD"], ["branch", "-a"]):
        done = git(kept, *args, check=False)
        assert done.returncode == 0, (args, done.stderr)
    whole(kept)


@pytest.mark.parametrize("keep", ["never", "always"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", MODES)
def test_nothing_an_agent_does_in_its_worktree_reaches_the_callers_repository(
    harness: AgentHarness, mode: str, case: str, keep: str
) -> None:
    caller = Caller(harness, mode)
    result = harness.run(
        "hostile", case, caller.config, isolation="worktree", keep_worktree=keep, guard=90
    )
    assert result.status == "done", result.error
    report = json.loads(str(result.output))
    assert report["case"] == "done", report
    # The bridge's file service, which serves outside any sandbox, refuses it too.
    into_git = {k: v for k, v in report.items() if k.startswith("client write /")}
    if case != "caller-git-writes":  # `escape` is a folder of its own then, not a link
        into_git = {k: v for k, v in into_git.items() if not k.endswith("/escape/config")}
    assert len(into_git) >= 2 and set(into_git.values()) == {"refused"}, into_git
    if case == "caller-git-writes":
        done = {k: v for k, v in report.items() if k != "case" and not k.startswith("client")}
        allowed = {"symlink out"}  # a link in its own worktree: writing through it is not
        if mode == "landlock":  # not a file's mode: put back at the end (asserted below)
            allowed |= {"chmod config", "chmod objects", "chmod .git"}
        assert all(v.split(":")[0] in ("denied", "failed") for k, v in done.items()
                   if k not in allowed), done  # fmt: skip
    worktree = result.meta.worktree or {}
    files = result.meta.files_changed or []
    assert any(path.endswith("/work.txt") for path in files), files  # measured all the same
    if keep == "always":
        kept = Path(str(worktree["worktree"]))
        assert worktree["kept"] and left_in_state(caller.repo) == sorted(
            [str(kept), str(state_dir() / "worktree-records" / folder_of(caller.repo) / kept.name)]
        )
        use_as_a_person(kept)
        log = git(kept, "log", "-1", "--format=%s").stdout.strip()
        if case in ("commit", "commit-and-plant"):
            assert log == "the agent's work"  # its commit kept, in its own repository
        remove_tree(kept)
    else:
        assert not worktree.get("kept") and left_in_state(caller.repo) == []
    caller.assert_untouched()


@pytest.mark.parametrize("mode", MODES)
def test_a_batch_tasks_git_workspace_leaves_the_repository_as_it_was(
    harness: AgentHarness, mode: str
) -> None:
    caller = Caller(harness, mode)
    config = json.dumps(caller.hostile)
    tasks = [
        BatchTask(
            EntryRequest(
                entry="bash",
                task=f"{shlex.quote(sys.executable)} {SCRIPT} {case} {shlex.quote(config)}; pwd",
            ),
            workspace=Workspace(git=str(caller.repo)),
        )
        for case in CASES
    ]
    results = run_bounded(batch, tasks, config=caller.config, limit=240)
    for case, result in zip(CASES, results, strict=True):
        assert result.status == "done", (case, result.error, result.output)
        stdout = str(result.output["stdout"])
        # It did what it could: git itself fails there when the repository lies under
        # /tmp, which the sandbox hides (the objects its workspace borrows are there).
        assert json.loads(stdout.splitlines()[-2])["case"], (case, stdout)
        assert "work.txt" in (result.meta.files_changed or []), (case, result.meta)
        assert not Path(stdout.splitlines()[-1]).exists(), case  # the workspace is gone
    caller.assert_untouched()


@pytest.mark.parametrize("mode", MODES)
def test_compare_applies_the_winner_and_nothing_else(harness: AgentHarness, mode: str) -> None:
    caller = Caller(harness, mode)
    (caller.repo / "README.md").write_text("the project\n")  # apply wants a clean tree
    caller.before = snapshot(caller.repo)
    result = run_bounded(
        compare, "hostile", "commit-and-plant", n=2, verify="test -f work.txt",
        cwd=caller.repo, config=caller.config, apply=True, limit=180,
    )  # fmt: skip
    assert result.winner is not None and result.apply is not None, result
    assert result.apply.applied, result.apply
    assert all(a.verifier is not None and a.verifier.passed for a in result.attempts)
    assert (caller.repo / "work.txt").read_text() == "hostile\n"  # the winner's diff
    caller.assert_untouched(only_git=True)  # its .git: not even the winner's objects
    assert left_in_state(caller.repo) == []
    status = git(caller.repo, "status", "--porcelain").stdout
    assert "work.txt" in status and not caller.marker.exists()


@pytest.mark.parametrize("root", ["parent", "git folder elsewhere"])
def test_a_write_root_that_holds_the_callers_repository_is_refused(
    harness: AgentHarness, root: str
) -> None:
    caller = Caller(harness, "bwrap")
    if root == "git folder elsewhere":  # a repository whose .git lives apart from its files
        moved = harness.root / "elsewhere" / "repo.git"
        moved.parent.mkdir()
        (caller.repo / ".git").rename(moved)
        (caller.repo / ".git").write_text(f"gitdir: {moved}\n")
        caller.before = snapshot(caller.repo) | snapshot(moved.parent)
        writable = moved.parent
    else:
        writable = harness.root
    profile = {"command": sys.executable, "args": [str(AGENT)], "write_roots": [str(writable)]}
    config = harness.config({"hostile": profile}, sandbox={"mode": "bwrap"})
    result = harness.run("hostile", "caller-git-writes", config, isolation="worktree", guard=60)
    assert result.status == "failed" and result.meta.error_code == "config_error", result
    what = "git folder" if root == "git folder elsewhere" else "working tree"
    assert f"holds the repository's {what}" in str(result.error), result.error
    now = snapshot(caller.repo) | (snapshot(writable) if root != "parent" else {})
    assert now == caller.before and left_in_state(caller.repo) == []
