"""isolation: worktree — four concurrent runs on one repository each get their own branch
(in a repository of their own) and diff; unchanged worktrees go away; an agent in the
sandbox can commit on its branch but cannot touch the caller's repository."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from acp_bridge._os.git.worktree_creation import create_worktree
from acp_bridge._os.git.worktree_finish import finish_worktree
from acp_bridge._os.git.worktrees import WorktreeResult
from acp_bridge._os.sandbox import RunSandbox, SandboxSpec, choose_mode
from acp_bridge.errors import ConfigError


def sh(cwd: Path, script: str) -> str:
    done = subprocess.run(
        ["sh", "-ec", script], cwd=cwd, check=True, timeout=15, capture_output=True, text=True
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    (path / "src").mkdir(parents=True)
    sh(
        path,
        "git init -q -b main .; git config user.email t@t; git config user.name t\n"
        "printf 'base\\n' > src/app.txt; git add -A; git commit -qm init\n"
        "printf 'uncommitted\\n' >> src/app.txt",  # the caller's work: not carried over
    )
    return path


def test_four_concurrent_runs_get_their_own_branch_and_diff(repo: Path, tmp_path: Path) -> None:
    results: dict[int, WorktreeResult] = {}

    async def one(n: int) -> None:
        wt = await create_worktree(repo / "src", f"task{n}", state_dir=tmp_path / "state")
        assert wt.cwd == wt.path / "src"
        assert (wt.cwd / "app.txt").read_text() == "base\n"
        script = f"printf 'run {n}\\n' > mine{n}.txt"
        if n == 3:  # one agent commits its work on its branch
            script += "; git add -A; git -c user.email=a@a -c user.name=a commit -qm mine"
        await anyio.run_process(["sh", "-ec", script], cwd=wt.cwd)
        results[n] = await finish_worktree(wt, scratch=tmp_path / f"scratch{n}")

    async def all_four() -> None:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for n in range(4):
                    tg.start_soon(one, n)

    anyio.run(all_four)
    for n, result in results.items():
        assert result.kept and result.changed
        assert result.branch == f"acp-bridge/task{n}"
        assert result.files.created == (str(result.path / f"src/mine{n}.txt"),)
        assert result.files.diff is not None
        diff = result.files.diff.read_text()
        assert f"+run {n}" in diff and "uncommitted" not in diff
        assert all(f"mine{m}" not in diff for m in range(4) if m != n)
    for n, result in results.items():  # each branch in its worktree's own repository
        assert sh(result.path, "git branch --show-current") == f"acp-bridge/task{n}\n"
    assert "mine3" in sh(results[3].path, "git show --stat acp-bridge/task3")
    assert sh(repo, "git branch --list 'acp-bridge/*'") == ""  # none in the caller's
    assert sh(repo, "git worktree list --porcelain").count("worktree ") == 1
    assert sh(repo, "git status --porcelain") == " M src/app.txt\n"  # the caller's tree as left


def test_an_unchanged_worktree_is_removed_with_its_branch(repo: Path, tmp_path: Path) -> None:
    async def go() -> WorktreeResult:
        wt = await create_worktree(repo, "idle", state_dir=tmp_path / "state")
        await anyio.run_process(["sh", "-c", "mkdir -p build && touch build/x"], cwd=wt.cwd)
        (wt.path / ".gitignore").write_text("")  # tracked? no: a new file is a change…
        (wt.path / ".gitignore").unlink()  # …gone again: nothing changed
        return await finish_worktree(wt, scratch=tmp_path / "scratch")

    (repo / ".git/info/exclude").write_text("build/\n")
    result = anyio.run(go)
    assert not result.kept and not result.changed
    assert not result.path.exists()
    assert sh(repo, "git branch --list 'acp-bridge/*'") == ""
    assert result.meta() == {"branch": "", "worktree": "", "diff": "", "kept": False}


@pytest.mark.parametrize("mode", ["bwrap", "landlock"])
def test_the_sandboxed_agent_commits_on_its_branch_but_cannot_touch_the_repository(
    repo: Path, tmp_path: Path, mode: str
) -> None:
    async def go() -> tuple[WorktreeResult, int]:
        wt = await create_worktree(repo, f"box-{mode}", state_dir=tmp_path / "state")
        spec = SandboxSpec(cwd=wt.cwd, write=wt.sandbox_write_paths(), read=wt.sandbox_read_paths())
        choice = await choose_mode(mode)  # type: ignore[arg-type]
        with RunSandbox(spec, choice, tmp_parent=tmp_path / "tmp") as box:
            env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(tmp_path)}
            commit = (
                "printf 'x\\n' > new.txt; git add new.txt; git -c user.email=a@a "
                "-c user.name=a commit -qm boxed"
            )
            hooks = f"echo evil > {repo}/.git/hooks/pre-commit"
            codes = []
            for script in (commit, hooks):
                launch = box.wrap(["sh", "-c", script], env)
                with anyio.fail_after(10):
                    done = await anyio.run_process(
                        launch.argv, env=launch.env, cwd=launch.cwd, check=False
                    )
                codes.append(done.returncode)
        assert codes[0] == 0
        return await finish_worktree(wt, scratch=tmp_path / "scratch"), codes[1]

    before = sh(repo, "git count-objects -v")
    result, hook_code = anyio.run(go)
    assert hook_code != 0 and not (repo / ".git/hooks/pre-commit").exists()
    assert (repo / ".git/hooks").is_dir()  # it was there to be written to
    assert result.kept and "boxed" in sh(result.path, f"git log -1 --format=%s {result.branch}")
    assert sh(result.path, "git status --porcelain") == ""  # its .git, as the bridge wrote it
    assert sh(repo, "git count-objects -v") == before  # its commit is not in the caller's
    assert sh(result.path, "git fsck --no-progress 2>&1") == ""


def test_what_cannot_be_isolated_is_a_config_error(tmp_path: Path) -> None:
    async def create(cwd: Path, task: str) -> None:
        await create_worktree(cwd, task, state_dir=tmp_path / "state")

    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(ConfigError, match="not inside a git work tree"):
        anyio.run(create, plain, "t1")
    sh(plain, "git init -q .")
    with pytest.raises(ConfigError, match="no commit to start from"):
        anyio.run(create, plain, "t2")
    with pytest.raises(ConfigError, match="cannot name a branch"):
        anyio.run(create, plain, "../evil")
