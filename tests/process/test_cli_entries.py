"""The CLI entry commands: bash, spawn, ask, tools; envelopes on stdout, exit codes, start-up
cost, and interruption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acp_bridge._loop.passthrough import call_tool_directive as call
from acp_bridge._os.process.environment import DEPTH_ENV
from acp_bridge.cli import main
from tests.conftest import MARKER_VAR
from tests.helpers import gone_within, until_processes

pytestmark = pytest.mark.usefixtures("isolated_config")


def envelope(capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, object], str]:
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_bash_prints_the_envelope_and_progress(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bash", "--", "printf 'one\\ntwo\\nthree\\n' | tail -n 1"]) == 0
    result, err = envelope(capsys)
    assert result["status"] == "done" and result["summary"] == "three"
    assert "$ printf" in err and "three\n" in err  # the command and its live output on stderr
    assert main(["bash", "-q", "--", "echo", "two", "words"]) == 0
    result, err = envelope(capsys)
    assert result["output"]["stdout"] == "two words\n" and err == ""  # type: ignore[index]


@pytest.mark.parametrize(
    ("argv", "code", "error_code"),
    [
        (["bash", "-q", "--", "exit 3"], 1, "nonzero_exit"),
        (["bash", "-q", "--timeout", "0.2", "--", "sleep 5"], 124, "timeout"),
    ],
)
def test_bash_exit_codes(
    capsys: pytest.CaptureFixture[str], argv: list[str], code: int, error_code: str
) -> None:
    assert main(argv) == code
    result, _ = envelope(capsys)
    assert result["meta"]["error_code"] == error_code  # type: ignore[index]


def test_depth_limit_is_a_failed_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DEPTH_ENV, "1")
    assert main(["bash", "-q", "--", "true"]) == 1
    result, _ = envelope(capsys)
    assert result["meta"]["error_code"] == "depth_limit"  # type: ignore[index]


def test_broken_config_still_prints_an_envelope(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.yaml").write_text("subtasks: {max_depth: -1}\n")
    assert main(["--config", "bad.yaml", "spawn", "x", "--tools", "bash"]) == 2
    result, err = envelope(capsys)
    assert result["meta"] == {"entry": "spawn", "error_code": "config_error"}
    assert "bad.yaml:1:23: subtasks.max_depth: must be at least 0" in err


def test_spawn_and_ask_with_the_passthrough_model(capsys: pytest.CaptureFixture[str]) -> None:
    task = call("bash", {"command": "echo inner"})
    assert main(["spawn", task, "--tools", "bash,nope", "--model", "passthrough", "-q"]) == 0
    result, _ = envelope(capsys)
    assert result["output"] == "inner"
    assert result["meta"]["tools_ignored"] == ["nope"]  # type: ignore[index]
    prompt = call("spawn", {"task": task, "tools": ["bash"]})
    assert main(["ask", prompt, "--model", "passthrough"]) == 0
    result, err = envelope(capsys)
    assert result["output"] == "inner" and result["meta"]["entry"] == "ask"  # type: ignore[index]
    assert "⚙ spawn:" in err and "$ echo inner" in err  # tool calls and the inner command


def test_tools_prints_specs_in_both_shapes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools"]) == 0
    specs = json.loads(capsys.readouterr().out)
    assert [s["function"]["name"] for s in specs] == ["bash", "read_file", "write_file", "spawn"]
    assert main(["tools", "--format", "anthropic", "--tools", "bash,nope"]) == 0
    out, err = capsys.readouterr()
    assert [s["name"] for s in json.loads(out)] == ["bash"]
    assert "unknown tool 'nope' ignored" in err


def bridge(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, *args], capture_output=True, text=True, timeout=30, **kwargs
    )


def test_bash_and_help_do_not_import_the_model_stack() -> None:
    for argv in (["bash", "-q", "--", "true"], ["--help"]):
        run = bridge("-X", "importtime", "-m", "acp_bridge", *argv)
        assert run.returncode == 0, run.stderr
        loaded = {line.split("|")[-1].strip() for line in run.stderr.splitlines()}
        assert "acp_bridge.cli" in loaded
        assert not {m for m in loaded if m.split(".")[0] in ("pydantic_ai", "openai")}, argv


def test_interrupt_exits_130_and_leaves_no_process(marker: str) -> None:
    command = f"export {MARKER_VAR}={marker}; sleep 60 & wait"
    process = subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "bash", "-q", "--", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        anyio.run(lambda: until_processes(MARKER_VAR, marker, 1))  # the sleep (exported to it)
        os.kill(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=10)
        assert process.returncode == 130, err
        assert gone_within(MARKER_VAR, marker) == []
    finally:
        process.kill()


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "-q", "demo", b"hi \xff".decode(errors="surrogateescape")],
        ["bash", "-q", "--", b"echo \xff".decode(errors="surrogateescape")],
        ["spawn", "-q", "--tools", "read_file", b"hi \xff".decode(errors="surrogateescape")],
    ],
    ids=["run", "bash", "spawn"],
)
def test_a_task_that_is_not_utf8_is_a_config_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # A command line in another encoding reaches Python as lone surrogates, which neither
    # the wire, nor a transcript, nor the run store can write.
    assert main(argv) == 2
    result, err = envelope(capsys)
    assert result["status"] == "failed" and result["meta"]["error_code"] == "config_error"
    assert str(result["error"]).startswith("task: not valid UTF-8 text"), result
    assert "Traceback" not in err and "not recorded" not in err, err


def test_the_entries_table_names_where_each_entry_lives() -> None:
    """The command line loads an entry's module before its start-up ends
    (cli/_garbage_collector.py): the table it reads must name the module of each entry function."""
    from acp_bridge._entries.entry_table import ENTRY_TABLE

    for entry, kind in ENTRY_TABLE.items():
        assert kind.name == entry and callable(kind.function())


def test_a_command_leaves_the_collector_on(capsys: pytest.CaptureFixture[str]) -> None:
    """The collector is held off only while a command starts: on after a run, after a
    refusal, after a usage error."""
    import gc

    assert gc.isenabled()
    assert main(["bash", "-q", "--", "true"]) == 0
    assert gc.isenabled()
    assert main(["bash", "--cwd", "/no/such/dir", "-q", "--", "true"]) != 0
    assert gc.isenabled()
    for usage_error in (["bash", "--timeout", "-1", "--", "true"], ["no-such-command"]):
        with pytest.raises(SystemExit):
            main(usage_error)
        assert gc.isenabled()
    capsys.readouterr()


_ENDING = """
import atexit, sys, threading
from acp_bridge.cli import run_command_line
atexit.register(lambda: print("atexit ran", file=sys.stderr))
if sys.argv[1] == "thread":  # work that lasts past the command: waited for
    threading.Thread(target=lambda: (threading.Event().wait(0.5), print("thread done"))).start()
