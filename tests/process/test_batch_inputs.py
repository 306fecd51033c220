"""``acp-bridge batch`` given a tasks file that is no tasks file (issue 37, class 2): every
member — a device, a FIFO, gigabytes, an endless stdin, a line nested 100 000 deep — is exit
2 with one line naming the file (and line), in bounded memory: the command's peak resident
size (its own, from ``wait4``) stays within what the member may hold over an idle run's.
A raw U+2028 inside a task's string is JSON, and runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import pytest

from acp_bridge._batch.tasks import MAX_TASKS_LINE_BYTES

pytestmark = pytest.mark.timeout(120)  # a read that blocks fails the test, never hangs it
SLACK_KIB = 32 << 10
"""Allocator slack over an idle run's peak: far less than any member read whole."""

ENDLESS = (
    "import os\nos.write(1, b'{\"task\": \"')\nwhile True:\n    os.write(1, b'x' * (1 << 20))\n"
)
"""A writer of one task line that never ends (it stops at EPIPE, once the reader has)."""


def batch(tasks: str, cwd: Path, stdin: int | None = None) -> tuple[int, str, int]:
    """Exit code, stderr and peak RSS in KiB of ``acp-bridge batch TASKS``."""
    process = subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "batch", tasks, "--out", str(cwd / "out.jsonl")],
        cwd=cwd,
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        err = process.stderr.read().decode()
    finally:
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, err, usage.ru_maxrss


@pytest.fixture(scope="module")
def idle_peak(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The peak of a batch refused at its first line: the command's own footprint."""
    folder = tmp_path_factory.mktemp("idle")
    (folder / "tasks.jsonl").write_text('{"entry": "bash"}\n')
    code, err, peak = batch("tasks.jsonl", folder)
    assert code == 2, err
    return peak


def fifo(folder: Path) -> tuple[str, str]:
    os.mkfifo(folder / "tasks.jsonl")
    return "tasks.jsonl", "tasks.jsonl: not a regular file: it is a FIFO (named pipe)"


def device(folder: Path) -> tuple[str, str]:
    (folder / "tasks.jsonl").symlink_to("/dev/zero")
    return "tasks.jsonl", "tasks.jsonl: not a regular file: it is a character device"


def gigabytes(folder: Path) -> tuple[str, str]:
    with (folder / "tasks.jsonl").open("wb") as file:
        file.truncate(8 << 30)
    return "tasks.jsonl", "tasks.jsonl: 8589934592 bytes: a tasks file is read up to"


def deep(folder: Path) -> tuple[str, str]:
    line = '{"entry": "bash", "task": "ls", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    (folder / "tasks.jsonl").write_text(line)
    return "tasks.jsonl", "tasks.jsonl:1: nested deeper than 64 levels"


def unclosed(folder: Path) -> tuple[str, str]:
    (folder / "tasks.jsonl").write_text('{"task": ' + "[" * 100_000 + "\n")
    return "tasks.jsonl", "tasks.jsonl:1: nested deeper than 64 levels"


def nuls(folder: Path) -> tuple[str, str]:
    (folder / "tasks.jsonl").write_bytes(bytes(1 << 20))
    return "tasks.jsonl", "tasks.jsonl:1:1: not a JSON object: it begins with '\\x00'"


# member: (make it in the folder → (the argument, the start of stderr's last line),
#          what stdin is: a path, "endless" or None, KiB the member may hold)
Member = tuple[Callable[[Path], tuple[str, str]] | None, str | None, int]
MEMBERS: dict[str, Member] = {
    "fifo": (fifo, None, 0),
    "/dev/zero": (device, None, 0),
    "8 GiB": (gigabytes, None, 0),
    "100000 deep": (deep, None, 0),
    "100000 unclosed": (unclosed, None, 0),
    "a MiB of NULs": (nuls, None, 0),
    "stdin /dev/zero": (None, "/dev/zero", 0),
    "stdin endless line": (None, "endless", MAX_TASKS_LINE_BYTES >> 10),
}
STDIN_SAYS = {
    "/dev/zero": "stdin:1:1: not a JSON object: it begins with '\\x00'",
    "endless": f"stdin:1: a line longer than {MAX_TASKS_LINE_BYTES} bytes",
}


@pytest.mark.parametrize("member", MEMBERS)
def test_a_tasks_file_that_is_none_is_exit_2_naming_it_in_bounded_memory(
    tmp_path: Path, idle_peak: int, member: str
) -> None:
    make, stdin, held = MEMBERS[member]
    with ExitStack() as stack:
        if make is not None:
            argument, says = make(tmp_path)
            code, err, peak = batch(argument, tmp_path)
        else:
            assert stdin is not None
            says = STDIN_SAYS[stdin]
            if stdin == "endless":
                writer = subprocess.Popen([sys.executable, "-c", ENDLESS], stdout=subprocess.PIPE)
                stack.callback(writer.wait)
                stack.callback(writer.kill)
                assert writer.stdout is not None
                source = stack.enter_context(writer.stdout)
            else:
                source = stack.enter_context(Path(stdin).open("rb"))
            code, err, peak = batch("-", tmp_path, stdin=source.fileno())
    last = err.strip().splitlines()[-1] if err.strip() else ""
    assert code == 2, err
    assert "Traceback" not in err and last.startswith(f"error: {says}"), err
    assert peak <= idle_peak + held + SLACK_KIB, (peak, idle_peak)


def test_a_raw_line_separator_inside_a_task_is_json_and_runs(tmp_path: Path) -> None:
    text = "a\u2028b\u2029c\x85d"
    task = {"entry": "bash", "task": f"printf '%s' '{text}'"}
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task, ensure_ascii=False) + "\n")
    code, err, _ = batch("tasks.jsonl", tmp_path)
    assert code == 0, err
    [envelope] = [
        json.loads(line) for line in (tmp_path / "out.jsonl").read_text().split("\n")[:-1]
    ]
    assert envelope["output"]["stdout"] == text
