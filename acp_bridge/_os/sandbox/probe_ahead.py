"""The sandbox probe's commands started ahead of the probe (issue 24).

A cold ``acp-bridge run`` spends ~60 ms importing its entry path and starting its event
loop before the sandbox is chosen, and then waits ~15 ms for the bubblewrap probe's two
processes. The command line starts them first (:func:`start`), and the probe collects their
results (:func:`take`, :func:`finished`) instead of starting its own: the same commands,
the same verdict, one wait the fewer. What nobody collects is ended (:func:`drop`).
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Sequence

import anyio

_started: dict[tuple[str, ...], subprocess.Popen[bytes]] = {}


def start(commands: Sequence[Sequence[str]]) -> None:
    """Start each command (no stdin; stdout and stderr to pipes), unless it runs already."""
    for argv in commands:
        if tuple(argv) not in _started:
            with contextlib.suppress(OSError):  # the probe runs it itself and says why
                _started[tuple(argv)] = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
                )


def take(argv: Sequence[str]) -> subprocess.Popen[bytes] | None:
    """The process started ahead for ``argv``, now the caller's to finish; None if none."""
    return _started.pop(tuple(argv), None)


async def finished(process: subprocess.Popen[bytes]) -> subprocess.CompletedProcess[bytes]:
    """``process`` run to its end (killed if the wait is cancelled: a timeout)."""
    try:
        out, err = await anyio.to_thread.run_sync(process.communicate, abandon_on_cancel=True)
    finally:
        if process.returncode is None:  # cancelled: the thread left behind reaps it
            with contextlib.suppress(OSError):
                process.kill()
    return subprocess.CompletedProcess(process.args, process.returncode or 0, out, err)


def drop(timeout: float = 10.0) -> None:
    """Reap what was started and never taken (the run chose no bubblewrap, or ended before
    its sandbox): each is let finish, as the probe would (a few ms), and killed only past
    ``timeout``. Not killed at once: a bubblewrap killed while it sets up its namespaces
    can leave its child holding the pipes, waiting for it forever."""
    while _started:
        process = _started.popitem()[1]
        try:
            process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                process.kill()
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
            process.wait()
