"""Hostile text through every printer of the real CLI: an agent (unruly_agent.py ``painted``)
puts escape sequences, C1 controls and bidi overrides in each field a printer shows, and
no byte of what the CLI prints — progress lines, the envelope, ``wait --pretty``, ``ps``,
``show``, ``logs`` (human and JSON) — is a character a terminal obeys; each text is still
shown, made visible. On a pseudo-terminal too (the CLI behaves as on a person's screen).
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time

import pytest

from acp_bridge.cli import main
from acp_bridge.cli._safe_text import one_line
from tests.conftest import AGENTS
from tests.helpers import terminal_controls
from tests.runs.conftest import RunsEnv

SHAPES = [
    "clip\x1b]52;c;aGVsbG8=\x07board",  # OSC 52: writes the clipboard
    "title\x1b]0;pwned\x07",  # OSC 0: the window's title
    "clear\x1b[2J\x1b[H",  # clear the screen, cursor home
    "c1\x9b2J",  # the same as one C1 control
    "osc-c1\x9d0;title\x9c",  # OSC and ST as C1 controls
    "bidi\u202eevil\u202c",  # right-to-left override
    "iso\u2066late\u2069",  # bidi isolates
    "safe\rEVIL",  # a carriage return overwriting the line
    "back\x08\x08\x08spaced",  # backspaces
    "bel\x07del\x7fnul\x00",  # BEL, DEL, NUL
    "dcs\x1bP+q544e\x1b\\",  # a device control string
    "zero\u200bwidth\U000e0041tag",  # zero width space, an invisible tag letter
    "sep\x85\u2028\u2029",  # NEL, line and paragraph separators
    "sgr\x1b7\x1b[31mred\x1b8",  # save cursor, colour, restore cursor
]


def _painted(runs: RunsEnv) -> None:
    texts = runs.root / "texts.json"
    texts.write_text(json.dumps(SHAPES))
    runs.config(
        {
            "painted": {
                "command": sys.executable,
                "args": [str(AGENTS / "unruly_agent.py"), "painted"],
                "env": {"UNRULY_TEXTS": str(texts)},
                "permissions": {"mode": "deny-all"},
            }
        }
    )


def _cli(runs: RunsEnv, *argv: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", *argv],
        cwd=runs.root,
        capture_output=True,
        timeout=60,
        check=False,
    )
    out, err = done.stdout.decode(), done.stderr.decode()
    assert not terminal_controls(out.replace("\n", "")), (argv, out[:2000])
    assert not terminal_controls(err), (argv, err[:2000])
    return done.returncode, out, err


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The CLI's ``main`` in this process (the cwd and run store are the test's, as for
    :func:`_cli`): the commands that read the run store print the same text here."""
    capsys.readouterr()  # nothing of before
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert not terminal_controls(out.replace("\n", "")), (argv, out[:2000])
    assert not terminal_controls(err), (argv, err[:2000])
    return code, out, err


def _shows_every_shape(text: str) -> None:
    for shape in SHAPES:
        assert one_line(shape) in text, (shape, text[:3000])


def test_every_printer_shows_controls_and_obeys_none(
    runs: RunsEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run and its start as real processes; the commands that read what it left (wait,
    show, ps, logs) through the CLI's ``main``, each a process's start-up (~0.5 s of CPU) the
    fewer."""
    _painted(runs)
    code, out, err = _cli(runs, "run", "painted", "go", "--cwd", str(runs.root))
    envelope = json.loads(out)
    assert code == 0 and envelope["output"] == "\n".join(SHAPES)  # the data is whole
    _shows_every_shape(err)  # thoughts, tool calls, plans, permissions, stderr lines

    code, out, _ = _cli(runs, "run", "--detach", "painted", "go", "--cwd", str(runs.root))
    run_id = json.loads(out)["task_id"]
    code, out, _ = _main(capsys, "wait", "--pretty", run_id)
    assert code == 0 and json.loads(out)["output"] == "\n".join(SHAPES)
    code, out, _ = _main(capsys, "show", run_id)
    assert json.loads(out)["envelope"]["output"] == "\n".join(SHAPES)
    code, out, _ = _main(capsys, "ps", "--all")
    assert run_id in out and "clip\\x1b]52" in out  # the summary, made visible
    code, out, _ = _main(capsys, "ps", "--all", "--json")
    assert {row["task_id"] for row in json.loads(out)} >= {run_id}
    code, out, _ = _main(capsys, "logs", run_id)
    _shows_every_shape(out)
    code, out, _ = _main(capsys, "logs", "--json", run_id)
    events = [json.loads(line) for line in out.splitlines()]
    titles = {e.get("title") for e in events if e["kind"] == "tool_call"}
    assert titles == set(SHAPES)  # JSON carries the same text, escaped


def test_on_a_terminal_too(runs: RunsEnv) -> None:
    """stdout and stderr on a pseudo-terminal, as in a person's shell."""
    _painted(runs)
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "run", "painted", "go", "--cwd", str(runs.root)],
        cwd=runs.root,
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
    )
    os.close(secondary)
    seen = bytearray()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([primary], [], [], deadline - time.monotonic())
        if not ready:
            break
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(primary)
    assert process.wait(timeout=10) == 0
    text = seen.decode().replace("\r\n", "\n")  # the terminal's ONLCR
    assert not terminal_controls(text), text[:3000]
    _shows_every_shape(text)
    envelope = json.loads(text[text.index("\n{\n") :])  # indented, after the progress
    assert envelope["output"] == "\n".join(SHAPES)
