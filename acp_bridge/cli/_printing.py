"""What the CLI writes: stdout for results, stderr for everything else; exit codes.

Every printer of the CLI writes through here: :func:`out` and :func:`err` for lines of
human text, :func:`out_json` and :func:`err_json` for JSON, :func:`human_stream` for the
printers that stream (live progress, ``logs``, the smoke progress block). Human text has its
control characters made visible and JSON carries none raw (_safe_text.py); stderr never
blocks a run (_streams.py).

One rule for refusals (:func:`refuse`), whatever the command and whatever refused it (a
bad agent, config or option; an agent that is not installed): stdout carries what a
machine reads — an entry command's failed envelope, a control command's ``{"task_id",
"status": "refused", "error"}`` — and stderr one readable line per problem, naming what to
fix. A script parsing stdout and a person reading the terminal both learn why.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

from acp_bridge.cli._safe_text import compact_json_text, is_utf, json_text, safe_json, visible
from acp_bridge.errors import BridgeError, ConfigError, ErrorCode

if TYPE_CHECKING:  # not at run time: wait, ps and logs must start without pydantic
    from acp_bridge.envelope import SubtaskResult

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 124
EXIT_INTERRUPTED = 130

REFUSALS = frozenset(
    {ErrorCode.CONFIG_ERROR, ErrorCode.SPAWN_FAILED, ErrorCode.DEPTH_LIMIT, ErrorCode.AUTH_REQUIRED}
)
"""The ``error_code`` of a run that never got going for a reason the user can fix: it is
said on stderr too, not only inside the envelope."""


class StdoutError(Exception):
    """stdout took no more (a full disk, an I/O error): the CLI says so on stderr, exit 1.
    (A reader that went away, ``… | head``, is a BrokenPipeError and no error.)"""


def _to_stdout(text: str) -> None:
    try:
        sys.stdout.write(text)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StdoutError(exc.strerror or str(exc)) from exc


def flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StdoutError(exc.strerror or str(exc)) from exc


def out(text: str = "") -> None:
    """A line of human text on stdout."""
    _to_stdout(visible(text) + "\n")


def out_data(text: str) -> None:
    """Text a program reads as it is (a patch): exact into a file or a pipe; on a terminal,
    as human text (its control characters shown, as :func:`out` does)."""
    if _isatty(sys.stdout):
        _to_stdout(visible(text))
    else:
        _to_stdout(text)


def err(text: str) -> None:
    """A line of human text on stderr."""
    sys.stderr.write(visible(text) + "\n")


def _json_for(stream: TextIO, data: Any, indent: int | None) -> str:
    return json_text(data, indent=indent, ascii_only=not is_utf(stream))


def out_json(data: Any, *, pretty: bool = False, line: bool = False) -> None:
    """``data`` as JSON on stdout: indented with ``pretty`` or on a terminal, else one
    line; always one line with ``line`` (one JSON value per line, for programs)."""
    indent = None if line else 2 if pretty or _isatty(sys.stdout) else None
    _to_stdout(_json_for(sys.stdout, data, indent) + "\n")


def out_json_compact(data: Any) -> None:
    """``data`` as one line of compact JSON on stdout, for the biggest output there is
    (``ps --json``): see :func:`~acp_bridge.cli._safe_text.compact_json_text`."""
    _to_stdout(compact_json_text(data, ascii_only=not is_utf(sys.stdout)) + "\n")


def out_json_objects(texts: list[str]) -> None:
    """A JSON array of objects already encoded as compact JSON (UTF-8, controls not yet
    escaped) on one line: ``ps --json`` from the run store's stored texts. On a stream
    that is not UTF-8 the caller uses :func:`out_json_compact` instead."""
    _to_stdout("[")  # written apart: a 5 MB text is not copied again to add two characters
    _to_stdout(safe_json(",".join(texts)))
    _to_stdout("]\n")


def err_json(data: Any) -> None:
    """``data`` as one line of JSON on stderr (NDJSON events)."""
    sys.stderr.write(_json_for(sys.stderr, data, None) + "\n")
    sys.stderr.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced
        return False


class HumanStream:
    """A stream for printers that write as they go: their text with its controls made
    visible; :meth:`control` for the printer's own escape sequences (on a terminal only)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> None:
        if self._stream is sys.stdout:
            _to_stdout(visible(text))
        else:
            self._stream.write(visible(text))

    def control(self, sequence: str) -> None:
        own = getattr(self._stream, "control", None)  # stderr's: not sanitized again
        if own is not None:
            own(sequence)
        else:
            self._stream.write(sequence)

    def flush(self) -> None:
        if self._stream is sys.stdout:
            flush_stdout()
        else:
            self._stream.flush()

    def isatty(self) -> bool:
        return _isatty(self._stream)


