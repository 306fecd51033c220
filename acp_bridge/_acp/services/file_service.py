"""``fs/read_text_file`` and ``fs/write_text_file``: the agent's file requests, served by the
confined file operations of ``_os/fs/files.py`` (the same ones behind the local file tools).

Errors are left to the router, which maps them to JSON-RPC errors (a missing file is -32002
"Resource not found", a path outside the roots -32602 with ``reason: sandbox_violation``).
"""

from __future__ import annotations

from typing import Any

import anyio

from acp_bridge._acp.wire.schema import ReadTextFileParams, WriteTextFileParams
from acp_bridge._os.fs.files import read_text, write_text
from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.stoppable import StopToken, in_thread


class FileService:
    """The file half of what we serve to one session; remembers what it wrote."""

    def __init__(self, roots: Roots, *, max_read_bytes: int, max_write_bytes: int) -> None:
        self.roots = roots
        self.max_read_bytes = max_read_bytes
        self.max_write_bytes = max_write_bytes
        self.files_changed: list[str] = []
        self.files_read: list[str] = []

    async def read_text_file(self, request: ReadTextFileParams) -> dict[str, Any]:
        stop = StopToken()  # the run's end or its cancel stops the read as it goes
        content = await in_thread(
            lambda: read_text(
                self.roots,
                request.path,
                line=request.line,
                limit=request.limit,
                max_bytes=self.max_read_bytes,
                stop=stop,
            ),
            stop,
        )
        if request.path not in self.files_read:
            self.files_read.append(request.path)
        return {"content": content}

    async def write_text_file(self, request: WriteTextFileParams) -> dict[str, Any]:
        data = request.content.encode("utf-8")
        target = await anyio.to_thread.run_sync(
            lambda: write_text(self.roots, request.path, data, max_bytes=self.max_write_bytes)
        )
        if str(target) not in self.files_changed:
            self.files_changed.append(str(target))
        return {}
