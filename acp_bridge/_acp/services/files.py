"""``fs/read_text_file`` and ``fs/write_text_file``, confined to the profile's roots.

Both resolve the path with :meth:`Roots.resolve` (component by component from an open root
directory, see sandbox.py) and then act relative to the open parent directory, so the file
that was checked is the file that is used.

Reads: absolute path, symlinks followed inside the read roots; only regular files (a FIFO
would block us, a device could be anything) — checked before the open *and* on the open file,
which must be the one that was checked (``st_dev``/``st_ino``); ``line`` (1-based) and
``limit`` (in lines) read as a window in bounded memory, never the whole file; a size cap on
what is returned; a missing file is error -32002 "Resource not found".

Writes: inside the write roots, missing parents created (inside the root), never through a
symlink at the last component, never onto a file with other hard links (that would look like
changing a file elsewhere), atomically (a temp file in the same open directory + ``rename``,
which replaces the directory entry and never writes through it) keeping the existing file's
permission bits (not setuid/setgid); a size cap; the reply is ``{}``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from acp_bridge._acp.connection import RpcFailure
from acp_bridge._acp.schema import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    ReadTextFileParams,
    WriteTextFileParams,
)
from acp_bridge._os.roots import Resolved, Roots
from acp_bridge.envelope import RefusalRecord
from acp_bridge.errors import SandboxViolation

READ_CHUNK = 1 << 16
RACE_RETRIES = 3  # a file swapped between check and open: look again, then refuse
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_KEPT_MODE_BITS = 0o777  # setuid/setgid/sticky are not carried over to what an agent wrote


def _refused(message: str) -> RpcFailure:
    return RpcFailure(INVALID_PARAMS, message, {"reason": "sandbox_violation"})


def _not_found(path: str) -> RpcFailure:
    return RpcFailure(RESOURCE_NOT_FOUND, f"Resource not found: {path} (ENOENT)", {"path": path})


def _file_type(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


class FileService:
    """The file half of what we serve to one session."""

    def __init__(self, roots: Roots, *, max_read_bytes: int, max_write_bytes: int) -> None:
        self.roots = roots
        self.max_read_bytes = max_read_bytes
        self.max_write_bytes = max_write_bytes
        self.files_changed: list[str] = []
        self.refusals: list[RefusalRecord] = []

    def _refuse(self, method: str, path: str, message: str) -> RpcFailure:
        self.refusals.append(RefusalRecord(method=method, target=path, reason=message))
        return _refused(message)

    # --- reading ------------------------------------------------------------------------

    async def read_text_file(self, **params: Any) -> dict[str, Any]:
        request = ReadTextFileParams.model_validate(params)
        content = await anyio.to_thread.run_sync(
            self._read, request.path, request.line, request.limit
        )
        return {"content": content}

    @contextmanager
    def _answering(self, method: str, raw: str) -> Iterator[None]:
        """Library errors of one request as the JSON-RPC errors the agent gets."""
        try:
            yield
        except SandboxViolation as exc:
            raise self._refuse(method, raw, str(exc)) from exc
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise _not_found(raw) from exc
        except OSError as exc:
            raise RpcFailure(INTERNAL_ERROR, f"{method} {raw}: {exc.strerror}") from exc

    def _read(self, raw: str, line: int | None, limit: int | None) -> str:
        with self._answering("fs/read_text_file", raw):
            for _ in range(RACE_RETRIES):
                with self.roots.resolve(raw, write=False, follow_last=True) as where:
                    fd = self._open_regular(where, raw)
                    if fd is not None:
                        return self._window(fd, raw, line, limit)
            raise SandboxViolation(f"read refused: {raw} kept changing while being opened")

    def _open_regular(self, where: Resolved, raw: str) -> int | None:
        """An fd of the regular file ``where`` names; None if it changed under us."""
        if not where.name:
            raise SandboxViolation(f"read refused: {raw} is a directory")
        info = os.stat(where.name, dir_fd=where.dir_fd, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            return None  # became a symlink after the walk: resolve again
        if not stat.S_ISREG(info.st_mode):
            # Refused before opening: opening a device can have side effects.
            raise SandboxViolation(f"read refused: {raw} is {_file_type(info.st_mode)}")
        try:
            fd = os.open(where.name, _READ_FLAGS, dir_fd=where.dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None
            raise
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino) or not stat.S_ISREG(
            opened.st_mode
        ):
            os.close(fd)
            return None
        return fd

    def _window(self, fd: int, raw: str, line: int | None, limit: int | None) -> str:
        """Lines ``line``…``line+limit-1`` of the open file, reading no more than needed
        and never holding more than the cap plus one chunk (a huge line is skipped in
        pieces, not loaded)."""
        cap = self.max_read_bytes
        with open(fd, "rb", buffering=READ_CHUNK) as handle:
            if line is None and limit is None and os.fstat(fd).st_size > cap:
                raise self._too_big(raw)
            skip = (line or 1) - 1
            while skip:
                piece = handle.readline(READ_CHUNK)
                if not piece:
                    return ""  # the file ends before the window starts
                if piece.endswith(b"\n"):
                    skip -= 1
            out = bytearray()
            taken = 0
            while limit is None or taken < limit:
                piece = handle.readline(READ_CHUNK)
                if not piece:
                    break
                out += piece
                if len(out) > cap:
                    raise self._too_big(raw)
                if piece.endswith(b"\n"):
                    taken += 1
        return out.decode("utf-8", "replace")

    def _too_big(self, raw: str) -> RpcFailure:
        return RpcFailure(
            INVALID_PARAMS,
            f"refused: {raw} is larger than the read cap of {self.max_read_bytes} bytes; "
            "ask for a window with line and limit",
        )

    # --- writing ------------------------------------------------------------------------

    async def write_text_file(self, **params: Any) -> dict[str, Any]:
        request = WriteTextFileParams.model_validate(params)
        data = request.content.encode("utf-8")
        if len(data) > self.max_write_bytes:
            raise RpcFailure(
                INVALID_PARAMS,
                f"refused: {len(data)} bytes exceeds the write cap of {self.max_write_bytes}",
            )
        target = await anyio.to_thread.run_sync(self._write, request.path, data)
        if target not in self.files_changed:
            self.files_changed.append(target)
        return {}

    def _write(self, raw: str, data: bytes) -> str:
        with (
            self._answering("fs/write_text_file", raw),
            self.roots.resolve(raw, write=True, follow_last=False, create_parents=True) as where,
        ):
            _replace(where, raw, data)
            return str(where.path)


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
        raise SandboxViolation(f"write refused: {raw} is {_file_type(info.st_mode)}")
    if info.st_nlink > 1:
        raise SandboxViolation(
            f"write refused: {raw} has {info.st_nlink} hard links; writing it would "
            "seem to change a file that may lie outside the roots"
        )
    return stat.S_IMODE(info.st_mode) & _KEPT_MODE_BITS
