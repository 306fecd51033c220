"""fast-agent (PyPI fast-agent-mcp) as a real MCP host of ``acp-bridge mcp``.

Its offline ``passthrough`` model turns ``***CALL_TOOL <tool> <json>`` into a tool call and
answers with the tool's result, so ``fast-agent go --message`` prints what our server
returned: the envelope (fast-agent gives its model the structured content). Over stdio in
both protocol eras (its own ``--mcp-protocol``), and over HTTP with the bearer token
(``--auth``). The demo agent's profile carries a marker: nothing of the run may be left.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from acp_bridge.envelope import SubtaskResult
from tests.interop.harness import MARKER_NAME, assert_no_leftovers, installed

pytestmark = pytest.mark.interop

BRIDGE = [sys.executable, "-m", "acp_bridge", "mcp"]
CALL = '***CALL_TOOL acp_spawn {"agent": "demo", "task": "Reply with exactly PONG"}'
TOKEN = "interop-token-5d1e"


def bridge_config(tmp_path: Path, marker: str) -> Path:
    config = tmp_path / "acp-bridge.yaml"
    demo = {"name": "demo", "env": {MARKER_NAME: marker}}
    data = {"transcripts": {"dir": str(tmp_path / "transcripts")}, "acp": {"agents": [demo]}}
    config.write_text(json.dumps(data))  # JSON is YAML
    return config


def fast_agent(workdir: Path, *args: str, env: dict[str, str]) -> str:
    """``fast-agent go`` with the passthrough model sending CALL; what it printed."""
    folder = installed("fast-agent")
    done = subprocess.run(
        [str(folder / "bin" / "fast-agent"), "go", "--model", "passthrough", *args,
         "--message", CALL, "--quiet", "--no-home"],
        cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def envelope_in(printed: str) -> SubtaskResult:
    """The envelope fast-agent's model echoed: the JSON line of its output."""
    (line,) = [line for line in printed.splitlines() if line.startswith("{")]
    return SubtaskResult.model_validate_json(line)


@pytest.mark.parametrize("protocol", ["legacy", "modern"])
def test_fast_agent_calls_acp_spawn_over_stdio(
    tmp_path: Path, workdir: Path, protocol: str
) -> None:
    marker = uuid.uuid4().hex
    config = bridge_config(tmp_path, marker)
    stdio = " ".join([*BRIDGE, "--config", str(config)])
    env = {**os.environ, MARKER_NAME: marker}
    printed = fast_agent(workdir, "--stdio", stdio, "--mcp-protocol", protocol, env=env)
    envelope = envelope_in(printed)
    assert (envelope.status, envelope.output) == ("done", "PONG")
    assert (envelope.meta.entry, envelope.meta.agent) == ("acp_spawn", "demo")
    assert_no_leftovers(marker)


def test_fast_agent_calls_acp_spawn_over_http_with_the_token(tmp_path: Path, workdir: Path) -> None:
    marker = uuid.uuid4().hex
    config = bridge_config(tmp_path, marker)
    env = {**os.environ, MARKER_NAME: marker, "ACP_BRIDGE_MCP_TOKEN": TOKEN}
    log = tmp_path / "server.log"
    with log.open("w") as stderr:
        server = subprocess.Popen(
            [*BRIDGE, "--config", str(config), "--http", "127.0.0.1:0"],
            env=env, cwd=workdir, stdin=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    try:
        url = _served_url(log, server)
        printed = fast_agent(workdir, "--url", url, "--auth", TOKEN, env=env)
        envelope = envelope_in(printed)
        assert (envelope.status, envelope.output) == ("done", "PONG")
        refused = fast_agent_without_token(workdir, url, env)
        assert "401" in refused or "nauthorized" in refused
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    assert_no_leftovers(marker)


def fast_agent_without_token(workdir: Path, url: str, env: dict[str, str]) -> str:
    folder = installed("fast-agent")
    done = subprocess.run(
        [str(folder / "bin" / "fast-agent"), "go", "--model", "passthrough", "--url", url,
         "--message", CALL, "--quiet", "--no-home"],
        cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=180, check=False,
    )  # fmt: skip
    assert "PONG" not in done.stdout
    return done.stdout + done.stderr


def _served_url(log: Path, server: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:
        if found := re.search(r"serving (http://\S+)", log.read_text()):
            return found.group(1)
        time.sleep(0.05)  # the server says where it listens on stderr: nothing to wait on
    raise AssertionError(f"acp-bridge mcp did not start: {log.read_text()}")
