"""``isolation: worktree`` end to end: four runs at once on one repository, each in its own
worktree on its own branch, each with its own diff; the caller's repository untouched."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio

from acp_bridge import SubtaskResult, acp_spawn
from tests.helpers import default_config


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_four_concurrent_worktree_runs_each_get_their_own_branch_and_diff(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("hello\n")
    git(repo, "add", "README.md")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    config = default_config()
    results: dict[int, SubtaskResult] = {}

    async def one(n: int) -> None:
        task = f"write notes-{n}.txt: run {n}"
        results[n] = await acp_spawn("demo", task, cwd=repo, config=config, isolation="worktree")

    async def all_four() -> None:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for n in range(4):
                    tg.start_soon(one, n)

    anyio.run(all_four)
    branches = set()
    for n, result in results.items():
        assert result.status == "done", result.error
        worktree = result.meta.worktree or {}
        assert worktree["kept"] and worktree["branch"] == f"acp-bridge/{result.task_id}"
        branches.add(worktree["branch"])
        path = Path(str(worktree["worktree"]))
        assert (path / f"notes-{n}.txt").read_text() == f"run {n}\n"
        assert result.meta.files_changed == [str(path / f"notes-{n}.txt")]
        diff = Path(str(worktree["diff"])).read_text()
        assert f"+run {n}" in diff and "notes-" + str((n + 1) % 4) not in diff
        assert git(path, "branch", "--show-current") == worktree["branch"]  # in its own
    assert len(branches) == 4
    assert git(repo, "status", "--porcelain") == ""  # the caller's tree is untouched
    assert sorted(p.name for p in repo.iterdir()) == [".git", "README.md"]
    assert git(repo, "branch", "--format=%(refname:short)") == "main"  # nothing of the runs
