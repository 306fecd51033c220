"""Files changed, measured: git trees for work trees (dirty-before files judged by content),
snapshots elsewhere (bounded, diffs for small text files). The changes are made by real
processes, sandboxed ones included."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from acp_bridge._os.git.changes import ChangeLimits, FilesChanged, measure_changes, take_baseline
from acp_bridge._os.sandbox import RunSandbox, SandboxSpec, choose_mode


def sh(cwd: Path, script: str) -> None:
    subprocess.run(["sh", "-ec", script], cwd=cwd, check=True, timeout=15, capture_output=True)


def measured(roots: list[Path], work: Path, change: str, cwd: Path, **kw: object) -> FilesChanged:
    """Baseline, run ``change`` (a shell script) in ``cwd``, measure."""

    async def go() -> FilesChanged:
        with anyio.fail_after(20):
            base = await take_baseline(roots, workdir=work, **kw)  # type: ignore[arg-type]
            sh(cwd, change)
            return await measure_changes(base)

    return anyio.run(go)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    sh(
        path,
        "git init -q -b main .; git config user.email t@t; git config user.name t\n"
        "printf 'a\\n' > a.txt; printf 'b\\n' > b.txt; printf 'd\\n' > dirty.txt\n"
        "mkdir sub; printf 's\\n' > sub/s.txt; printf 'build/\\n' > .gitignore\n"
        "git add -A; git commit -qm init\n"
        "printf 'dirty before\\n' >> dirty.txt; printf 'u\\n' > untracked.txt; mkdir build",
    )
    return path


def index_and_objects(repo: Path) -> tuple[str, int]:
    index = hashlib.sha256((repo / ".git/index").read_bytes()).hexdigest()
    return index, sum(len(files) for _, _, files in os.walk(repo / ".git/objects"))


def test_git_mode_reports_what_the_run_did_and_nothing_else(repo: Path, tmp_path: Path) -> None:
    before = index_and_objects(repo)
    result = measured(
        [repo],
        tmp_path / "work",
        "printf 'changed\\n' >> a.txt; rm b.txt; printf 'n\\n' > new.txt\n"
        "printf 'again\\n' >> untracked.txt; printf 'x\\n' > sub/x.txt; touch build/out.o\n"
        "touch dirty.txt",  # new mtime, same content: not a change
        repo,
    )
    assert result.created == (str(repo / "new.txt"), str(repo / "sub/x.txt"))
    assert result.modified == (str(repo / "a.txt"), str(repo / "untracked.txt"))
    assert result.deleted == (str(repo / "b.txt"),)
    assert not result.truncated
    assert result.diff is not None
    diff = result.diff.read_text()
    assert "+changed" in diff and "+again" in diff
    assert "dirty before" not in diff  # a change from before the run is not the run's
    assert index_and_objects(repo) == before  # the user's index and objects: untouched


def test_git_mode_sees_a_dirty_file_edited_again_and_commits_made_by_the_run(
    repo: Path, tmp_path: Path
) -> None:
    result = measured(
        [repo / "sub"],  # a root below the top of the work tree
        tmp_path / "work",
        "printf 'more\\n' >> ../dirty.txt; printf 'c\\n' > s.txt; printf 'y\\n' > y.txt\n"
        "git add -A .; git commit -qm 'by the agent'",
        repo / "sub",
    )
    assert result.paths == [str(repo / "sub/s.txt"), str(repo / "sub/y.txt")]  # root only

    result = measured([repo], tmp_path / "work2", "printf 'more\\n' >> dirty.txt", repo)
    assert result.modified == (str(repo / "dirty.txt"),)
    assert result.diff is not None and "+more" in result.diff.read_text()


def test_snapshot_mode_outside_git_with_a_diff_for_small_text(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    sh(root, "printf 'one\\n' > keep.txt; printf 'x\\n' > gone.txt; head -c 64 /dev/zero > bin")
    result = measured(
        [root],
        tmp_path / "work",
        "printf 'two\\n' >> keep.txt; rm gone.txt; mkdir -p d/e; printf 'new\\n' > d/e/f.txt\n"
        "head -c 65 /dev/zero > bin; ln -s keep.txt link",
        root,
    )
    assert result.created == (str(root / "d/e/f.txt"), str(root / "link"))
    assert result.modified == (str(root / "bin"), str(root / "keep.txt"))
    assert result.deleted == (str(root / "gone.txt"),)
    assert result.diff is not None
    diff = result.diff.read_text()
    assert "+two" in diff and "-x" in diff and "+++ b/d/e/f.txt" in diff
    assert "Files a/bin and b/bin differ" in diff


def test_a_large_tree_is_cut_short_and_says_so(tmp_path: Path) -> None:
    root = tmp_path / "big"
    root.mkdir()
    sh(root, "for i in $(seq 1 40); do printf x > f$i; done")
    result = measured(
        [root], tmp_path / "work", "rm f1; printf y > zz", root, limits=ChangeLimits(max_files=10)
    )
    assert result.truncated
    assert result.deleted == (str(root / "f1"),)  # what it saw, it judged


@pytest.mark.parametrize(
    ("setup", "change", "changed"),
    [
        ("", "", ()),  # small: walked on the event loop
        # more files, bytes or folders than are walked inline: judged whole all the same
        ("for i in $(seq 1 80); do printf x > f$i; done", "rm f80", ("deleted", "f80")),
        (
            "head -c 20000 /dev/zero | tr '\\0' 'a' | fold > big.txt; echo >> big.txt",
            "echo tail >> big.txt",
            ("modified", "big.txt"),
        ),
        ("mkdir -p $(seq -f 'd%g/e' 1 20)", "printf z > d20/e/z", ("created", "d20/e/z")),
    ],
)
def test_roots_over_the_inline_bounds_are_measured_the_same(
    tmp_path: Path, setup: str, change: str, changed: tuple[str, ...]
) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    sh(root, f"printf 'one\\n' > keep.txt; printf 'x\\n' > gone.txt\n{setup}")
    assert measured([root], tmp_path / "work0", "true", root) == FilesChanged()
    script = f"printf 'two\\n' >> keep.txt; rm gone.txt; printf n > new\n{change}"
    result = measured([root], tmp_path / "work1", script, root)
    expected: dict[str, set[str]] = {
        "created": {"new"},
        "modified": {"keep.txt"},
        "deleted": {"gone.txt"},
    }
    if changed:
        expected[changed[0]].add(changed[1])
    for kind, names in expected.items():
        assert getattr(result, kind) == tuple(sorted(str(root / name) for name in names))
    assert result.diff is not None and not result.truncated
    diff = result.diff.read_text()
    assert "+two" in diff and "-x" in diff
    assert ("+tail" in diff) == (changed[1:] == ("big.txt",))  # a file too big to keep inline


def test_an_ignored_root_inside_a_repo_is_measured_by_snapshot(repo: Path, tmp_path: Path) -> None:
    result = measured([repo / "build"], tmp_path / "work", "printf o > out.o", repo / "build")
    assert result.created == (str(repo / "build/out.o"),)


@pytest.mark.parametrize("mode", ["bwrap", "landlock"])
def test_changes_made_inside_the_sandbox_by_agent_and_terminal(
    repo: Path, tmp_path: Path, mode: str
) -> None:
    async def go() -> FilesChanged:
        base = await take_baseline([repo], workdir=tmp_path / "work")
        spec = SandboxSpec(cwd=repo, write=(repo,))
        choice = await choose_mode(mode)  # type: ignore[arg-type]
        with RunSandbox(spec, choice, tmp_parent=tmp_path / "state") as box:
            env = {"PATH": os.environ.get("PATH", os.defpath)}
            for script in ("printf 'agent\\n' > by_agent.txt", "echo x > f.txt"):  # "terminal"
                launch = box.wrap(["sh", "-c", script], env)
                with anyio.fail_after(10):
                    await anyio.run_process(launch.argv, env=launch.env, cwd=launch.cwd)
        return await measure_changes(base)

    result = anyio.run(go)
    assert result.created == (str(repo / "by_agent.txt"), str(repo / "f.txt"))


def test_measuring_thousands_of_new_files_stops_at_its_time_budget(tmp_path: Path) -> None:
    """Issue 19, class 3: the walk, the comparison and the diffs all look at the budget (a
    folder of 200 000 new files took minutes to read and diff, past any deadline)."""
    root = tmp_path / "many"
    root.mkdir()

    async def go() -> tuple[FilesChanged, float]:
        limits = ChangeLimits(max_seconds=0.05, max_files=1_000_000)
        base = await take_baseline([root], workdir=tmp_path / "work", limits=limits)
        for i in range(5_000):  # small text files: each read and diffed once found
            (root / f"f{i:05d}.txt").write_text(f"line {i}\n" * 20)
        started = anyio.current_time()
        with anyio.fail_after(20):
            result = await measure_changes(base)
        return result, anyio.current_time() - started

    result, took = anyio.run(go)
    assert result.truncated and len(result.created) < 5_000
    assert took < 5.0, took  # about two budgets, not the time to diff them all


def test_a_cancelled_measurement_returns_at_once(tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()

    async def go() -> float:
        limits = ChangeLimits(max_seconds=60, max_files=1_000_000)
        base = await take_baseline([root], workdir=tmp_path / "work", limits=limits)
        for i in range(3_000):
            (root / f"f{i:05d}.txt").write_text(f"line {i}\n" * 20)
        started = anyio.current_time()
        with anyio.move_on_after(0.05):
            await measure_changes(base)
        return anyio.current_time() - started

    assert anyio.run(go) < 2.0  # the thread is told to stop; the caller does not wait for it
