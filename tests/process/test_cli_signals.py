"""Signals at any moment of an entry command — before the imports, mid-turn, twice, during a
shutdown that needs SIGKILL, on ``bash`` and ``spawn`` — end in one full envelope (task id,
entry, agent, duration, partial output) and exit code 130; and the agent dies with the
bridge even when the bridge is SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from acp_bridge._entries.enveloped import END_GRACE
from tests.conftest import AGENTS, AgentHarness
from tests.helpers import alive

# Seconds each (timeouts waited out, hostile cases): out of the default run, in CI's.
pytestmark = pytest.mark.slow

SLACK = 5.0


def cli(harness: AgentHarness, *args: str, stdin: str | None = None) -> subprocess.Popen[str]:
    config = str(harness.root / "acp-bridge.yaml")
    return subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "--config", config, *args],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=harness.workspace,
    )


def hostile_config(harness: AgentHarness, mode: str, *args: str) -> None:
    argv = [str(AGENTS / "unruly_agent.py"), mode, *args]
    timeouts = {"startup": 10, "session": 10, "run": 60, "cancel_grace": 1, "shutdown_grace": 1}
    harness.config({"hostile": {"command": sys.executable, "args": argv, "timeouts": timeouts}})


def wait_for(process: subprocess.Popen[str], needle: str) -> str:
    """Read stderr lines until one contains ``needle`` (the run reached that point)."""
    assert process.stderr is not None
    seen = []
    while line := process.stderr.readline():
        seen.append(line)
        if needle in line:
            return "".join(seen)
    raise AssertionError(f"never saw {needle!r}: {''.join(seen)}")


def finish(process: subprocess.Popen[str], bound: float) -> tuple[int, dict[str, Any], str]:
    out, err = process.communicate(timeout=bound)
    return process.returncode, json.loads(out), err


def assert_full(envelope: dict[str, Any], entry: str, **meta: Any) -> None:
    assert envelope["task_id"].startswith("sub_")
    assert envelope["meta"]["entry"] == entry
    assert envelope["meta"]["error_code"] == "cancelled"
    assert isinstance(envelope["meta"]["duration_ms"], int)
    for key, value in meta.items():
        assert envelope["meta"][key] == value


@pytest.mark.parametrize("times", [1, 2], ids=["once", "twice"])
def test_ctrl_c_on_an_agent_that_stopped_reading_ends_with_the_full_envelope(
    harness: AgentHarness, times: int
) -> None:
    hostile_config(harness, "deaf", "3000")
    process = cli(harness, "run", "hostile", "-", "--events", "ndjson", stdin="p" * (2 << 20))
    assert process.stdin is not None
    process.stdin.write("p" * (2 << 20))  # a 2 MiB prompt, read by the CLI from stdin
    process.stdin.close()
    process.stdin = None
    wait_for(process, '"kind": "message"')  # the partial answer is in
    for _ in range(times):
        process.send_signal(signal.SIGINT)
        time.sleep(0.2)
    # Whatever the agent does (it ignores SIGTERM and never reads), the bridge is done within
    # the end grace; the second Ctrl-C does not wait for any of it.
    code, envelope, err = finish(process, END_GRACE + SLACK)
    assert code == 130, err
    assert_full(envelope, "acp_spawn", agent="hostile", session_id="hostile_session_1")
    assert envelope["output"] == "partial before going deaf"
    assert "not reading stdin any more" in envelope["meta"]["stderr_tail"]
    assert "Traceback" not in err
    if times == 2:
        assert "interrupted again: ending the run now" in err
    assert harness.leftovers() == []


SIGNAL_EARLY = """
import os, signal, sys
from acp_bridge.cli import _signals
install = _signals.Interrupts.install
def install_then_signal(self):
    install(self)
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))  # before any heavy import
_signals.Interrupts.install = install_then_signal
from acp_bridge.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_before_the_imports_is_a_cancelled_run_not_a_traceback(
    harness: AgentHarness, name: str
) -> None:
    hostile_config(harness, "malformed")
    config = str(harness.root / "acp-bridge.yaml")
    process = subprocess.run(
        [sys.executable, "-c", SIGNAL_EARLY, name, "--config", config, "run", "hostile", "go"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=harness.workspace,
    )
    assert process.returncode == 130, process.stderr
    assert "Traceback" not in process.stderr
    envelope = json.loads(process.stdout)
    assert_full(envelope, "acp_spawn", agent="hostile")
    assert envelope["error"] == "the run was cancelled before it started"


def test_ctrl_c_on_bash_keeps_what_it_printed(harness: AgentHarness) -> None:
    harness.config({})
    process = cli(harness, "bash", "--events", "ndjson", "--", "echo printed; sleep 30")
    wait_for(process, '"text": "printed')
    process.send_signal(signal.SIGINT)
    code, envelope, err = finish(process, END_GRACE + SLACK)
    assert code == 130, err
    assert_full(envelope, "bash")
    assert envelope["output"]["stdout"] == "printed\n"


def test_ctrl_c_on_spawn_gives_a_full_envelope(harness: AgentHarness) -> None:
    harness.config({})
    directive = '***CALL_TOOL bash {"command": "echo spawned >&2; sleep 30"}'
    process = cli(harness, "spawn", directive, "--tools", "bash", "--events", "ndjson")
    wait_for(process, '"kind": "tool_call"')
    process.send_signal(signal.SIGINT)
    code, envelope, err = finish(process, END_GRACE + SLACK)
    assert code == 130, err
    assert_full(envelope, "spawn", model="passthrough")
    assert envelope["meta"]["tool_calls"][0]["title"].startswith("bash: echo spawned")


def test_an_agent_that_cancels_its_own_turn_is_not_an_interrupt(harness: AgentHarness) -> None:
    hostile_config(harness, "self-cancel")
    code, envelope, err = finish(cli(harness, "run", "hostile", "go"), 60)
    assert envelope["meta"]["error_code"] == "cancelled" and envelope["output"] == "I give up"
    assert code == 1, err  # nothing was interrupted: a failure, not 130


def test_the_agent_dies_with_a_sigkilled_bridge(harness: AgentHarness) -> None:
    hostile_config(harness, "deaf", "0")
    process = cli(harness, "run", "hostile", "go", "--events", "ndjson")
    wait_for(process, '"kind": "message"')
    agents = harness.leftovers(wait=0)  # the agent (and its sandbox launcher, if any)
    assert agents
    process.kill()  # SIGKILL: no shutdown sequence runs, no handler
    process.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in agents) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in agents), "the agent outlived the bridge"


def test_the_agent_cannot_read_the_bridges_environment(harness: AgentHarness) -> None:
    # As root, both get a plain user's powers (no capabilities): root may read anything.
    plain = ["setpriv", "--bounding-set=-all", "--"] if os.geteuid() == 0 else []
    argv = [*plain, sys.executable, str(AGENTS / "unruly_agent.py"), "snoop"]
    harness.config({"snoop": {"command": argv[0], "args": argv[1:]}})
    config = str(harness.root / "acp-bridge.yaml")
    process = subprocess.run(
        [*plain, sys.executable, "-m", "acp_bridge", "--config", config, "run", "snoop", "go"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "BRIDGE_ONLY_SECRET": "s3cret-value"},
        cwd=harness.workspace,
    )
    envelope = json.loads(process.stdout)
    assert envelope["output"] == "REFUSED: Permission denied", envelope
