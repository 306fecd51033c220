"""The CLI's own streams, each shape a real ``acp-bridge run``: closed stdin, stdout or
stderr, a full stdout, a reader that goes away, ASCII-only locales and encodings, and a
consumer that never reads stderr while events stream. Whatever the shape, the envelope
reaches stdout when stdout can take it, the exit code is the run's (or 1 with a clear
message when stdout cannot take it), no traceback is printed, and the run ends on time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import AGENTS, AgentHarness

TEXT = "héllo ✓ 😀 ünïcode"


@dataclass(frozen=True)
class Shape:
    redirect: str = ""  # shell redirections of the CLI's descriptors
    env: dict[str, str] = field(default_factory=dict)
    task: str = f"Reply with exactly {TEXT}"
    events: str = "human"
    agent: str = "demo2"
    expect_code: int = 0
    expect_output: str | None = TEXT  # None: stdout is not ours to read
    expect_err: str = ""
    read_stderr: bool = True
    envelope: bool = True  # False: a refusal before the run (stderr says why)


ASCII_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
SHAPES = {
    "stdin-closed": Shape(redirect="<&-"),
    "stdin-closed-task-from-stdin": Shape(redirect="<&-", task="-", expect_output=None),
    "stdin-endless": Shape(
        redirect="</dev/zero", task="-", expect_code=2, envelope=False, expect_err="longer than"
    ),
    "stderr-closed": Shape(redirect="2>&-"),
    "stderr-closed-ndjson": Shape(redirect="2>&-", events="ndjson"),
    "stdout-closed": Shape(redirect=">&-", expect_output=None),
    "all-closed": Shape(redirect="<&- >&- 2>&-", expect_output=None),
    "stdout-full": Shape(
        redirect=">/dev/full",
        expect_code=1,
        expect_output=None,
        expect_err="cannot write to stdout: No space left on device",
    ),
    "stdout-reader-gone": Shape(redirect="| head -c 1 >/dev/null", expect_output=None),
    "stderr-full": Shape(redirect="2>/dev/full"),
    "stderr-reader-gone": Shape(redirect="2> >(head -c 1 >/dev/null)", events="ndjson"),
    "lang-c": Shape(env={"LANG": "C", "LC_ALL": "C"}),
    "ascii-locale": Shape(env=ASCII_LOCALE),
    "ascii-locale-ndjson": Shape(env=ASCII_LOCALE, events="ndjson"),
    "ascii-locale-task-from-stdin": Shape(
        env=ASCII_LOCALE, task="-", redirect=f"<<< 'Reply with exactly {TEXT}'"
    ),
    "ioencoding-ascii": Shape(env={"PYTHONIOENCODING": "ascii"}),
    "ioencoding-latin-1": Shape(env={"PYTHONIOENCODING": "latin-1"}, events="ndjson"),
    "stderr-unread-ndjson": Shape(
        agent="chatty", events="ndjson", read_stderr=False, expect_output=None
    ),
    "stderr-unread-human": Shape(agent="chatty", read_stderr=False, expect_output=None),
}


def _config(harness: AgentHarness) -> Path:
    harness.config(
        {
            "demo2": {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]},
            # 4 MiB of message chunks: events that fill any stderr pipe many times over.
            "chatty": {
                "command": sys.executable,
                "args": [str(AGENTS / "unruly_agent.py"), "chatty", "4096"],
            },
        }
    )
    return harness.root / "acp-bridge.yaml"


@pytest.mark.parametrize("name", list(SHAPES))
def test_the_envelope_gets_out_whatever_the_streams(harness: AgentHarness, name: str) -> None:
    shape = SHAPES[name]
    config = _config(harness)
    argv = [
        sys.executable, "-m", "acp_bridge", "--config", str(config), "run", shape.agent,
        shape.task, "--cwd", str(harness.workspace), "--events", shape.events,
        "--timeout", "30",
    ]  # fmt: skip
    line = " ".join(f"'{a}'" for a in argv)
    if "|" in shape.redirect:  # the reader is part of the pipeline; we read its stderr
        script = f"{line} {shape.redirect}; exit ${{PIPESTATUS[0]}}"
    else:
        script = f"exec {line} {shape.redirect}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIO"))}
    env.pop("PYTHONUTF8", None)
    env.update({"LANG": "C.UTF-8", **shape.env})
    started = time.monotonic()
    process = subprocess.Popen(
        ["bash", "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    if shape.read_stderr:
        out, err = process.communicate(timeout=60)
    else:  # read stdout to its end, never stderr: the run must end anyway
        assert process.stdout is not None
        out = process.stdout.read()
        process.wait(timeout=60)
        assert process.stderr is not None
        err = process.stderr.read()
    took = time.monotonic() - started
    assert took < 30 + 5, f"{name}: {took:.1f}s"
    text = err.decode("utf-8", "replace")
    assert "Traceback" not in text and "Fatal Python error" not in text, text[-3000:]
    assert shape.expect_err in text, text[-3000:]
    assert process.returncode == shape.expect_code, (name, text[-3000:])
    if "stdout" in name or "all-closed" in name or not shape.envelope:
        return
    envelope = json.loads(out)  # one JSON value, nothing else on stdout
    assert out.isascii() or not shape.env.get("PYTHONIOENCODING")  # JSON the stream can carry
    if shape.expect_output is not None:
        assert envelope["output"] == shape.expect_output, envelope
    else:
        assert envelope["status"] in ("done", "failed")
    if shape.agent == "chatty":
        assert envelope["status"] == "done" and len(envelope["output"]) > 4_000_000