sys.argv[1:] = ["bash", "-q", "--", "printf out; exit 3"]
raise SystemExit(run_command_line())
"""


@pytest.mark.parametrize("threads", ["alone", "thread"])
def test_the_process_ends_with_its_code_its_output_and_its_atexit_handlers(threads: str) -> None:
    """The command-line process ends without the interpreter's teardown (cli/_fast_exit.py):
    the same exit code, the envelope on stdout, the atexit handlers run — and a thread
    still working is waited for."""
    run = bridge("-c", _ENDING, threads)
    assert run.returncode == 1, run.stderr  # the envelope says failed: exit code 1
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("{")]
    envelope = json.loads(line)  # "thread done" may come before it on a slow machine
    assert envelope["status"] == "failed" and envelope["output"]["stdout"] == "out"
    assert "atexit ran" in run.stderr
    assert ("thread done" in run.stdout) == (threads == "thread")


def test_a_command_leaves_the_run_store_closed(tmp_path: Path) -> None:
    """The process ends without the interpreter's teardown, its store connections closed
    all the same: SQLite's write-ahead log folded back, as a closed store has it."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    for argv in (["bash", "-q", "--", "true"], ["ps", "--all"]):
        run = bridge("-m", "acp_bridge", *argv, env=env)
        assert run.returncode == 0, run.stderr
        store = tmp_path / "acp-bridge"
        assert (store / "runs.db").is_file()
        assert sorted(p.name for p in store.glob("runs.db-*")) == [], argv