def human_stream(which: str = "stderr") -> HumanStream:
    """The process's stderr (or ``"stdout"``) for a streaming printer."""
    return HumanStream(sys.stdout if which == "stdout" else sys.stderr)


def refuse(problems: Iterable[object], *, answer: Any = None, pretty: bool = False) -> None:
    """Print a refusal the one way every command does: ``answer`` (JSON data: what the
    command prints for machines, if it has such an answer) on stdout, then each problem on
    its own line on stderr as ``error: PROBLEM``."""
    if answer is not None:
        out_json(answer, pretty=pretty)
    for problem in problems:
        err(f"error: {problem}")


def refuse_error(
    exc: BridgeError,
    *,
    entry: str | None = None,
    agent: str | None = None,
    control: bool = False,
    pretty: bool = False,
) -> int:
    """A command that raised ``exc`` instead of running, by :func:`refuse`; its exit code.
    ``entry``: the entry path the command runs (its answer is a failed envelope);
    ``control``: a command about runs (``wait``, ``stop``, …: ``{"task_id", "status"}``)."""
    problems: list[object] = list(exc.problems) if isinstance(exc, ConfigError) else [exc]
    if entry is not None:
        from acp_bridge.envelope import Meta, from_error

        envelope = from_error(exc, meta=Meta.model_validate({"entry": entry, "agent": agent}))
        refuse(problems, answer=envelope.to_dict(), pretty=pretty)
        return exit_code_for(envelope)
    answer = None
    if control:
        task_id = getattr(exc, "run_id", None) or None
        one_line = " ".join(str(exc).split())
        answer = {"task_id": task_id, "status": "refused", "error": one_line}
    refuse(problems, answer=answer)
    return EXIT_USAGE if isinstance(exc, ConfigError) else EXIT_FAILED


def exit_code_for(result: SubtaskResult, *, interrupted: bool = True) -> int:
    """The process exit code for an envelope (docs/reference/envelope.md). ``cancelled`` is 130 only
    when this process was interrupted: an agent that cancels its own turn is a failure (1)."""
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


def print_envelope(
    result: SubtaskResult, *, pretty: bool = False, interrupted: bool = True, said: bool = False
) -> int:
    """The envelope on stdout (indented on a terminal or with --pretty); its exit code. A
    run refused before it got going (:data:`REFUSALS`) is a refusal: its problems go to
    stderr as well, unless the caller ``said`` them already. Written in pieces: a many-MB
    answer is not copied whole once more to be printed."""
    if result.status == "failed" and result.meta.error_code in REFUSALS and not said:
        refuse(result.meta.problems or [result.error], answer=result.to_dict(), pretty=pretty)
    else:
        indent = 2 if pretty or _isatty(sys.stdout) else None
        for piece in result.json_pieces(indent=indent, ensure_ascii=not is_utf(sys.stdout)):
            _to_stdout(safe_json(piece))
        _to_stdout("\n")
    worktree = result.meta.worktree or {}
    if worktree.get("kept"):  # the run's work lives there, not in the cwd: say where
        path, branch = worktree.get("worktree"), worktree.get("branch")
        err(f"worktree kept: {path} on branch {branch}")
    return exit_code_for(result, interrupted=interrupted)
