"""The one owner of process groups: start a child as the leader of its own group, signal the
group safely, and end everything it started.

Why a group: agents and commands start grandchildren (npx → node → agent → MCP servers,
``make`` → compilers); one ``killpg`` reaches them all.

**The safety rule.** A process group's id is its leader's pid. While the leader is
*unreaped* (running, or a zombie not yet waited for) that pid cannot be given to anyone else,
so signalling the group cannot hit an unrelated process. Once the leader is reaped, the id
may in principle be reused by a new, unrelated group, so the group is **never signalled by
id after that**. What is left of it (children that outlived their leader, or left the group
with ``setsid``) is found by the marker every process of ours inherits in its environment
(``ACP_BRIDGE_MARKER``, unique per group) and signalled through pidfds opened before the
marker is checked again (see reaper.py), so a reused pid is never signalled either.

What this cannot reach: a process that scrubbed its environment (``env -i``) after leaving
the group. The OS sandbox (a PID namespace) closes that gap; see docs/explanation/security.md.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import anyio
from anyio.abc import Process

from acp_bridge._os.reaper import kill_marked

MARKER_ENV = "ACP_BRIDGE_MARKER"
KILL_WAIT = 5.0  # after SIGKILL; only a process stuck in the kernel takes longer
STRAGGLER_PAUSE = 0.2  # between SIGTERM and SIGKILL for processes that outlived the leader

Stdio = int | IO[bytes] | None
Graceful = Callable[[int, signal.Signals], bool]
"""How to ask a leader (by pid) to stop gracefully when signalling its group would be too
much (a sandbox launcher that dies of SIGTERM and takes everything with it). True: sent."""


@dataclass(frozen=True)
class Launched:
    """How to start a process some other way (in a sandbox): its argv, env and cwd, and how
    to ask it to stop."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    graceful: Graceful | None = None


Launcher = Callable[[list[str], dict[str, str], Path], Launched]
"""Turns (argv, env, cwd) into how to start it; raises SpawnError when it cannot."""


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; ``SIG<n>`` for a number Python has no name for."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"


def new_marker() -> str:
    return f"{os.getpid()}-{secrets.token_hex(8)}"


class ProcessGroup:
    """A child leading its own session and process group, and every process it started."""

    def __init__(self, process: Process, marker: str, graceful: Graceful | None = None) -> None:
        self.process = process
        self.pid = process.pid
        self.marker = marker
        self.graceful = graceful
        self.notes: list[str] = []
        """What ending it took (SIGTERM, SIGKILL, stragglers), for meta and transcripts."""

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | Path | None = None,
        stdin: Stdio = subprocess.DEVNULL,
        stdout: Stdio = subprocess.PIPE,
        stderr: Stdio = subprocess.PIPE,
        graceful: Graceful | None = None,
    ) -> ProcessGroup:
        """Start ``argv`` as a new group; OSError (not found, not executable …) propagates.
        ``graceful``: how to send its SIGTERM, when not to the whole group."""
        marker = new_marker()
        # Shielded: a cancel that lands mid-spawn would make asyncio SIGKILL the leader
        # alone, leaving its group (a sandbox's init, a shell's children) running, untracked.
        # The caller's cancellation takes effect at its next await, with the group in hand.
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(
                list(argv),
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=cwd,
                env={**env, MARKER_ENV: marker},
                start_new_session=True,
            )
        return cls(process, marker, graceful)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def signal(self, sig: signal.Signals) -> bool:
        """Signal the whole group, only while its leader is unreaped (the rule above).
        Whether the signal was sent."""
        if self.process.returncode is not None:
            return False
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
        return True

    def _soft_term(self) -> bool:
        if self.process.returncode is not None:
            return False
        if self.graceful is not None and self.graceful(self.pid, signal.SIGTERM):
            return True
        return self.signal(signal.SIGTERM)

    async def exits_within(self, seconds: float) -> bool:
        """Whether the leader exits (and is reaped) within ``seconds``."""
        with anyio.move_on_after(seconds):
            await self.process.wait()
        return self.process.returncode is not None

    async def terminate(self, grace: float, *, why: str = "") -> None:
        """SIGTERM to the group → ``grace`` → SIGKILL to the group → wait; then sweep what
        outlived the leader. Bounded: at most ``grace`` + KILL_WAIT + the sweep."""
        if self._soft_term():
            self.notes.append(f"{why or 'ending it'}: sent SIGTERM")
            if not await self.exits_within(grace) and self.signal(signal.SIGKILL):
                self.notes.append("it ignored SIGTERM: sent SIGKILL to its process group")
                await self.exits_within(KILL_WAIT)
        await self.sweep()

    async def sweep(self) -> int:
        """End every process still carrying this group's marker (children that outlived the
        leader or left the group): SIGTERM, a short pause, SIGKILL. How many were found."""
        found = await anyio.to_thread.run_sync(
            functools.partial(
                kill_marked, MARKER_ENV, self.marker, signal.SIGTERM, wait=STRAGGLER_PAUSE
            )
        )
        if found:
            self.notes.append(f"{found} process(es) outlived it: sent SIGTERM, then SIGKILL")
            await anyio.to_thread.run_sync(kill_marked, MARKER_ENV, self.marker, signal.SIGKILL)
        return found

    async def aclose(self, wait: float = KILL_WAIT) -> None:
        """Close the pipes and reap the leader (bounded: a process stuck in the kernel after
        SIGKILL must not hang the caller)."""
        with (
            anyio.move_on_after(wait),
            contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError),
        ):
            await self.process.aclose()
