"""Whether a group's marker is still carried: every asker at once gets its own answer from a
shared pass over /proc, one that began after it asked."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest

from acp_bridge._os.process import marked_processes, marker_scans
from acp_bridge._os.process.marker_scans import marker_present

NAME = "ACP_BRIDGE_TEST_MARKER"


def test_concurrent_askers_each_get_their_own_answer_from_shared_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    live = [f"live-{os.getpid()}-{n}" for n in range(3)]
    gone = [f"gone-{os.getpid()}-{n}" for n in range(20)]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.stdin.read()"],
            stdin=subprocess.PIPE,
            env={**os.environ, NAME: marker},
        )
        for marker in live
    ]
    passes: list[list[str]] = []
    original = marked_processes.markers_present

    def counted(name: str, values: list[str]) -> set[str]:
        passes.append(list(values))
        return original(name, values)

    answers: dict[str, bool] = {}

    async def ask(marker: str) -> None:
        answers[marker] = await marker_present(NAME, marker)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for marker in [*gone, *live]:
                tg.start_soon(ask, marker)

    monkeypatch.setattr(marker_scans, "markers_present", counted)  # the real one, counted
    try:
        anyio.run(main)
    finally:
        for child in children:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(10)
    assert answers == {**dict.fromkeys(gone, False), **dict.fromkeys(live, True)}
    assert sorted(m for batch in passes for m in batch) == sorted([*gone, *live])
    assert len(passes) < len(gone) + len(live)  # shared: fewer passes than askers


def test_a_marker_that_was_never_given_is_absent() -> None:
    assert anyio.run(marker_present, NAME, "no-such-marker") is False
