"""A process inside an ``execve`` still shows its environment to the marker sweeps.

Between the two halves of an exec, ``/proc/PID/environ`` reads as empty: a process read just
after it started (its parent's ``Popen`` returns right there) was missed by
``marked_processes`` about one time in ten, and a run's straggler caught so outlived it."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest

from acp_bridge._os.process import marked_processes, proc
from tests.helpers import command_line

NAME = "ACP_BRIDGE_TEST_EXEC_MARKER"


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        child.kill()
        child.wait()


def test_a_process_read_while_it_execs_is_found(children: list[subprocess.Popen[bytes]]) -> None:
    missed = []
    for n in range(100):
        marker = f"exec-{os.getpid()}-{n}"
        # Two execs in a row (sh, then sleep): the scan starts while the first is under way.
        child = subprocess.Popen(
            ["/bin/sh", "-c", "exec sleep 30"], env={**os.environ, NAME: marker}
        )
        children.append(child)
        if child.pid not in marked_processes.marked_processes(NAME, marker):
            missed.append(n)
    assert missed == []


def test_an_empty_environment_is_waited_for_once(
    children: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    child = subprocess.Popen(["env", "-i", "/bin/sleep", "30"])
    children.append(child)
    # env has exec'd sleep, with no environment at all
    _until(lambda: command_line(child.pid) == "/bin/sleep 30")
    assert proc.settled_environ(child.pid) == b""  # waited for, then taken as empty
    polls: list[float] = []
    monkeypatch.setattr(proc.time, "sleep", polls.append)
    assert proc.settled_environ(child.pid) == b""
    assert polls == []  # known empty: not waited for at every sweep


def test_an_exited_process_is_not_waited_for(
    children: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    child = subprocess.Popen(["/bin/true"])
    children.append(child)
    _until(lambda: _state(child.pid) == "Z")  # a zombie until we reap it
    polls: list[float] = []
    monkeypatch.setattr(proc.time, "sleep", polls.append)
    assert proc.settled_environ(child.pid) == b""
    assert polls == []


def _until(condition: Callable[[], bool], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the child never got there"
        time.sleep(0.005)


def _state(pid: int) -> str:
    found = proc.stat(pid)
    return found.state if found else ""
