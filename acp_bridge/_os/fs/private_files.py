"""The bridge's own files — the state directory, the parse cache: user data, kept private.

Transcripts hold prompts and file contents, diffs hold code, the run store holds every
task; scratch copies and the sandbox's private ``/tmp`` hold whatever the run touched. So:

- **Folders 0700, files 0600, whatever the umask.** Every folder the bridge makes for its
  own files is created, and every file written, through here: the mode is set with
  ``chmod``/``fchmod`` after creation (a ``mode`` argument is only ever narrowed by the
  umask — a umask of 0277 would make a store nobody can write, one of 0 a transcript others
  can read). A folder of ours found with wider permissions (an older version made some
  with the umask's) is narrowed to 0700.
- **Never through a symlink planted among them.** Below the top folder (the state
  directory itself may be a link the user made, to another disk), every component is
  checked to be a real directory owned by this user, and a file is created new
  (``O_EXCL | O_NOFOLLOW``): an entry already at its name — a symlink to ``~/.bashrc``, a
  hard link — is removed first, never written through.
- **One writer at a time.** A folder that is built whole (an agent's install) is built under
  :class:`FolderLock`, an ``flock`` on a lock file beside it: a second process waits for the
  first, then finds its work done. The lock goes with the process (no stale lock file to
  clear after a crash); the file itself stays, empty, so no two processes ever lock two
  different files of the same name.
- **A failure names the path.** A read-only or full state directory, a ``HOME`` that is a
  file, a symlink where a folder should be: :class:`~acp_bridge.errors.StateDirError` (a
  ``config_error``: the fix is ``XDG_STATE_HOME``), never an ``OSError`` traceback. Callers
  that can go on without the file (a transcript, a cache entry) turn it into a warning.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path

from acp_bridge._os.fs.locations import agents_dir, state_dir
from acp_bridge.errors import StateDirError

FOLDER_MODE = 0o700
FILE_MODE = 0o600
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _failed(path: Path, exc: OSError, doing: str) -> StateDirError:
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        reason = "a part of the path is a file, not a folder (is HOME a file?)"
    return StateDirError(
        f"cannot {doing} {path}: {reason} (the bridge keeps its own files there; "
        f"set {_placed_by(path)} to a writable folder, or fix the path)"
    )


def _placed_by(path: Path) -> str:
    """The variable that places ``path``: the agents' prefix is data, the rest state."""
    return "XDG_DATA_HOME" if _within(str(path), str(agents_dir())) else "XDG_STATE_HOME"


