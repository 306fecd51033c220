"""Reading and writing files confined to roots: the one implementation behind the agent's
``fs/*`` requests and the local ``read_file`` / ``write_file`` tools.

Both resolve the path with :meth:`Roots.resolve` (component by component from an open root
directory, see roots.py) and then act relative to the open parent directory, so the file
that was checked is the file that is used.

Reads: absolute path, symlinks followed inside the read roots; only regular files (a FIFO
would block us, a device could be anything) — checked before the open *and* on the open file,
which must be the one that was checked (``st_dev``/``st_ino``); ``line`` (1-based) and
``limit`` (in lines) read as a window in bounded memory, never the whole file; a size cap on
what is returned.

Writes: inside the write roots, missing parents created (inside the root), never through a
symlink at the last component, never onto a file with other hard links (that would look like
changing a file elsewhere), atomically (a temp file in the same open directory + ``rename``,
which replaces the directory entry and never writes through it) keeping the existing file's
permission bits (not setuid/setgid); a size cap.

Errors are the library's: :class:`SandboxViolation` (outside, or not a regular file),
:class:`LimitExceeded` (over a cap), ``FileNotFoundError`` naming the requested path (missing
file or parent), other ``OSError``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from acp_bridge._os.fs.roots import Resolved, Roots
from acp_bridge._os.stoppable import StopToken
from acp_bridge.errors import LimitExceeded, SandboxViolation

READ_CHUNK = 1 << 16
RACE_RETRIES = 3  # a file swapped between check and open: look again, then refuse
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_KEPT_MODE_BITS = 0o777  # setuid/setgid/sticky are not carried over to what an agent wrote


def file_type(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


@contextmanager
def _missing_as_requested(raw: str) -> Iterator[None]:
    """A missing file or parent is reported under the path the caller asked for."""
    try:
        yield
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), raw) from exc


# --- reading ----------------------------------------------------------------------------------


def read_text(
    roots: Roots,
    raw: str,
    *,
    line: int | None = None,
    limit: int | None = None,
    max_bytes: int,
    stop: StopToken | None = None,
) -> str:
    """Lines ``line``…``line+limit-1`` (1-based; all by default) of the file ``raw`` names.
    ``stop``: looked at for every chunk read (skipping to line 10^9 of a sparse terabyte
    takes as long as reading it)."""
    with _missing_as_requested(raw):
        for _ in range(RACE_RETRIES):
            with roots.resolve(raw, write=False, follow_last=True) as where:
                fd = _open_regular(where, raw)
                if fd is not None:
                    return _window(fd, raw, line, limit, max_bytes, stop or StopToken())
    raise SandboxViolation(f"read refused: {raw} kept changing while being opened")


def _open_regular(where: Resolved, raw: str) -> int | None:
    """An fd of the regular file ``where`` names; None if it changed under us."""
    if not where.name:
        raise SandboxViolation(f"read refused: {raw} is a directory")
    info = os.stat(where.name, dir_fd=where.dir_fd, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        return None  # became a symlink after the walk: resolve again
    if not stat.S_ISREG(info.st_mode):
        # Refused before opening: opening a device can have side effects.
        raise SandboxViolation(f"read refused: {raw} is {file_type(info.st_mode)}")
    try:
        fd = os.open(where.name, _READ_FLAGS, dir_fd=where.dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise
    opened = os.fstat(fd)
    same = (opened.st_dev, opened.st_ino) == (info.st_dev, info.st_ino)
    if not same or not stat.S_ISREG(opened.st_mode):
        os.close(fd)
        return None
    return fd


def _window(
    fd: int, raw: str, line: int | None, limit: int | None, cap: int, stop: StopToken
) -> str:
    """The window of the open file, reading no more than needed and never holding more than
    the cap plus one chunk (a huge line is skipped in pieces, not loaded)."""
    with open(fd, "rb", buffering=READ_CHUNK) as handle:
        if line is None and limit is None and os.fstat(fd).st_size > cap:
            raise _too_big(raw, cap)
        skip = (line or 1) - 1
        while skip:
            if stop.stopped:
                raise _stopped(raw)
            piece = handle.readline(READ_CHUNK)
            if not piece:
                return ""  # the file ends before the window starts
            if piece.endswith(b"\n"):
                skip -= 1
        out = bytearray()
        taken = 0
        while limit is None or taken < limit:
            if stop.stopped:
                raise _stopped(raw)
            piece = handle.readline(READ_CHUNK)
            if not piece:
                break
            out += piece
            if len(out) > cap:
                raise _too_big(raw, cap)
            if piece.endswith(b"\n"):
                taken += 1
    return out.decode("utf-8", "replace")


def _stopped(raw: str) -> LimitExceeded:
    return LimitExceeded(f"read of {raw} stopped: the run ended or its deadline passed")


def _too_big(raw: str, cap: int) -> LimitExceeded:
    return LimitExceeded(
        f"read refused: {raw} is larger than the read cap of {cap} bytes; "
        "ask for a window with line and limit"
    )


# --- writing ----------------------------------------------------------------------------------


def write_text(roots: Roots, raw: str, data: bytes, *, max_bytes: int) -> Path:
    """Replace (or create) the file ``raw`` names with ``data``; where it was written."""
    if len(data) > max_bytes:
        raise LimitExceeded(
            f"write refused: {len(data)} bytes exceeds the write cap of {max_bytes}"
        )
    with (
        _missing_as_requested(raw),
        roots.resolve(raw, write=True, follow_last=False, create_parents=True) as where,
    ):
        _replace(where, raw, data)
        return where.path


def _replace(where: Resolved, raw: str, data: bytes) -> None:
    """Write ``data`` to a temp file beside the target, then rename it over the target.

    ``rename`` replaces the directory entry: if a symlink or a hard link is swapped in
    after the check below, the file it points at is left as it was.
    """
    if not where.name:
        raise SandboxViolation(f"write refused: {raw} names a directory, not a file")
    mode = _existing_mode(where, raw)
    temp = f".acp-bridge-{secrets.token_hex(6)}.tmp"
    fd = os.open(temp, _TEMP_FLAGS, 0o600 if mode is not None else 0o666, dir_fd=where.dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)  # not subject to the umask, unlike the create above
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, where.name, src_dir_fd=where.dir_fd, dst_dir_fd=where.dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=where.dir_fd)
        raise


def _existing_mode(where: Resolved, raw: str) -> int | None:
    """The permission bits to keep (None: a new file, the umask decides). Refuses
    symlinks, non-regular files and files with other hard links."""
    try:
        info = os.stat(where.name, dir_fd=where.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise SandboxViolation(f"write refused: {raw} is {file_type(info.st_mode)}")
    if info.st_nlink > 1:
        raise SandboxViolation(
            f"write refused: {raw} has {info.st_nlink} hard links; writing it would "
            "seem to change a file that may lie outside the roots"
        )
    return stat.S_IMODE(info.st_mode) & _KEPT_MODE_BITS
