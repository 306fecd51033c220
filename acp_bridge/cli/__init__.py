"""The ``acp-bridge`` command line: the only place that prints.

Exit codes (docs/reference/envelope.md): 0 done, 1 failed, 2 usage or config error, 124 timeout,
130 interrupted. Modules: ``_parser`` (commands and options), and the commands in three
rooms: ``_run_commands`` (run, bash, spawn, ask, tools, ``--detach`` and runs followed
through the run store, wait, ps, show, logs, stop, prune, sessions, mcp, live events),
``_agent_commands`` (profiles, agents, doctor), ``_batch_commands`` (batch and worker,
compare, smoke). What every command shares: ``_printing`` (every write to stdout and
stderr), ``_safe_text`` (what text and JSON may carry to a terminal), ``_streams`` (closed,
ASCII-only or unread standard streams), ``_signals`` (Ctrl-C and friends, from the first
line of :func:`main` on), ``_garbage_collector`` (no garbage collection while a command
starts), ``_fast_exit`` (the process's end without the interpreter's teardown, for
:func:`run_command_line`, the ``acp-bridge`` script), ``_argtypes`` (numbers checked as
typed).

This module imports nothing heavy at its top: the signal handlers are installed before the
rest of the CLI (pydantic, anyio, the entry paths) is imported, so a Ctrl-C during those
imports is a cancelled run with an envelope, not a KeyboardInterrupt traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from acp_bridge._os.process.undumpable import make_undumpable
from acp_bridge.cli import _garbage_collector
from acp_bridge.cli._signals import interrupts
from acp_bridge.cli._streams import open_streams

__all__ = ["exit_code_for", "main", "run_command_line"]

ENTRY_COMMANDS = {"run": "acp_spawn", "bash": "bash", "spawn": "spawn", "ask": "ask"}
OPTIONS_COMMANDS = frozenset({"compare"})
"""Commands that are no entry path but whose flags come from an options model too."""
INTERRUPTIBLE_COMMANDS = frozenset({"smoke", "batch", "compare"})
"""No entry path, but many of them: Ctrl-C handled as for an entry (``_signals.py``)."""
CONTROL_COMMANDS = frozenset({"wait", "stop", "show", "logs"})
"""Commands about runs: a refusal answers ``{"task_id", "status": "refused"}`` on stdout."""


def command_of(argv: Sequence[str]) -> str | None:
    """The command an argv runs (``run``), if any."""
    words = iter(argv)
    for word in words:
        if len(word) > 2 and "--config".startswith(word):  # argparse takes `--conf` too
            next(words, None)  # its value
        elif not word.startswith("-"):
            return word
    return None


def entry_of(argv: Sequence[str]) -> str | None:
    """The entry path an argv runs (``run`` → ``acp_spawn``), if it runs one."""
    return ENTRY_COMMANDS.get(command_of(argv) or "")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); its exit code."""
    return _command(list(sys.argv[1:] if argv is None else argv), own_process=False)


def run_command_line() -> int:
    """The ``acp-bridge`` process itself (its console script, ``python -m acp_bridge``): the
    command line in ``sys.argv``, then the process ends, without the interpreter's teardown
    where nothing needs it (_fast_exit.py); the exit code is returned only when it does not."""
    from acp_bridge.cli._fast_exit import end_process

    return end_process(_command(sys.argv[1:], own_process=True))


def _command(argv: list[str], *, own_process: bool) -> int:
    # Until the command's code is loaded; its own process freezes what start-up made.
    _garbage_collector.pause(freeze=own_process)
    # First: an agent (of this run or another one, under Landlock) runs as the same user
    # and could read this process's environment, host secrets included, in /proc.
    make_undumpable()
    interrupts.install()
    try:
        with open_streams():
            return _main(argv)
    finally:
        interrupts.restore()
        _garbage_collector.resume()  # if the command ended before it ran anything


def _main(argv: list[str]) -> int:
    from acp_bridge.cli._parser import build_parser
    from acp_bridge.cli._printing import (
        EXIT_FAILED,
        EXIT_INTERRUPTED,
        EXIT_OK,
        StdoutError,
        err,
        flush_stdout,
        refuse_error,
    )
    from acp_bridge.cli._streams import stdout_gone
    from acp_bridge.errors import BridgeError

    entry = entry_of(argv)
    command = command_of(argv)
    if entry is None and command not in INTERRUPTIBLE_COMMANDS:  # Ctrl-C the usual way
        interrupts.restore()
        if interrupts.count:
            err("interrupted")
            return EXIT_INTERRUPTED
    parser = build_parser(entry, every_option=command in OPTIONS_COMMANDS, command=command)
    args = parser.parse_args(argv)
    handler: Callable[..., int] = args.handler
    # an entry command resumes once its entry path is loaded (``_run_commands/entry_commands.py``)
    if entry is None:
        _garbage_collector.resume()
    try:
        try:
            if command in INTERRUPTIBLE_COMMANDS:  # the same handler; nothing owed before its loop
                interrupts.abandon_before_loop = True
                if interrupts.count >= 2:
                    raise KeyboardInterrupt
            code = handler(args)
        except BridgeError as exc:  # refused: the one rule of _printing.refuse
            command = args.command
            code = refuse_error(
                exc,
                entry=ENTRY_COMMANDS.get(command) or ("acp_spawn" if command == "send" else None),
                agent=getattr(args, "agent", None),
                control=command in CONTROL_COMMANDS,
                pretty=getattr(args, "pretty", False),
            )
        flush_stdout()  # here, not at exit: a failed write is reported like any other
    except KeyboardInterrupt:
        err("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `acp-bridge … | head`: not an error worth a traceback
        stdout_gone()
        return EXIT_OK
    except StdoutError as exc:
        stdout_gone()
        err(f"acp-bridge: cannot write to stdout: {exc}")
        return EXIT_FAILED
    return code


def __getattr__(name: str) -> Any:
    if name == "exit_code_for":  # loaded on use: it imports the envelope (pydantic)
        from acp_bridge.cli._printing import exit_code_for

        return exit_code_for
    raise AttributeError(f"module 'acp_bridge.cli' has no attribute {name!r}")
