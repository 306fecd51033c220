"""Shared test helpers: bounded async runs and process liveness."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from acp_bridge.config import LoadedConfig, load_config

T = TypeVar("T")

ECHO_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "value": {"type": "integer"}},
    "required": ["ok", "value"],
}
"""The JSON Schema of the ``subagent.demo.echo.v1`` label used across the tests."""


def demo_profile(**extra: Any) -> dict[str, Any]:
    """A profile of the bundled demo agent whose memory of sessions (``remember``, ``recall``,
    resume) goes where the sandbox lets it write in every mode: the suite's
    ``$ACP_BRIDGE_DEMO_STATE``, declared as its state, as the built-in ``demo`` profile does.
    (Without it the memory falls under ``$HOME``, which a test often puts inside a write root
    with hidden paths in it, where Landlock cannot create new entries.)"""
    state = os.environ["ACP_BRIDGE_DEMO_STATE"]
    return {
        "command": sys.executable,
        "args": ["-m", "acp_bridge._demo.agent"],
        "env_passthrough": ["ACP_BRIDGE_DEMO_STATE"],
        "sandbox": {"state": [state]},
        **extra,
    }


def run_bounded(
    fn: Callable[..., Awaitable[T]], *args: Any, limit: float = 15.0, **kwargs: Any
) -> T:
    """``anyio.run(fn, *args, **kwargs)``, failing (not hanging) past ``limit`` seconds."""

    async def bounded() -> T:
        with anyio.fail_after(limit):
            return await fn(*args, **kwargs)

    return anyio.run(bounded)


def default_config() -> LoadedConfig:
    """Defaults and built-in profiles only: no user or local config file."""
    return load_config(None, search=False, environ={})


def processes_with(name: str, value: str) -> list[int]:
    """Live processes whose environment carries ``name=value`` (not this one): the one
    leftover finder of the suite. Every descendant of an agent or command inherits the
    marker a test gives it, so what is found here was left behind."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0") and alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


async def until_processes(name: str, value: str, count: int, within: float = 10.0) -> list[int]:
    """Wait (bounded) until at least ``count`` processes carry ``name=value``: proof that
    what a test is about to kill was really started."""
    with anyio.fail_after(within):
        # No event says "a process appeared" (another program starts it): look again.
        while len(found := processes_with(name, value)) < count:  # noqa: ASYNC110
            await anyio.sleep(0.02)
    return found


def gone_within(name: str, value: str, within: float = 5.0) -> list[int]:
    """The processes still carrying ``name=value`` after ``within`` seconds (signals take a
    moment to land, and a SIGKILLed namespace a moment to be torn down)."""
    deadline = time.monotonic() + within
    while (left := processes_with(name, value)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def command_line(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")).decode().strip()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_all_dead(pids: Iterable[int], within: float = 3.0) -> list[int]:
    """The pids still alive after ``within`` seconds (signals take a moment to land)."""
    deadline = time.monotonic() + within
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = [p for p in left if alive(p)]
    return left


def kill_quietly(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


def read_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


class ChunkStream(ByteReceiveStream):
    """Agent stdout, in memory: yields the given chunks, then EOF."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = list(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)

    async def aclose(self) -> None:
        self._chunks.clear()


class NullSink(ByteSendStream):
    """Agent stdin that swallows everything."""

    async def send(self, item: bytes) -> None:
        return None

    async def aclose(self) -> None:
        return None


# --- agent→client requests, answered the way an agent sees them ------------------------------


class RpcFailure(Exception):
    """The JSON-RPC error an agent got for a request (as the router answered it)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


_PARAMS_OF = {
    "read_text_file": ("fs/read_text_file", "ReadTextFileParams"),
    "write_text_file": ("fs/write_text_file", "WriteTextFileParams"),
    "create": ("terminal/create", "CreateTerminalParams"),
    "output": ("terminal/output", "TerminalIdParams"),
    "wait_for_exit": ("terminal/wait_for_exit", "TerminalIdParams"),
    "kill": ("terminal/kill", "TerminalIdParams"),
    "release": ("terminal/release", "TerminalIdParams"),
    "request_permission": ("session/request_permission", "RequestPermissionParams"),
}


async def serve(handler: Callable[..., Awaitable[Any]], **params: Any) -> Any:
    """Answer one request with ``handler`` through the real router (params validated, errors
    mapped to JSON-RPC); its result, or :class:`RpcFailure` with the agent's error."""
    from acp_bridge._acp.rpc.router import Route, Router
    from acp_bridge._acp.wire import schema

    method, model = _PARAMS_OF[handler.__name__]
    router = Router([Route(method, getattr(schema, model), handler)])
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    reply = await router.answer(message)
    assert reply is not None
    if "error" in reply:
        error = reply["error"]
        raise RpcFailure(error["code"], error["message"], error.get("data"))
    return reply["result"]


_TERMINAL_SAFE = frozenset("\n\t\u200c\u200d")


def terminal_controls(text: str) -> list[str]:
    """The characters of ``text`` a terminal may take for a command, judged by their Unicode
    category (independently of the sanitizer's own table): controls (Cc), format characters
    (Cf: bidi, zero-width, tags), surrogates, line and paragraph separators — newline, tab,
    ZWNJ and ZWJ aside."""
    import unicodedata

    return [
        c
        for c in text
        if c not in _TERMINAL_SAFE and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")
    ]


def killed_after_sigterm(note: str, result: Any) -> bool:
    """Whether a transcript note says the run's processes were killed after SIGTERM: by the
    bridge's SIGKILL, or — under Landlock, where the shim keeps them — by the shim's own
    SIGKILL after its grace, which the bridge only sees as the end of its SIGTERM."""
    if "SIGKILL" in note:
        return True
    return result.meta.sandbox.get("mode") == "landlock" and "sent SIGTERM" in note


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS`` with a committer identity of its own; its stdout."""
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo), *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def new_repo(path: Path) -> Path:
    """A repository at ``path`` whose one commit holds ``README.md``."""
    path.mkdir()
    git(path, "init", "-q")
    (path / "README.md").write_text("the project\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "start")
    return path
