"""The sandbox's own plumbing holds no copy of the agent's pipes (issue 19, class 10): an agent
that closes its stdout (or its stdin) and keeps running ends the run ``agent_exited`` in
every sandbox mode the machine offers, as it does without one — not at the run's timeout
because bwrap's own processes kept the pipe open."""

from __future__ import annotations

import time

import anyio
import pytest

from acp_bridge._os.sandbox import SandboxUnavailable, choose_mode
from acp_bridge.errors import ErrorCode
from tests.conftest import AgentHarness

MODES = ["off", "bwrap", "landlock", "auto"]
SHAPES = {
    "closes its stdout": ("close-stdout", "during prompt"),
    "closes both": ("close-both", "during prompt"),
    # Closed before it answers session/new, so the prompt is written after: a prompt
    # written into the pipe just before the close would only be unread (a deaf agent).
    "closes its stdin": ("close-stdin-first", "closed its stdin"),
}
TIMEOUT = 20.0


def usable(mode: str) -> None:
    try:
        anyio.run(lambda: choose_mode(mode))  # type: ignore[arg-type]
    except SandboxUnavailable as exc:
        pytest.skip(f"sandbox mode {mode} is not usable here: {exc}")


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("mode", MODES)
def test_an_agent_that_closes_a_pipe_and_keeps_running_ends_the_run(
    harness: AgentHarness, mode: str, shape: str
) -> None:
    usable(mode)
    fault, words = SHAPES[shape]
    config = harness.fault(fault, timeouts={"run": TIMEOUT}, sandbox={"mode": mode})
    started = time.monotonic()
    result = harness.run("fault", "go", config)
    took = time.monotonic() - started
    assert result.meta.error_code == ErrorCode.AGENT_EXITED, result.error
    assert words in result.error
    assert took < TIMEOUT / 2, f"ended after {took:.1f}s: by the timeout, not by the closed pipe"
    assert harness.leftovers() == []
