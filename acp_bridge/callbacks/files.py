"""``fs/read_text_file`` and ``fs/write_text_file``, confined to the profile's roots.

Reads: absolute path, symlinks resolved, inside the read roots; only regular files (a FIFO
would block us forever, a device could be anything); ``line`` (1-based) and ``limit`` (in
lines) read as a window without loading the whole file; a size cap on what is returned; a
missing file is error -32002 "Resource not found".

Writes: inside the write roots, parents created (inside the root), never through a symlink
at the last component, never onto a hard-linked file (that would change a file elsewhere),
atomically (temp file in the same directory + rename) keeping the existing file's mode; a
size cap; the reply is ``{}``.
"""

from __future__ import annotations

import itertools
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import anyio

from acp_bridge.errors import SandboxViolation
from acp_bridge.jsonrpc import RpcFailure
from acp_bridge.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    ReadTextFileParams,
    WriteTextFileParams,
)
from acp_bridge.sandbox import Roots


def _refused(exc: SandboxViolation) -> RpcFailure:
    return RpcFailure(INVALID_PARAMS, str(exc), {"reason": "sandbox_violation"})


def _not_found(path: str) -> RpcFailure:
    return RpcFailure(RESOURCE_NOT_FOUND, f"Resource not found: {path} (ENOENT)", {"path": path})


class FileService:
    """The file half of what we serve to one session."""

    def __init__(self, roots: Roots, *, max_read_bytes: int, max_write_bytes: int) -> None:
        self.roots = roots
        self.max_read_bytes = max_read_bytes
        self.max_write_bytes = max_write_bytes
        self.files_changed: list[str] = []

    # --- reading ------------------------------------------------------------------------

    async def read_text_file(self, **params: Any) -> dict[str, Any]:
        request = ReadTextFileParams.model_validate(params)
        path = Path(request.path)
        try:
            resolved = self.roots.check_read(path)
        except SandboxViolation as exc:
            raise _refused(exc) from exc
        content = await anyio.to_thread.run_sync(
            self._read_window, resolved, request.path, request.line, request.limit
        )
        return {"content": content}

    def _read_window(self, path: Path, shown: str, line: int | None, limit: int | None) -> str:
        try:
            # O_NONBLOCK: opening a FIFO must not wait for a writer; we refuse it below.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError as exc:
            raise _not_found(shown) from exc
        except OSError as exc:
            raise RpcFailure(INTERNAL_ERROR, f"cannot read {shown}: {exc.strerror}") from exc
        # An fd, not a path: the file we checked is the file we read.
        with open(fd, encoding="utf-8", errors="replace", newline="") as handle:  # noqa: PTH123
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise RpcFailure(INVALID_PARAMS, f"refused: {shown} is not a regular file")
            os.set_blocking(handle.fileno(), True)
            start = (line or 1) - 1
            stop = None if limit is None else start + limit
            return self._capped(itertools.islice(handle, start, stop), shown)

    def _capped(self, lines: Any, shown: str) -> str:
        out: list[str] = []
        size = 0
        for text in lines:
            size += len(text)
            if size > self.max_read_bytes:
                raise RpcFailure(
                    INVALID_PARAMS,
                    f"refused: {shown} is larger than the read cap of {self.max_read_bytes} "
                    "bytes; ask for a window with line and limit",
                )
            out.append(text)
        return "".join(out)

    # --- writing ------------------------------------------------------------------------

    async def write_text_file(self, **params: Any) -> dict[str, Any]:
        request = WriteTextFileParams.model_validate(params)
        data = request.content.encode("utf-8")
        if len(data) > self.max_write_bytes:
            raise RpcFailure(
                INVALID_PARAMS,
                f"refused: {len(data)} bytes exceeds the write cap of {self.max_write_bytes}",
            )
        target = await anyio.to_thread.run_sync(self._write_atomically, request.path, data)
        if target not in self.files_changed:
            self.files_changed.append(target)
        return {}

    def _write_atomically(self, raw: str, data: bytes) -> str:
        path = Path(raw)
        if not path.is_absolute():
            raise _refused(SandboxViolation(f"write refused: path must be absolute, got {raw!r}"))
        try:
            parent = self.roots.check_write(path.parent)
            target = parent / path.name
            self.roots.check_write(target)
        except SandboxViolation as exc:
            raise _refused(exc) from exc
        if path.name in ("", ".", ".."):
            raise RpcFailure(INVALID_PARAMS, f"refused: {raw} does not name a file")
        parent.mkdir(parents=True, exist_ok=True)
        mode = self._existing_mode(target, raw)
        fd, name = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".acp-tmp")
        temp = Path(name)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            temp.chmod(mode)
            self._recheck_parent(parent)
            temp.replace(target)
        finally:
            temp.unlink(missing_ok=True)
        return str(target)

    @staticmethod
    def _recheck_parent(parent: Path) -> None:
        """The directory must still be the one we checked: a symlink swapped in between
        the check and the rename would send the file elsewhere."""
        if parent.resolve() != parent:
            raise _refused(SandboxViolation(f"write refused: {parent} changed during the write"))

    @staticmethod
    def _existing_mode(target: Path, shown: str) -> int:
        """The mode to give the new file; refuses symlinks, hard links, non-regular files."""
        try:
            info = os.lstat(target)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            return 0o666 & ~umask
        except OSError as exc:
            raise RpcFailure(INTERNAL_ERROR, f"cannot write {shown}: {exc.strerror}") from exc
        if stat.S_ISLNK(info.st_mode):
            raise RpcFailure(INVALID_PARAMS, f"refused: {shown} is a symbolic link")
        if not stat.S_ISREG(info.st_mode):
            raise RpcFailure(INVALID_PARAMS, f"refused: {shown} is not a regular file")
        if info.st_nlink > 1:
            raise RpcFailure(
                INVALID_PARAMS,
                f"refused: {shown} has {info.st_nlink} hard links; writing it would change "
                "a file outside the roots too",
            )
        return stat.S_IMODE(info.st_mode)
