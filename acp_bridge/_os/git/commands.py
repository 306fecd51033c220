"""Running git for the bridge: one helper with a deadline, a clean environment and a
bounded retry when another git process holds a lock.

Why a clean environment: ``GIT_DIR``, ``GIT_INDEX_FILE``, ``GIT_WORK_TREE`` … inherited from
the host (a bridge started by a git hook has them) would point our commands at another
repository or index. Why no hooks (``core.hooksPath=/dev/null``): ``git worktree add``
runs ``post-checkout``, and the bridge should not run a repository's code outside any
sandbox as a side effect of measuring it. Why retry: four runs on one repository start
``git worktree add`` at the same moment, and git answers a held ``*.lock`` with an error,
not a wait.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import anyio

from acp_bridge._os.fs.private_files import private_dir
from acp_bridge.errors import BridgeError, ErrorCode

DEFAULT_TIMEOUT = 60.0
MAX_ATTEMPTS = 8
LOCK_SIGNS = (
    ".lock': File exists",
    "Unable to create",
    "cannot lock ref",
    "could not lock",
    # `git worktree add` reads every other worktree's admin dir; one being created by a
    # concurrent run has no `commondir` yet. Transient like a held lock: look again.
    "/commondir: ",
    "/gitdir: ",
)
BASE_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


class GitError(BridgeError):
    """A git command the bridge needed failed or ran past its deadline (the run's
    workspace could not be set up, hence ``spawn_failed``)."""

    code = ErrorCode.SPAWN_FAILED


class GitResult:
    """A git command's exit status, output and errors."""

    # A plain class: a dataclass compiles its generated methods from source when its module
    # loads, on every start-up's path (~4 M instructions frozen with slots).
    __slots__ = ("returncode", "stderr", "stdout")

    def __init__(self, returncode: int, stdout: bytes, stderr: str) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "surrogateescape").strip()


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        LC_ALL="C",  # messages we match (lock errors) in one language
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",  # `status` must not take index.lock behind our back
    )
    env.update(extra or {})
    return env


def may_be_in_work_tree(path: Path) -> bool:
    """Whether git could find a work tree at ``path``: a ``.git`` (folder, or the file of a
    linked worktree or submodule) in it or a folder above. Without one, ``git rev-parse``
    can only fail — our git sees no ``GIT_DIR`` (:func:`git_env`) — so a run outside any
    repository is told so by a few ``lstat`` calls, not by starting git (a fork of the
    whole bridge, per run)."""
    text = str(path)
    if not text.startswith("/"):
        return any(os.path.lexists(folder / ".git") for folder in (path, *path.parents))
    while True:  # on the text of an absolute Path: its folders are the text's prefixes
        if os.path.lexists(f"{text}/.git" if text != "/" else "/.git"):
            return True
        if text == "/":
            return False
        text = text.rpartition("/")[0] or "/"


async def git(
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
) -> GitResult:
    """``git ARGS`` in ``cwd``. Retries (with jittered, doubling pauses) while git reports a
    held lock; the whole call, retries included, ends by ``timeout``. Raises
    :class:`GitError` on failure when ``check``."""
    argv = ["git", *BASE_CONFIG, *args]
    full_env = git_env(env)
    pause = 0.05
    try:
        with anyio.fail_after(timeout):
            for attempt in range(MAX_ATTEMPTS):
                done = await anyio.run_process(
                    argv, cwd=cwd, env=full_env, check=False, stdin=subprocess.DEVNULL
                )
                result = GitResult(
                    done.returncode, done.stdout, done.stderr.decode("utf-8", "replace")
                )
                locked = any(sign in result.stderr for sign in LOCK_SIGNS)
                if result.returncode == 0 or not locked or attempt == MAX_ATTEMPTS - 1:
                    break
                await anyio.sleep(pause * (0.5 + random.random()))
                pause = min(pause * 2, 1.0)
    except TimeoutError:
        raise GitError(f"git {args[0]} in {cwd} timed out after {timeout:g} s") from None
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror or exc}") from exc
    if check and result.returncode != 0:
        first = result.stderr.strip().splitlines()[-1:] or [f"exit code {result.returncode}"]
        raise GitError(f"git {args[0]} failed in {cwd}: {first[0]}")
    return result


# --- trees: the state of a working tree as one git object ------------------------------


async def git_tree(root: Path, scratch: Path, *, timeout: float, index: Path | None) -> str:
    """The tree object of ``root``'s working tree now (tracked and untracked files, not
    ignored ones), built in ``scratch``. ``index``: a real index to start from (only
    files whose stat changed are hashed again)."""
    env = _scratch_env(scratch, await _objects_dir(root, timeout))
    if index is not None:
        await anyio.to_thread.run_sync(_seed_index, index, Path(env["GIT_INDEX_FILE"]))
    await git(
        "add", "-A", "--ignore-errors", "--", ".", cwd=root, env=env, timeout=timeout, check=False
    )  # unreadable files are skipped (and not reported), not fatal
    return (await git("write-tree", cwd=root, env=env, timeout=timeout)).text


def _seed_index(index: Path, scratch_index: Path) -> None:
    if index.is_file() and not scratch_index.exists():
        shutil.copyfile(index, scratch_index)


async def _objects_dir(root: Path, timeout: float) -> str:
    text = (await git("rev-parse", "--git-path", "objects", cwd=root, timeout=timeout)).text
    return str((root / text).resolve())


def _scratch_env(scratch: Path, objects: str) -> dict[str, str]:
    private_dir(scratch / "objects")
    return {
        # What git writes there (objects, the index) private whatever the umask.
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.sharedRepository",
        "GIT_CONFIG_VALUE_0": "0600",
        "GIT_INDEX_FILE": str(scratch / "index"),
        "GIT_OBJECT_DIRECTORY": str(scratch / "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": objects,
    }


async def compare_trees(
    root: Path,
    top: Path,
    scratch: Path,
    old: str,
    new: str,
    *,
    timeout: float,
    diff: Path | None,
) -> tuple[list[str], list[str], list[str]]:
    """Created, modified, deleted paths (absolute) under ``root`` between two trees; the
    text diff of the two written to ``diff`` when given."""
    env = _scratch_env(scratch, await _objects_dir(root, timeout))
    names = await git(
        "diff",
        "--no-renames",
        "--name-status",
        "-z",
        old,
        new,
        "--",
        ".",
        cwd=root,
        env=env,
        timeout=timeout,
    )
    fields = names.stdout.decode("utf-8", "surrogateescape").split("\0")
    created: list[str] = []
    modified: list[str] = []
    deleted: list[str] = []
    for status, path in zip(fields[0::2], fields[1::2], strict=False):
        target = {"A": created, "D": deleted}.get(status[:1], modified)
        target.append(str(top / path))
    if diff is not None:
        await git(
            "diff",
            "--no-renames",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            f"--output={diff}",
            old,
            new,
            "--",
            ".",
            cwd=root,
            env=env,
            timeout=timeout,
        )
    return created, modified, deleted
