"""``acp-bridge run | bash | spawn | ask | tools``: an entry path from the command line.

Each command turns its arguments into an :class:`EntryRequest` and runs it through the
entries table, like every other front end. A broken config is an envelope too (a run always
answers with one), its problems listed on stderr. Ctrl-C (or SIGTERM, SIGHUP) cancels the run
gracefully — the ACP agent is told and may answer, a command or model loop is stopped — and
the envelope says ``cancelled``; a second one ends it at once (no grace, SIGKILL), still with
the full envelope of what was gathered (``cli/_signals.py``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

from acp_bridge._entries.entry_table import ENTRY_TABLE
from acp_bridge._entries.request import EntryRequest, run_entry
from acp_bridge._os.sandbox import probe_ahead
from acp_bridge._os.sandbox.choose import mode_from_environment
from acp_bridge._os.sandbox.probe import start_ahead
from acp_bridge._runs import foreground
from acp_bridge.cli import _garbage_collector
from acp_bridge.cli._agent_commands.profiles_command import load
from acp_bridge.cli._printing import EXIT_OK, err, out_json, print_envelope, refuse_error
from acp_bridge.cli._run_commands.detached_runs import read_task, run_through_store, wants_run_layer
from acp_bridge.cli._run_commands.entry_flags import request_from
from acp_bridge.cli._run_commands.live_events import FLUSH_EVERY, event_printer
from acp_bridge.cli._signals import interrupts
from acp_bridge.cli._streams import is_interactive, typed_text
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import Meta, SubtaskResult, failed
from acp_bridge.errors import BridgeError, ConfigError, ErrorCode

if TYPE_CHECKING:
    # Named in signatures only: the ACP layer's import (its wire schema) is for the runs
    # this process runs itself, not for `run --detach` (benchmarks/runs.py).
    from acp_bridge._acp.services.elicitation import ElicitationHook
    from acp_bridge._acp.services.permissions import PermissionHook


def names(raw: str | None) -> list[str] | None:
    return None if raw is None else [n.strip() for n in raw.split(",") if n.strip()]


def run_request(
    args: argparse.Namespace,
    request: EntryRequest,
    hooks: tuple[PermissionHook | None, ElicitationHook | None] = (None, None),
) -> int:
    """Run ``request`` with the options every entry command shares; print the envelope.
    ``hooks`` answer an ACP agent's ``ask`` permissions and questions (see terminal_prompts.py)."""
    if wants_run_layer(args):  # --detach, --group, budgets: a run of the run layer
        _garbage_collector.resume()
        # It has its own supervisor and its own Ctrl-C handling (detached_runs.py): the usual
        # handlers come back, and a signal that came during start-up means "don't start".
        interrupts.restore()
        if interrupts.count:
            meta = Meta(entry=request.entry, agent=request.agent)
            envelope = failed("interrupted before the run started", ErrorCode.CANCELLED, meta=meta)
            return print_envelope(envelope, pretty=args.pretty)
        return run_through_store(args, request)
    foreground.install()  # recorded in the run store as a foreground run
    try:
        loaded: LoadedConfig = load(args)
    except ConfigError as exc:
        return refuse_error(exc, entry=request.entry, agent=request.agent, pretty=args.pretty)
    handler, finish, tick = event_printer("none" if args.quiet else args.events, coalesce=True)
    if request.entry == "acp_spawn":
        _probe_sandbox_ahead(loaded, request)
    ENTRY_TABLE[request.entry].function()  # before start-up ends: frozen too
    _garbage_collector.resume()

    async def run(cancel: anyio.Event, abort: anyio.Event) -> SubtaskResult:
        async with anyio.create_task_group() as tg:
            if tick is not None:
                tg.start_soon(_every, FLUSH_EVERY, tick)
            result = await run_entry(
                request,
                config=loaded,
                on_event=handler,
                cancel=cancel,
                permission_hook=hooks[0],
                elicitation_hook=hooks[1],
                abort=abort,
            )
            tg.cancel_scope.cancel()
        return result

    async def interruptible() -> SubtaskResult:
        return await interrupts.run(run, err)

    try:
        result = anyio.run(interruptible)
    finally:
        finish()
        probe_ahead.drop()
    return print_envelope(result, pretty=args.pretty, interrupted=interrupts.count > 0)


def _probe_sandbox_ahead(loaded: LoadedConfig, request: EntryRequest) -> None:
    """Start the bubblewrap probe now, while the entry path loads, when the run may use
    bubblewrap (issue 24: ~15 ms of a cold run's wait). The verdict is the probe's as ever;
    a guess wrong here costs a process or a wait, never a different sandbox."""
    try:
        profile = loaded.profiles.get(request.agent or "").profile
    except ConfigError:
        return  # the run says why
    mode = profile.sandbox.over(loaded.config.sandbox).mode
    if mode == "auto":
        try:
            mode = mode_from_environment()[0]
        except BridgeError:
            return  # the run says why
    if mode in ("auto", "bwrap"):
        start_ahead()


async def _every(seconds: float, call: Callable[[], None]) -> None:
    while True:
        await anyio.sleep(seconds)
        call()


def _hooks(args: argparse.Namespace) -> tuple[PermissionHook | None, ElicitationHook | None]:
    """The terminal's answers to ``ask`` permissions and questions. A run of the run layer
    is headless (detached_runs.py refuses --yes); so is a run with nobody at a terminal
    and no fixed answer. Both skip importing the prompts (issue 24: a cold headless run)."""
    if wants_run_layer(args) or not (args.yes or args.no or is_interactive()):
        return None, None
    from acp_bridge.cli._run_commands.terminal_prompts import hooks_for

    return hooks_for(yes=args.yes, no=args.no, ask_timeout=args.ask_timeout)


def cmd_run(args: argparse.Namespace) -> int:
    if args.session is not None and args.resume is not None:
        raise ConfigError("--session NAME and --resume both say which session to continue")
    if args.ask_timeout is not None and not args.ask_timeout > 0:
        raise ConfigError(
            f"--ask-timeout must be a positive number of seconds, got {args.ask_timeout}"
        )
    if args.install:  # the agent first, if it is missing (agents install)
        _garbage_collector.resume()  # an install may take minutes: start-up is over
        from acp_bridge.cli._agent_commands.agents_command import install_if_missing

        install_if_missing(load(args), args.agent)
    request = request_from(args, "acp_spawn", read_task(args.task), agent=args.agent)
    return run_request(args, request, _hooks(args))


def cmd_bash(args: argparse.Namespace) -> int:
    command = typed_text(" ".join(args.command))  # like ssh: the words make one shell line
    return run_request(args, request_from(args, "bash", command))


def cmd_spawn(args: argparse.Namespace) -> int:
    task = read_task(args.task)
    return run_request(args, request_from(args, "spawn", task, tools=names(args.tools) or []))


def cmd_ask(args: argparse.Namespace) -> int:
    task = read_task(args.prompt)
    return run_request(args, request_from(args, "ask", task, tools=names(args.tools)))


def cmd_tools(args: argparse.Namespace) -> int:
    from acp_bridge._entries.local_loop.builtin_tools import ToolRegistry
    from acp_bridge._loop.toolset import ToolSet

    registry: ToolSet = ToolRegistry(load(args))
    wanted = names(args.tools)
    if wanted is not None:
        selection = registry.select(wanted)
        for note in selection.warnings():
            err(f"warning: {note}")
        registry = selection.registry
    out_json(registry.specs(args.format), pretty=True)
    return EXIT_OK


def cmd_demo_agent(args: argparse.Namespace) -> int:
    from acp_bridge._demo.agent import main as demo_main

    return demo_main()
