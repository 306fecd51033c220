"""Work on a thread or in a loop still ends with the run (issue 19, class 3), through the real
agent process: a read that skips through a terabyte of sparse file, a permission policy over
a 16 MB command. The run ends by T + 5 s (and at once on cancel) whatever that work was."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.spy import Spy

# Seconds each (timeouts waited out, hostile cases): out of the default run, in CI's.
pytestmark = pytest.mark.slow

TIB = 1 << 40


def request(method: str, params: str) -> dict[str, Any]:
    line = (
        '{"jsonrpc":"2.0","id":%ID%,"method":"' + method + '",'
        '"params":{"sessionId":"%SESSION%",' + params + "}}"
    )
    return {"raw_request": line}


@pytest.fixture
def sparse(spy: Spy) -> Path:
    path = spy.harness.workspace / "sparse.bin"
    with path.open("wb") as out:
        out.truncate(TIB)  # no disk: a hole the size of a terabyte
    if os.stat(path).st_blocks > 1024:
        pytest.skip("this filesystem does not keep sparse files")
    return path


READS = {
    "skip to a line far in": '"line":1000000000000',
    "a window past the middle": '"line":999999999,"limit":1',
    "a long window from the start": '"line":1,"limit":1000000000',
}


def cli(spy: Spy, script: dict[str, Any], timeout: float) -> subprocess.Popen[str]:
    """``acp-bridge run spy go`` as its own process: its exit is the run's end (a thread
    still reading kept the process alive past the envelope)."""
    spy.config(script, timeouts={"run": timeout})
    argv = [
        sys.executable,
        "-m",
        "acp_bridge",
        "--config",
        str(spy.harness.root / "acp-bridge.yaml"),
    ]
    argv += ["run", "-q", "spy", "go", "--cwd", str(spy.harness.workspace)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("shape", list(READS))
def test_a_read_through_a_sparse_terabyte_ends_with_the_run(
    spy: Spy, sparse: Path, shape: str
) -> None:
    script = {"prompt": [request("fs/read_text_file", f'"path":"{sparse}",' + READS[shape])]}
    started = time.monotonic()
    process = cli(spy, script, timeout=2)
    out, err = process.communicate(timeout=60)
    took = time.monotonic() - started
    envelope = json.loads(out)
    # Refused at once (the read cap) or stopped by the run's deadline: never running on.
    assert envelope["status"] == "done" or envelope["meta"]["error_code"] == "timeout", err
    assert took < 2 + 5 + 2, took  # T + 5 s, and the interpreter's own start


def test_ctrl_c_ends_a_run_whose_read_is_still_skipping(spy: Spy, sparse: Path) -> None:
    script = {"prompt": [request("fs/read_text_file", f'"path":"{sparse}","line":1000000000000')]}
    process = cli(spy, script, timeout=600)
    time.sleep(3)  # the read is under way (nothing to poll: it says nothing until it ends)
    interrupted = time.monotonic()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert json.loads(out)["meta"]["error_code"] == "cancelled", err[-2000:]
    assert process.returncode == 130
    assert time.monotonic() - interrupted < 5, "Ctrl-C did not end the run within its end grace"


def test_the_policy_does_not_read_a_16_mb_command_and_a_reject_rule_holds(spy: Spy) -> None:
    padding = " " * (16 << 20)
    command = f"rm -rf /tmp/x{padding}"
    permissions = {"mode": "approve-all", "rules": [{"command": "rm", "decision": "reject"}]}
    script = {"prompt": [request("terminal/create", f'"command":"{command}"')]}
    result = spy.harness.run(
        "spy", "go", spy.config(script, timeouts={"run": 20}, permissions=permissions)
    )
    assert result.status == "done", result.error  # answered in time, not a timeout
    assert "refused by the permission policy: rule 1 (reject)" in result.output
