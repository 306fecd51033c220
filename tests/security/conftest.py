"""A small world for escape attempts: a workspace root with traps pointing out of it, files
outside it that must never change, and snapshots that prove they did not."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_bridge._acp.services.file_service import FileService
from acp_bridge._acp.services.terminals import TerminalService
from acp_bridge._acp.wire.schema import INVALID_PARAMS
from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.process.environment import constructed_env
from acp_bridge.config import TerminalSettings
from acp_bridge.events import EventSink
from tests.helpers import RpcFailure, serve

SECRET = "TOP SECRET: outside the roots\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class World:
    base: Path
    ws: Path  # the read + write root
    ref: Path  # a read-only root
    outside: Path  # must never change, must never be read

    @property
    def secret(self) -> Path:
        return self.outside / "secret.txt"

    def roots(self) -> Roots:
        return Roots.for_session(self.ws, [self.ref], [self.ws])

    def files(self, **caps: int) -> FileService:
        return FileService(
            self.roots(),
            max_read_bytes=caps.get("max_read_bytes", 1 << 20),
            max_write_bytes=caps.get("max_write_bytes", 1 << 20),
        )


def snapshot(top: Path, skip: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Everything about a tree that an escape could change: type, mode, inode, link target,
    content hash, mtime. Directories under ``skip`` (the roots) are left out."""
    state: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d not in skip]
        for name in [*dirnames, *filenames, "."]:
            path = here / name
            info = path.lstat()
            entry: tuple[Any, ...] = (stat.S_IFMT(info.st_mode), info.st_mode, info.st_ino)
            if stat.S_ISLNK(info.st_mode):
                entry += (os.readlink(path),)
            elif stat.S_ISREG(info.st_mode):
                entry += (hashlib.sha256(path.read_bytes()).hexdigest(), info.st_mtime_ns)
            elif stat.S_ISDIR(info.st_mode):
                entry += (sorted(os.listdir(path)),)
            state[str(path)] = entry
    return state


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from make_world(tmp_path)


def make_world(tmp_path: Path) -> Iterator[World]:
    """The world's set-up and its final check, for fixtures here and elsewhere."""
    ws, ref, outside = tmp_path / "ws", tmp_path / "ref", tmp_path / "outside"
    for d in (ws / "sub", ref, outside / "dir"):
        d.mkdir(parents=True)
    (ws / "notes.txt").write_text("line 1\nline 2\nline 3\n")
    (ref / "reference.txt").write_text("read me\n")
    (outside / "secret.txt").write_text(SECRET)
    (outside / "linked.txt").write_text("hard-linked from the workspace\n")
    # The traps, all inside the workspace root:
    (ws / "link_out").symlink_to("../outside/secret.txt")  # relative symlink out
    (ws / "abs_out").symlink_to(outside / "secret.txt")  # absolute symlink out
    (ws / "dir_out").symlink_to("../outside")  # a directory symlink out
    (ws / "proc_root").symlink_to("/proc/self/root")  # the magic link to /
    (ws / "loop_a").symlink_to("loop_b")
    (ws / "loop_b").symlink_to("loop_a")
    (ws / "sub_in").symlink_to("sub")  # a symlink that stays inside: allowed
    os.link(outside / "linked.txt", ws / "hard")  # a hard link to an outside file
    os.mkfifo(ws / "fifo")
    world = World(tmp_path, ws, ref, outside)
    before = snapshot(tmp_path, skip=(ws,))
    yield world
    # Whatever a test did, nothing outside the roots (and nothing in the read-only root)
    # may have changed.
    assert snapshot(tmp_path, skip=(ws,)) == before


async def call(handler: Any, **params: Any) -> Any:
    return await serve(handler, sessionId="s", **params)


async def refused(handler: Any, match: str, **params: Any) -> RpcFailure:
    """Call a handler that must refuse; returns the failure for more checks."""
    with anyio.fail_after(10), pytest.raises(RpcFailure, match=match) as caught:
        await call(handler, **params)
    assert caught.value.code == INVALID_PARAMS, caught.value.message
    return caught.value


@asynccontextmanager
async def terminals(
    world: World,
    env: Mapping[str, str] | None = None,
    sink: EventSink | None = None,
    **settings: Any,
) -> AsyncIterator[TerminalService]:
    """A TerminalService as a session has it; released (everything killed) at the end."""
    async with anyio.create_task_group() as tg:
        service = TerminalService(
            roots=world.roots(),
            cwd=world.ws,
            env=constructed_env(depth=1) if env is None else env,
            settings=TerminalSettings(**settings),
            tg=tg,
            sink=sink,
        )
        try:
            yield service
        finally:
            with anyio.CancelScope(shield=True):
                await service.release_all()
            tg.cancel_scope.cancel()


async def run_command(service: TerminalService, command: str, **params: Any) -> dict[str, Any]:
    """Create, wait, read the output; the terminal stays open (not released)."""
    with anyio.fail_after(20):
        created = await call(service.create, command=command, **params)
        ref = {"terminalId": created["terminalId"]}
        status = await call(service.wait_for_exit, **ref)
        output = await call(service.output, **ref)
    return {**output, "status": status, "terminalId": created["terminalId"]}
