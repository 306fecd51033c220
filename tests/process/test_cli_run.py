"""`acp-bridge run` as a user runs it: a real process, signals, exit codes, stdin, events."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import AgentHarness


def start_cli(
    harness: AgentHarness, *args: str, stdin: str | None = None, timeout: float | None = None
) -> subprocess.Popen[str]:
    harness.config(
        {
            "demo2": {
                "command": sys.executable,
                "args": ["-m", "acp_bridge._demo.agent"],
                "timeouts": {"run": timeout or 60},
            }
        }
    )
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "acp_bridge",
            "--config",
            str(harness.root / "acp-bridge.yaml"),
            "run",
            "demo2",
            *args,
            "--cwd",
            str(harness.workspace),
        ],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str], stdin: str | None = None) -> tuple[int, dict, str]:
    out, err = process.communicate(stdin, timeout=30)
    return process.returncode, json.loads(out), err


def test_done_exits_0_and_prints_the_envelope(harness: AgentHarness) -> None:
    code, envelope, _ = finish(start_cli(harness, "Reply with exactly CLI-OK"))
    assert code == 0 and envelope["output"] == "CLI-OK" and envelope["status"] == "done"


def test_task_from_stdin_and_ndjson_events(harness: AgentHarness) -> None:
    process = start_cli(harness, "-", "--events", "ndjson", stdin="Reply with exactly PIPED")
    code, envelope, err = finish(process, "Reply with exactly PIPED")
    assert code == 0 and envelope["output"] == "PIPED"
    events = [json.loads(line) for line in err.splitlines()]
    phases = [e["phase"] for e in events if e["kind"] == "status"]
    assert phases[:4] == ["starting", "initialized", "session", "prompting"]
    assert {"kind": "message", "text": "PIPED"}.items() <= next(
        e for e in events if e["kind"] == "message"
    ).items()


def test_timeout_exits_124(harness: AgentHarness) -> None:
    # Long enough for the agent to start (a sandboxed interpreter, seconds under load), so
    # the timeout falls on the prompt and cancels it; far short of the 30 s it sleeps.
    code, envelope, _ = finish(start_cli(harness, "sleep 30", "--timeout", "5"))
    assert code == 124 and envelope["meta"]["error_code"] == "timeout"
    assert envelope["meta"].get("stop_reason") == "cancelled", envelope
    assert harness.leftovers() == []


def test_ctrl_c_cancels_gracefully_and_exits_130(harness: AgentHarness) -> None:
    process = start_cli(harness, "sleep 30", "--events", "ndjson")
    assert process.stderr is not None
    seen = []
    while line := process.stderr.readline():  # until the turn is really under way
        seen.append(line)
        if '"phase": "prompting"' in line:
            break
    process.send_signal(signal.SIGINT)
    code, envelope, err = finish(process)
    err = "".join(seen) + err
    assert code == 130, err
    assert envelope["meta"]["error_code"] == "cancelled"
    assert envelope["meta"].get("stop_reason") == "cancelled", envelope
    assert "interrupted: cancelling the run" in err
    assert harness.leftovers() == []


def test_unknown_agent_exits_2(harness: AgentHarness) -> None:
    harness.config({})
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_bridge",
            "--config",
            str(harness.root / "acp-bridge.yaml"),
            "run",
            "nobody",
            "hi",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "HOME": str(harness.root)},
    )
    assert process.returncode == 2
    envelope = json.loads(process.stdout)
    assert envelope["meta"]["error_code"] == "config_error"
    assert "no agent profile named 'nobody'" in envelope["error"]
    assert Path(harness.root).exists()


def test_an_abbreviated_config_option_still_gives_run_its_options(harness: AgentHarness) -> None:
    # argparse takes `--conf FILE`; the command line's command (run) must still be found past
    # its value, or run's own options (--timeout here) were "unrecognized arguments".
    harness.config({"demo2": {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]}})
    config = str(harness.root / "acp-bridge.yaml")
    argv = ["--conf", config, "run", "demo2", "Reply with exactly ABBREV", "--timeout", "30"]
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", *argv, "--cwd", str(harness.workspace)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == "ABBREV"


def test_the_agent_starts_before_the_session_machinery_loads(harness: AgentHarness) -> None:
    # Issue 24: the wire schema, connection, session and services load while the agent
    # starts up, not before. Which of them are loaded is read as the agent's process starts.
    harness.config({"demo2": {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]}})
    heavy = (
        "acp_bridge._acp.wire.schema",
        "acp_bridge._acp.rpc.connection",
        "acp_bridge._acp.session.acp_session",
        "acp_bridge._acp.services.client",
    )
    code = (
        "import sys\n"
        "from acp_bridge._os.process import procgroup\n"
        "start = procgroup.ProcessGroup.start.__func__\n"
        "seen = []\n"
        "async def noted(cls, *args, **kwargs):\n"
        f"    seen.append(sorted(m for m in {heavy!r} if m in sys.modules))\n"
        "    return await start(cls, *args, **kwargs)\n"
        "procgroup.ProcessGroup.start = classmethod(noted)\n"
        "from acp_bridge.cli import main\n"
        f"code = main(['--config', {str(harness.root / 'acp-bridge.yaml')!r}, 'run', 'demo2',"
        f" 'Reply with exactly OK', '--cwd', {str(harness.workspace)!r}, '-q'])\n"
        "print(code, seen, sorted(m for m in " + repr(heavy) + " if m in sys.modules),"
        " file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == "OK"
    # exit code 0; at the agent's start none of them; by the end, all (they did the run)
    assert done.stderr.strip() == f"0 [[]] {sorted(heavy)}", done.stderr