def _own_folder(path: Path, *, narrow: bool = True) -> None:
    """Refuse ``path`` unless it is a real folder of this user; narrow it to 0700."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise StateDirError(
            f"{path} is a symlink where the bridge keeps its own files (to "
            f"{path.readlink()}): remove it; the bridge never writes through one"
        )
    if not stat.S_ISDIR(info.st_mode):
        raise StateDirError(
            f"{path} should be a folder of the bridge's own files: it is a file; move it away"
        )
    if info.st_uid != os.geteuid():
        raise StateDirError(f"{path} belongs to another user: the bridge keeps its files private")
    if narrow and stat.S_IMODE(info.st_mode) != FOLDER_MODE:
        os.chmod(path, FOLDER_MODE)  # noqa: PTH101 (the path was just checked: not a link)


def _make_missing(path: Path) -> None:
    """``path`` and its missing parents, each made 0700 (existing ones are left as found)."""
    # Up to the first folder that is there: everything above a folder is a folder too
    # (one stat on every call but the first, where asking each ancestor took five).
    if path.is_dir():  # the usual answer: no parents built
        return
    missing = [path]
    for folder in path.parents:
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=FOLDER_MODE)
        except FileExistsError:  # made meanwhile, or a file or a link there: said below
            continue
        folder.chmod(FOLDER_MODE)  # only what was made here (never a file found at the name)


def _is_folder(path: Path) -> None:
    """Refuse ``path`` (followed: the top may be a link the user made) unless it is a
    folder; a link to nowhere and a file are each said as what they are."""
    try:
        info = path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            raise StateDirError(
                f"{path} is a symlink to {path.readlink()}, which does not exist: make that "
                "folder, or remove the link"
            ) from None
        raise
    if not stat.S_ISDIR(info.st_mode):
        raise StateDirError(
            f"{path} should be a folder of the bridge's own files: it is a file; move it "
            f"away, or set {_placed_by(path)} to a folder"
        )


def _within(path: str, folder: str) -> bool:
    """``Path(path) == Path(folder) or Path(folder) in Path(path).parents``, on the texts
    of two ``Path``\\ s (normalised: no doubled or trailing slash, no ``.``)."""
    if path == folder:
        return True
    return path.startswith(folder if folder.endswith("/") else folder + "/")


def private_dir(path: Path, top: Path | None = None) -> Path:
    """``path`` as a private folder (see the module docstring), made as needed. Below
    ``top`` — by default the state directory, when ``path`` is in it — every component is
    checked and narrowed; elsewhere (a folder the user chose) only what is made is 0700."""
    path = Path(path)
    state = state_dir()
    if top is None and _within(str(path), str(state)):
        top = state
    try:
        if top is None:
            _make_missing(path)
            _is_folder(path)
            return path
        _make_missing(top)
        _is_folder(top)
        info = top.stat()  # the state directory may be a link the user made: followed
        if top == state and info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
            top.chmod(FOLDER_MODE)  # ours, made wider by an older version: narrowed
        current = top
        for part in path.relative_to(top).parts:
            current = current / part
            with contextlib.suppress(FileExistsError):
                os.mkdir(current, FOLDER_MODE)  # noqa: PTH102
            _own_folder(current)
    except StateDirError:
        raise
    except ValueError as exc:  # not below top
        raise StateDirError(f"{path} is not inside {top}") from exc
    except OSError as exc:
        raise _failed(path, exc, "make the folder") from exc
    return path


def create_private(path: Path, top: Path | None = None) -> int:
    """A new file at ``path``, mode 0600, open for writing (a descriptor). Whatever was at
    that name is replaced, never written through."""
    private_dir(path.parent, top)
    return new_private_file(path)


def new_private_file(path: Path) -> int:
    """As :func:`create_private`, in a folder already made private (many files: no walk)."""
    try:
        for attempt in (1, 2):
            try:
                fd = os.open(path, _NEW_FILE, FILE_MODE)
                break
            except FileExistsError:
                if attempt == 2:
                    raise
                path.unlink()  # a link (symbolic or hard) goes, not what it points to
        os.fchmod(fd, FILE_MODE)
    except OSError as exc:
        raise _failed(path, exc, "write") from exc
    return fd


def refuse_links(*paths: Path) -> None:
    """StateDirError if one of ``paths`` (files the bridge opens by name, like SQLite's) is a
    symlink inside the state directory: it would be written through."""
    state = state_dir()
    for path in paths:
        if state in path.parents and path.is_symlink():
            raise StateDirError(
                f"{path} is a symlink where the bridge keeps its own files (to "
                f"{path.readlink()}): remove it; the bridge never writes through one"
            )


def write_private(path: Path, data: bytes, top: Path | None = None) -> None:
    """``data`` into ``path`` atomically (a new private file, renamed over the old)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = create_private(temp, top)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        temp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise _failed(path, exc, "write") from exc


class FolderLock:
    """An exclusive hold on ``folder`` against every other process of the bridge: ``flock``
    on ``.NAME.lock`` beside it (made private, never through a link). Released when
    :meth:`release` is called or the process ends, however it ends."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder.with_name(f".{folder.name}.lock")
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        """Whether the lock is now ours (False: another process holds it)."""
        if self._fd is None:
            try:
                # Opened, never created new: the same file for every process (no unlink).
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                             FILE_MODE)  # fmt: skip
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise StateDirError(
                        f"{self.path} is a symlink where the bridge keeps its lock for "
                        f"{self.folder}: remove it; the bridge never writes through one"
                    ) from exc
                raise _failed(self.path, exc, "lock") from exc
            self._fd = fd
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError as exc:
            self.release()
            raise _failed(self.path, exc, "lock") from exc
        return True

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # drops the flock with the descriptor
