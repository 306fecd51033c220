"""Running git for the bridge: one helper with a deadline, a clean environment and a
bounded retry when another git process holds a lock.

Why a clean environment: ``GIT_DIR``, ``GIT_INDEX_FILE``, ``GIT_WORK_TREE`` … inherited from
the host (a bridge started by a git hook has them) would point our commands at another
repository or index. Why no hooks and no file-system monitor (``core.hooksPath=/dev/null``,
``core.fsmonitor=false``), everywhere: the bridge should not run a repository's code outside
any sandbox as a side effect of looking at it. (A work tree an agent may have changed is
never read through its own repository at all: :mod:`.git_dirs`.) Why retry: git answers a
``*.lock`` another git process holds — the user's, on the same repository — with an error,
not a wait.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Mapping
from pathlib import Path

import anyio

from acp_bridge.errors import BridgeError, ErrorCode

DEFAULT_TIMEOUT = 60.0
MAX_ATTEMPTS = 8
LOCK_SIGNS = (
    ".lock': File exists",
    "Unable to create",
    "cannot lock ref",
    "could not lock",
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
