"""What the CLI writes: stdout for results, stderr for everything else; exit codes."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from acp_bridge.errors import ErrorCode

if TYPE_CHECKING:  # not at run time: wait, ps and logs must start without pydantic
    from acp_bridge.envelope import SubtaskResult

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 124
EXIT_INTERRUPTED = 130


def out(text: str = "", stream: TextIO | None = None) -> None:
    print(text, file=stream or sys.stdout)


def err(text: str) -> None:
    print(text, file=sys.stderr)


def exit_code_for(result: SubtaskResult, *, interrupted: bool = True) -> int:
    """The process exit code for an envelope (DESIGN §7). ``cancelled`` is 130 only when
    this process was interrupted: an agent that cancels its own turn is a failure (1)."""
    return exit_code_of(result.status, result.meta.error_code, interrupted=interrupted)


def exit_code_of(status: str, code: str | None, *, interrupted: bool = True) -> int:
    """The exit code for an envelope's ``status`` and ``meta.error_code`` (as JSON data)."""
    if status == "done":
        return EXIT_OK
    if code == ErrorCode.TIMEOUT:
        return EXIT_TIMEOUT
    if code == ErrorCode.CANCELLED:
        return EXIT_INTERRUPTED if interrupted else EXIT_FAILED
    if code == ErrorCode.CONFIG_ERROR:
        return EXIT_USAGE
    return EXIT_FAILED


def print_envelope(result: SubtaskResult, *, pretty: bool = False, interrupted: bool = True) -> int:
    """The envelope on stdout (indented on a terminal or with --pretty); its exit code."""
    out(result.to_json(indent=2 if pretty or sys.stdout.isatty() else None))
    return exit_code_for(result, interrupted=interrupted)
