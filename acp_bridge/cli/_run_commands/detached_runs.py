"""``run | bash | spawn`` through the run layer: ``--detach``, and attached runs; ``send``.

``--detach`` queues the request, prints ``{"task_id", "status": "queued"}`` and returns.
Without it, a run that asks for the run layer (``--group``, ``--max-tokens``, ``--session``,
…) is started the same way and then followed here, as if it ran in the foreground: its
events on stderr, its envelope on stdout, the exit code from its status. Ctrl-C (or SIGTERM)
stops the run gracefully and waits for its ``cancelled`` envelope; a second one stops
waiting (the run stops all the same). Every option of the request travels with it
(``--resume``, ``--mode``, …); prompts cannot: such a run is headless, and ``--yes`` is
refused. ``send ID TEXT`` queues a follow-up turn (a run of its own) the same way.
"""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING

from acp_bridge._os.limits import MAX_TASK_BYTES
from acp_bridge.cli._agent_commands.profiles_command import load
from acp_bridge.cli._printing import EXIT_INTERRUPTED, EXIT_OK, err, out_json, print_envelope
from acp_bridge.cli._streams import typed_text
from acp_bridge.errors import ConfigError

# The run layer is imported by the functions that use it: every `run` imports this module
# (wants_run_layer, read_task), and one without --detach needs none of the run layer.
if TYPE_CHECKING:
    from acp_bridge._entries.request import EntryRequest
    from acp_bridge._runs.caller.handle import RunHandle
    from acp_bridge.envelope import SubtaskResult


def wants_run_layer(args: argparse.Namespace) -> bool:
    """Whether the command asked for a detached run, or for what only the run layer does."""
    if getattr(args, "detach", False):
        return True
    names = getattr(args, "run_layer_options", ())  # what add_run_layer_options added
    return any(getattr(args, name, None) is not None for name in names)


def run_through_store(args: argparse.Namespace, request: EntryRequest) -> int:
    if getattr(args, "yes", False):  # --no is what a headless run does anyway
        raise ConfigError(
            "--yes answers `ask` permissions in this process; a run of the run layer "
            "(--detach, --group, budgets) has its own supervisor and nobody to ask: allow what "
            "it needs in the profile's permissions instead (mode or rules)"
        )
    from acp_bridge._runs.caller.start import start_run_sync
    from acp_bridge.cli._run_commands.entry_flags import run_options_from

    options = run_options_from(args)
    handle = start_run_sync(request, options=options, config=load(args))
    return _started(args, handle)


def read_task(text: str) -> str:
    """A task or follow-up text as given, or read from stdin for ``-`` (bounded: stdin may
    be endless, ``< /dev/zero``)."""
    if text != "-":
        return typed_text(text)
    read = sys.stdin.read(MAX_TASK_BYTES + 1)  # characters: at most 4 bytes each
    if len(read) > MAX_TASK_BYTES:
        raise ConfigError(f"the text on stdin is longer than {MAX_TASK_BYTES} bytes")
    return typed_text(read)


def send_follow_up(args: argparse.Namespace) -> int:
    """``acp-bridge send ID TEXT``: queue the follow-up, then as for a run."""
    text = read_task(args.text)
    from acp_bridge._runs.caller.handle import RunHandle
    from acp_bridge.cli._run_commands.entry_flags import run_options_from

    options = run_options_from(args)
    # Without --config, the session's own config (send_sync), not this directory's.
    config = load(args) if args.config is not None else None
    handle = RunHandle(args.id).send_sync(
        text, timeout=args.timeout, options=options, config=config
    )
    return _started(args, handle)


def _started(args: argparse.Namespace, handle: RunHandle) -> int:
    if args.detach:
        out_json({"task_id": handle.id, "status": "queued"}, line=True)  # as it was handed over
        return EXIT_OK
    return _follow(args, handle)


class _Interrupted(Exception):
    pass


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise _Interrupted


def _follow(args: argparse.Namespace, handle: RunHandle) -> int:
    from acp_bridge._runs.caller.handle import stop_run
    from acp_bridge.cli._run_commands.live_events import event_printer

    handler, finish, _ = event_printer("none" if args.quiet else args.events)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    stopping = False
    seen = 0
    try:
        while True:
            try:
                for item in handle.events_sync(follow=True, after=seen):
                    seen = item.seq
                    if handler is not None:
                        handler(item.event)
                result: SubtaskResult = handle.wait_sync()
                break
            except (KeyboardInterrupt, _Interrupted):
                if stopping:
                    err("\ninterrupted again: no longer waiting (the run is stopping)")
                    return EXIT_INTERRUPTED
                stopping = True
                err("\ninterrupted: stopping the run (again to stop waiting)")
                stop_run(handle.id)
    finally:
        signal.signal(signal.SIGTERM, previous)
        finish()
    return print_envelope(result, pretty=args.pretty, interrupted=stopping)
