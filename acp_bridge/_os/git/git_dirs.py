"""Git directories the bridge writes itself, and what it reads back from one an agent had.

Why: the bridge's git runs outside any sandbox. Run on a repository an agent could write, git
reads that repository's configuration (``core.fsmonitor``, filter and diff drivers,
``include.path``, ``core.worktree``), its ``.git`` file, ``commondir`` and alternates — each
a way to make the bridge run the agent's program, or look where the agent says. Filtering
those keys would be a list to keep complete; instead the bridge never gives git such a
directory:

- every git command of the bridge that reads a work tree an agent may have changed runs with
  ``GIT_DIR`` set to a directory this module wrote, which no agent can reach (it lies in
  the bridge's state, hidden from every sandbox, or is written before the agent starts), and
  with neither the system's nor the user's configuration (:func:`own_git_env`): its
  configuration is the few lines :func:`write_git_dir` writes. git then reads nothing of
  the work tree as git metadata (every entry named ``.git`` is skipped);
- what the bridge needs from a repository the agent had — its branch's commit, its objects
  — is read as plain data: a ref file or ``packed-refs`` line read through descriptors that
  never follow a link (:func:`branch_tip`), object files moved by name
  (:func:`take_objects`), and the commit then checked by git in a directory of the bridge's.

Both kinds borrow the caller's objects through ``objects/info/alternates`` (written here,
naming the caller's object directory, which the sandbox leaves read-only): a checkout costs
no copy, and what an agent commits lands in its own directory, never in the caller's.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from acp_bridge._os.fs.private_files import new_private_file, private_dir

MAX_REF_BYTES = 4096
MAX_PACKED_REFS = 4 << 20
"""The largest ``packed-refs`` of an agent's repository read for its branch (past it: no
branch is read, as if the agent had removed it)."""
HEX_LENGTH = {"sha1": 40, "sha256": 64}
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def own_git_env(git_dir: Path, work_tree: Path) -> dict[str, str]:
    """The environment of a bridge's git command on ``work_tree`` through ``git_dir`` (one
    :func:`write_git_dir` wrote): no repository is looked for, no other configuration read."""
    return {
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(work_tree),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }


def write_git_dir(
    path: Path,
    *,
    borrow: Sequence[Path],
    object_format: str,
    head: str,
    commit: str | None = None,
    detached: bool = False,
    files: Mapping[str, bytes] | None = None,
) -> None:
    """A new git directory at ``path`` (made private, 0700 and 0600): its configuration, the
    object folders ``borrow`` borrowed, ``HEAD`` on branch ``head`` at ``commit`` (no commit:
    an unborn branch; ``detached``: ``HEAD`` is ``commit`` itself, on no branch), and
    ``files`` (``info/exclude``, ``shallow``) as given."""
    if object_format not in HEX_LENGTH:
        raise ValueError(f"unknown object format {object_format!r}")
    version = "0" if object_format == "sha1" else "1"
    config = (
        "[core]\n"
        f"\trepositoryformatversion = {version}\n"
        "\tfilemode = true\n"
        "\tbare = false\n"
        "\tlogallrefupdates = true\n"
        "\tsharedRepository = 0600\n"  # what git writes there: private whatever the umask
    )
    if object_format != "sha1":
        config += f"[extensions]\n\tobjectformat = {object_format}\n"
    branch_dir = (path / "refs" / "heads" / head).parent
    for folder in (path / "objects" / "info", path / "objects" / "pack", branch_dir):
        private_dir(folder)
    for folder in (path / "refs" / "tags", path / "info"):
        private_dir(folder)
    contents = {"config": config.encode(), "HEAD": f"ref: refs/heads/{head}\n".encode()}
    if borrow:
        contents["objects/info/alternates"] = b"".join(os.fsencode(p) + b"\n" for p in borrow)
    if commit is not None and detached:
        contents["HEAD"] = commit.encode() + b"\n"
    elif commit is not None:
        contents[f"refs/heads/{head}"] = commit.encode() + b"\n"
    for name, data in {**contents, **(files or {})}.items():
        _write(path / name, data)


def borrowed_by(objects: Path) -> list[Path]:
    """The object folders the object folder ``objects`` borrows itself (its
    ``info/alternates``, one level: git follows the rest), resolved."""
    listed = read_small(objects / "info" / "alternates", MAX_REF_BYTES * 16) or b""
    found = []
    for line in listed.decode("utf-8", "surrogateescape").splitlines():
        if line.strip() and not line.startswith("#"):
            found.append(Path(os.path.realpath(objects / line.strip())))
    return found


def holds_objects(objects: Path) -> bool:
    """Whether the object folder ``objects`` holds an object of its own (a pack, or a loose
    object): a fresh repository that borrows all of its objects holds none."""
    try:
        with os.scandir(objects) as entries:
            for entry in entries:
                if entry.name == "pack" or _LOOSE_FOLDER(entry.name):
                    with os.scandir(entry.path) as inside:
                        if any(inside):
                            return True
    except OSError:
        return False
    return False


def set_branch(git_dir: Path, branch: str, commit: str) -> None:
    """Point ``branch`` of a git directory the bridge wrote at ``commit``."""
    _write(git_dir / "refs" / "heads" / branch, commit.encode() + b"\n")


def _write(path: Path, data: bytes) -> None:
    with os.fdopen(new_private_file(path), "wb") as file:
        file.write(data)


def read_small(path: Path, limit: int) -> bytes | None:
    """The bytes of the regular file ``path`` if it has at most ``limit`` of them (None for
    anything else: missing, a link, a FIFO, a device, a folder, too big)."""
    try:
        fd = os.open(path, _FILE)
    except OSError:
        return None
    return _read_open(fd, limit)


def _read_open(fd: int, limit: int) -> bytes | None:
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as file:
            data = file.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= limit else None


def _read_at(top: int, names: list[str], limit: int) -> bytes | None:
    """``names`` below the open folder ``top``, each component a real folder (no link)."""
    fds: list[int] = []
    try:
        where = top
        for name in names[:-1]:
            where = os.open(name, _DIR, dir_fd=where)
            fds.append(where)
        fd = os.open(names[-1], _FILE, dir_fd=where)
    except OSError:
        return None
    finally:
        for fd_ in fds:
            os.close(fd_)
    return _read_open(fd, limit)


def branch_tip(git_dir: Path, branch: str, object_format: str) -> str | None:
    """The commit id ``refs/heads/<branch>`` holds in ``git_dir`` — a repository an agent
    may have changed in any way — read as data: from its loose ref, else its ``packed-refs``;
    None when ``git_dir`` is not a folder, a component on the way is a link or not what git
    would make, or the branch is not there."""
    is_id = re.compile(f"[0-9a-f]{{{HEX_LENGTH[object_format]}}}").fullmatch
    try:
        top = os.open(git_dir, _DIR)
    except OSError:
        return None
    try:
        loose = _read_at(top, ["refs", "heads", *branch.split("/")], MAX_REF_BYTES)
        if loose is not None:
            text = loose.decode("ascii", "replace").strip()
            return text if is_id(text) else None
        packed = _read_at(top, ["packed-refs"], MAX_PACKED_REFS) or b""
        wanted = f"refs/heads/{branch}".encode()
        for line in packed.splitlines():
            commit, _, name = line.partition(b" ")
            if name == wanted and is_id(commit.decode("ascii", "replace")):
                return commit.decode()
        return None
    finally:
        os.close(top)


_LOOSE_FOLDER = re.compile(r"[0-9a-f]{2}").fullmatch
_PACK_FILE = re.compile(r"pack-[0-9a-f]{40}(?:[0-9a-f]{24})?\.(?:pack|idx|rev)").fullmatch


def take_objects(source: Path, target: Path, object_format: str) -> int:
    """Move the object files of ``source`` (an agent's ``objects`` folder) into ``target``
    (one of the bridge's): loose objects and packs, each a regular file with a name git
    gives them; nothing else — no ``info/alternates``, no link, no folder a link leads to.
    Returns how many were moved. Both are on one filesystem (the bridge's state)."""
    loose = re.compile(f"[0-9a-f]{{{HEX_LENGTH[object_format] - 2}}}").fullmatch
    moved = 0
    try:
        top = os.open(source, _DIR)
    except OSError:
        return 0
    try:
        for folder in sorted(os.listdir(top)):  # noqa: PTH208 (a descriptor: no path to follow)
            if _LOOSE_FOLDER(folder):
                moved += _move_files(top, folder, target / folder, loose)
            elif folder == "pack":
                moved += _move_files(top, folder, target / "pack", _PACK_FILE)
    except OSError:
        pass
    finally:
        os.close(top)
    return moved


def _move_files(top: int, folder: str, target: Path, named: Callable[[str], object]) -> int:
    try:
        fd = os.open(folder, _DIR, dir_fd=top)
    except OSError:
        return 0
    moved = 0
    try:
        for name in sorted(os.listdir(fd)):  # noqa: PTH208 (a descriptor: no path to follow)
            with contextlib.suppress(OSError):
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not named(name) or not stat.S_ISREG(info.st_mode):
                    continue
                if not moved:
                    private_dir(target)
                if os.path.lexists(target / name):
                    continue  # the same object already there
                os.rename(name, target / name, src_dir_fd=fd)
                moved += 1
    finally:
        os.close(fd)
    return moved
