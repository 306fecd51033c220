"""``fs/read_text_file`` and ``fs/write_text_file``: the agent's file requests, served by the
confined file operations of ``_os/fs/files.py`` (the same ones behind the local file tools).

Errors are left to the router, which maps them to JSON-RPC errors (a missing file is -32002
"Resource not found", a path outside the roots -32602 with ``reason: sandbox_violation``);
the services record them (client.py). The paths read and written are kept once each, at most
:data:`MAX_FILES` of each, the rest counted (``_records/bounded.py``).
"""

from __future__ import annotations

from typing import Any

import anyio

from acp_bridge._acp.wire.schema import ReadTextFileParams, WriteTextFileParams
from acp_bridge._os.fs.files import read_text, write_text
from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.stoppable import StopToken, in_thread
from acp_bridge._records.bounded import BoundedTable

MAX_FILES = 10_000
PATH_CHARS = 4096


class FileService:
    """The file half of what we serve to one session; remembers what it wrote."""

    def __init__(self, roots: Roots, *, max_read_bytes: int, max_write_bytes: int) -> None:
        self.roots = roots
        self.max_read_bytes = max_read_bytes
        self.max_write_bytes = max_write_bytes
        self._changed: BoundedTable[str, None] = BoundedTable(
            "files written", MAX_FILES, PATH_CHARS
        )
        self._read: BoundedTable[str, None] = BoundedTable("files read", MAX_FILES, PATH_CHARS)

    @property
    def files_changed(self) -> list[str]:
        """The files written, each once, in the order first written."""
        return list(self._changed)

    @property
    def files_read(self) -> list[str]:
        return list(self._read)

    def next_turn(self) -> None:
        self._changed.reset()
        self._read.reset()

    def warnings(self) -> list[str]:
        return [w for w in (self._changed.warning(), self._read.warning()) if w]

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
        self._read.put(request.path, None)
        return {"content": content}

    async def write_text_file(self, request: WriteTextFileParams) -> dict[str, Any]:
        data = request.content.encode("utf-8")
        target = await anyio.to_thread.run_sync(
            lambda: write_text(self.roots, request.path, data, max_bytes=self.max_write_bytes)
        )
        self._changed.put(str(target), None)
        return {}
