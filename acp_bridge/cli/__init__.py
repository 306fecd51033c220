"""The ``acp-bridge`` command line: the only module that prints.

Exit codes (DESIGN §7): 0 done, 1 failed, 2 usage or config error, 124 timeout,
130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

import anyio

from acp_bridge._version import __version__
from acp_bridge.envelope import Entry, SubtaskResult
from acp_bridge.errors import BridgeError, ConfigError, ErrorCode, Problem
from acp_bridge.events import Event, EventHandler

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 124
EXIT_INTERRUPTED = 130

_SECRET_KEY = re.compile(r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|COOKIE", re.IGNORECASE)

Handler = Callable[[argparse.Namespace], int]


def _out(text: str = "", stream: TextIO | None = None) -> None:
    print(text, file=stream or sys.stdout)


def _err(text: str) -> None:
    print(text, file=sys.stderr)


# --- profiles ----------------------------------------------------------------------------


def _load(args: argparse.Namespace) -> Any:
    from acp_bridge.config import load_config

    return load_config(args.config)


def cmd_profiles_list(args: argparse.Namespace) -> int:
    loaded = _load(args)
    catalog = loaded.profiles
    catalog.resolve_all()
    rows = []
    for name in catalog.names():
        if name in catalog.errors:
            first = catalog.errors[name].problems[0]
            rows.append({"name": name, "installed": None, "description": "", "error": str(first)})
            continue
        profile = catalog.get(name).profile
        rows.append(
            {
                "name": name,
                "installed": shutil.which(profile.command) is not None,
                "description": profile.description,
                "command": " ".join([profile.command, *profile.args]),
                "install": profile.install,
            }
        )
    if args.json:
        _out(json.dumps(rows, indent=2))
        return EXIT_OK
    width = max((len(r["name"]) for r in rows), default=4)
    _out(f"{'NAME':<{width}}  {'READY':<5}  DESCRIPTION")
    for row in rows:
        if "error" in row:
            _out(f"{row['name']:<{width}}  {'ERROR':<5}  {row['error']}")
            continue
        ready = "yes" if row["installed"] else "no"
        _out(f"{row['name']:<{width}}  {ready:<5}  {row['description']}")
    for problem in loaded.problems:
        _err(f"warning: {problem}")
    config = loaded.path or "none (built-in profiles only)"
    _err(f"config: {config}. READY: the agent's command is on PATH.")
    return EXIT_OK


def _leaves(
    value: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from _leaves(child, (*path, key))
    else:
        yield path, value


def _shown_value(path: tuple[str | int, ...], value: Any, from_env: bool) -> Any:
    """Values of env/headers that look secret, or came from the environment, are hidden."""
    secretish = len(path) >= 2 and path[-2] in ("env", "headers")
    if (
        secretish
        and isinstance(value, str)
        and value
        and (from_env or _SECRET_KEY.search(str(path[-1])))
    ):
        return f"<redacted, {len(value)} chars>"
    return value


def cmd_profiles_show(args: argparse.Namespace) -> int:
    from acp_bridge.config._yaml import field_name

    loaded = _load(args)
    resolved = loaded.profiles.get(args.name)
    data = resolved.profile.model_dump(mode="json")
    rows = []
    for path, value in _leaves(data):
        source = resolved.source_of(path)
        rows.append(
            (field_name(path), _shown_value(path, value, bool(source.env_vars)), str(source))
        )
    if args.json:
        _out(
            json.dumps(
                {"profile": {k: v for k, v, _ in rows}, "sources": {k: s for k, _, s in rows}},
                indent=2,
            )
        )
        return EXIT_OK
    _out(f"# profile {resolved.profile.name}; config: {loaded.path or 'none'}")
    key_width = max(len(k) for k, _, _ in rows)
    value_width = min(48, max(len(json.dumps(v)) for _, v, _ in rows))
    for key, value, source in rows:
        _out(f"{key:<{key_width}}  {json.dumps(value):<{value_width}}  # {source}")
    return EXIT_OK


def cmd_profiles_validate(args: argparse.Namespace) -> int:
    from acp_bridge.config import validate_files

    if not args.files:
        loaded = _load(args)
        problems = list(loaded.problems)
        for error in loaded.profiles.resolve_all().values():
            problems.extend(error.problems)
        for problem in problems:
            _out(str(problem))
        count = len(loaded.profiles.names())
        where = loaded.path or "no config file"
        _err(
            f"{count} profiles checked ({where}): "
            + ("all valid" if not problems else f"{len(problems)} problem(s)")
        )
        return EXIT_USAGE if problems else EXIT_OK

    missing = [f for f in args.files if not f.exists()]
    if missing:
        raise ConfigError([Problem("no such file or directory", field=str(m)) for m in missing])
    results = validate_files(args.files)
    bad = 0
    for path, problems in results.items():
        bad += bool(problems)
        for problem in problems:
            _out(str(problem))
        if not problems and args.verbose:
            _out(f"{path}: ok")
    _err(f"{len(results)} file(s) checked: " + ("all valid" if not bad else f"{bad} with errors"))
    return EXIT_USAGE if bad else EXIT_OK


def cmd_profiles_schema(args: argparse.Namespace) -> int:
    from acp_bridge.config import config_json_schema, profile_json_schema

    schema = profile_json_schema() if args.profile else config_json_schema()
    _out(json.dumps(schema, indent=2))
    return EXIT_OK


# --- running an entry path ---------------------------------------------------------------


class _HumanProgress:
    """Live events as short lines on stderr; message chunks stream inline."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._mid_message = False

    def _line(self, text: str) -> None:
        if self._mid_message:
            self._stream.write("\n")
            self._mid_message = False
        self._stream.write(text + "\n")
        self._stream.flush()

    def __call__(self, event: Event) -> None:
        data = event.data
        kind = event.kind
        if kind == "message":
            self._stream.write(data["text"])
            self._stream.flush()
            self._mid_message = not data["text"].endswith("\n")
        elif kind == "status":
            details = " ".join(
                f"{k}={v}" for k, v in data.items() if k != "phase" and v not in (None, "")
            )
            self._line(f"· {data['phase']} {details}".rstrip())
        elif kind == "tool_call":
            self._line(f"⚙ {data.get('title') or data['tool_call_id']} [{data.get('tool_kind')}]")
        elif kind == "tool_update":
            self._line(f"  {data.get('title') or data['tool_call_id']}: {data.get('status')}")
        elif kind == "permission":
            self._line(f"⚑ {data['decision']}: {data.get('title')} ({data.get('reason')})")
        elif kind == "terminal":
            if data.get("state") == "started":
                self._line(f"$ {data['command']}")
            else:
                status = data.get("signal") or f"exit {data.get('exit_code')}"
                self._line(f"  {data['command']}: {status}")
        elif kind == "terminal_output":
            self._stream.write(data["text"])
        elif kind == "plan":
            for entry in data.get("entries", []):
                self._line(f"  [{entry.get('status')}] {entry.get('content')}")
        elif kind in ("warning", "stderr"):
            self._line(f"! {data.get('message') or data.get('line')}")

    def close(self) -> None:
        if self._mid_message:
            self._stream.write("\n")
            self._stream.flush()


def _event_printer(mode: str) -> tuple[EventHandler | None, Callable[[], None]]:
    if mode == "ndjson":

        def ndjson(event: Event) -> None:
            sys.stderr.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
            sys.stderr.flush()

        return ndjson, lambda: None
    if mode == "human":
        human = _HumanProgress(sys.stderr)
        return human, human.close
    return None, lambda: None


def exit_code_for(result: SubtaskResult) -> int:
    """The process exit code for an envelope (DESIGN §7)."""
    if result.status == "done":
        return EXIT_OK
    code = result.meta.error_code
    if code == ErrorCode.TIMEOUT:
        return EXIT_TIMEOUT
    if code == ErrorCode.CANCELLED:
        return EXIT_INTERRUPTED
    if code == ErrorCode.CONFIG_ERROR:
        return EXIT_USAGE
    return EXIT_FAILED


async def _with_interrupts(
    run: Callable[[anyio.Event], Awaitable[SubtaskResult]], graceful: bool
) -> SubtaskResult:
    """Run with Ctrl-C / SIGTERM turned into a cancel. ``graceful``: the first signal sets
    the cancel event and the run winds down by itself (a second one stops waiting);
    otherwise the first cancels the run outright. Either way the run's processes end."""
    cancel = anyio.Event()
    result: SubtaskResult | None = None
    async with anyio.create_task_group() as tg:

        async def watch_signals() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    if cancel.is_set() or not graceful:
                        _err("\ninterrupted: stopping the run")
                        tg.cancel_scope.cancel()
                        return
                    _err("\ninterrupted: cancelling the run (again to stop waiting)")
                    cancel.set()

        tg.start_soon(watch_signals)
        result = await run(cancel)
        tg.cancel_scope.cancel()
    if result is None:
        raise KeyboardInterrupt
    return result


def _read_task(task: str) -> str:
    return sys.stdin.read() if task == "-" else task


def _print_envelope(result: SubtaskResult, args: argparse.Namespace) -> int:
    """The envelope on stdout (indented on a terminal or with --pretty); its exit code."""
    pretty = getattr(args, "pretty", False) or sys.stdout.isatty()
    _out(result.to_json(indent=2 if pretty else None))
    return exit_code_for(result)


EntryCall = Callable[[dict[str, Any], anyio.Event], Awaitable[SubtaskResult]]


def _run_entry(
    args: argparse.Namespace, entry: Entry, call: EntryCall, *, graceful_cancel: bool
) -> int:
    """Load the config, run ``call`` with the options every entry command shares, print the
    envelope. A broken config is an envelope too (a run always answers with one), its
    problems listed on stderr. Ctrl-C cancels: gracefully when the entry takes a cancel
    event (the ACP agent is told and may answer), else by cancelling the run outright (its
    processes are still ended) with a ``cancelled`` envelope in its place."""
    from acp_bridge.envelope import Meta, failed, from_error

    try:
        loaded = _load(args)
    except ConfigError as exc:
        for problem in exc.problems:
            _err(f"{type(exc).__name__}: {problem}")
        return _print_envelope(from_error(exc, meta=Meta(entry=entry)), args)
    handler, finish = _event_printer("none" if args.quiet else args.events)
    options = {
        "timeout": args.timeout,
        "cwd": args.cwd,
        "observe_profile": args.observe,
        "on_event": handler,
        "config": loaded,
    }

    async def run(cancel: anyio.Event) -> SubtaskResult:
        return await call(options, cancel)

    try:
        result = anyio.run(_with_interrupts, run, graceful_cancel)
    except KeyboardInterrupt:
        result = failed("interrupted", ErrorCode.CANCELLED, meta=Meta(entry=entry))
    finally:
        finish()
    return _print_envelope(result, args)


def _names(raw: str | None) -> list[str] | None:
    return None if raw is None else [n.strip() for n in raw.split(",") if n.strip()]


def cmd_run(args: argparse.Namespace) -> int:
    from acp_bridge._entries.acp_agent import acp_spawn

    task = _read_task(args.task)
    return _run_entry(
        args,
        "acp_spawn",
        lambda options, cancel: acp_spawn(
            args.agent, task, output_schema=args.output_schema, cancel=cancel, **options
        ),
        graceful_cancel=True,
    )


def cmd_bash(args: argparse.Namespace) -> int:
    from acp_bridge._entries.shell import bash

    command = " ".join(args.command)  # like ssh: the words make one shell line
    return _run_entry(
        args,
        "bash",
        lambda options, _cancel: bash(command, max_output_bytes=args.max_output_bytes, **options),
        graceful_cancel=False,
    )


def cmd_spawn(args: argparse.Namespace) -> int:
    from acp_bridge._entries.inner import spawn

    tools = _names(args.tools) or []
    return _run_entry(
        args,
        "spawn",
        lambda options, _cancel: spawn(
            _read_task(args.task),
            tools,
            model=args.model,
            output_schema=args.output_schema,
            **options,
        ),
        graceful_cancel=False,
    )


def cmd_ask(args: argparse.Namespace) -> int:
    from acp_bridge._entries.host import ask

    tools = _names(args.tools)
    return _run_entry(
        args,
        "ask",
        lambda options, _cancel: ask(
            _read_task(args.prompt), tools=tools, model=args.model, **options
        ),
        graceful_cancel=False,
    )


def cmd_tools(args: argparse.Namespace) -> int:
    from acp_bridge._entries.tools import ToolRegistry

    registry = ToolRegistry(_load(args))
    wanted = _names(args.tools)
    if wanted is not None:
        selection = registry.select(wanted)
        for note in selection.warnings():
            _err(f"warning: {note}")
        registry = selection.registry
    _out(json.dumps(registry.specs(args.format), indent=2, ensure_ascii=False))
    return EXIT_OK


# --- smoke ----------------------------------------------------------------------------------

_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_MARKS = {"passed": "✓", "failed": "✗", "error": "!", "skipped": "-"}


class _SmokeProgress:
    """One line per finished case; on a terminal, also a live block of running cases."""

    def __init__(self, stream: TextIO, total: int, live: bool) -> None:
        self.stream = stream
        self.total = total
        self.live = live
        self.running: dict[str, float] = {}
        self.done = 0
        self._drawn = 0
        self._frame = 0

    def __call__(self, run: Any, outcome: Any) -> None:
        if outcome is None:
            self.running[run.id] = time.monotonic()
            self._redraw()
            return
        self.running.pop(run.id, None)
        self.done += 1
        self._clear()
        mark = _MARKS[outcome.verdict] if self.live else outcome.verdict.upper()
        detail = f": {outcome.reason}" if outcome.verdict != "passed" and outcome.reason else ""
        self.stream.write(
            f"{mark} [{self.done}/{self.total}] {run.id} ({outcome.duration:.2f}s){detail}\n"
        )
        self._redraw()

    def _clear(self) -> None:
        if self.live and self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")  # up N lines, clear below
            self._drawn = 0

    def _redraw(self) -> None:
        if not self.live:
            self.stream.flush()
            return
        self._clear()
        now = time.monotonic()
        spinner = _SPINNER[self._frame % len(_SPINNER)]
        for case_id, since in self.running.items():
            self.stream.write(f"{spinner} {case_id}  {now - since:.1f}s\n")
        self._drawn = len(self.running)
        self.stream.flush()

    async def tick(self) -> None:
        while self.live:
            await anyio.sleep(0.1)  # animation frame, not polling for state
            self._frame += 1
            self._redraw()

    def close(self) -> None:
        self._clear()
        self.stream.flush()


def cmd_smoke(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from acp_bridge.smoke import _report as report
    from acp_bridge.smoke._runner import SmokeRunner, SmokeSettings
    from acp_bridge.smoke._suite import expand, load_suite

    suites = [load_suite(path) for path in args.suites]
    runs, filtered = expand(suites, _names(args.agents))
    if not runs:
        _err("no case to run" + (f" ({filtered} left out by --agents)" if filtered else ""))
        return EXIT_USAGE
    progress = _SmokeProgress(sys.stderr, len(runs), live=sys.stderr.isatty())
    settings = SmokeSettings(
        parallel=args.parallel,
        model=args.model,
        skip_missing=args.skip_missing,
        keep_workspaces=args.keep,
    )
    runner = SmokeRunner(_load(args), settings, progress)
    started, clock = datetime.now(UTC), time.monotonic()
    interrupted = False

    async def main() -> None:
        nonlocal interrupted
        cancel = anyio.Event()
        async with anyio.create_task_group() as tg:

            async def watch_signals() -> None:
                nonlocal interrupted
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for _ in signals:
                        if interrupted:  # a second time: stop waiting for anything
                            tg.cancel_scope.cancel()
                            return
                        interrupted = True
                        progress.close()
                        _err(
                            "interrupted: cancelling running cases, skipping the rest "
                            "(again to stop waiting)"
                        )
                        cancel.set()

            tg.start_soon(watch_signals)
            tg.start_soon(progress.tick)
            await runner.run(runs, cancel)
            tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        progress.close()
        outcomes = runner.results(runs)
        info = report.RunInfo(started, time.monotonic() - clock, list(args.suites), interrupted)
        if args.junit:
            report.write_report(args.junit, report.junit_xml(outcomes, info))
        if args.json:
            report.write_report(args.json, report.report_json_bytes(outcomes, info))
    for line in report.summary_lines(outcomes, info):
        _out(line)
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if any(o.verdict in ("failed", "error") for o in outcomes) else EXIT_OK


def cmd_demo_agent(args: argparse.Namespace) -> int:
    from acp_bridge._demo_agent import main as demo_main

    return demo_main()


# --- the parser ----------------------------------------------------------------------------


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-bridge",
        formatter_class=_Formatter,
        description="Hand a subtask to an isolated worker and get back one normalized result "
        "(a SubtaskResult JSON envelope).",
        epilog="exit codes: 0 done, 1 failed, 2 usage or config error, 124 timeout, "
        "130 interrupted\nconfig search: --config, $ACP_BRIDGE_CONFIG, ./acp-bridge.yaml, "
        "~/.config/acp-bridge/config.yaml",
    )
    parser.add_argument("--version", action="version", version=f"acp-bridge {__version__}")
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="config file (default: see the search order below)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    profiles = commands.add_parser(
        "profiles",
        help="list, show, validate agent profiles; export the config schema",
        formatter_class=_Formatter,
        description="Agent profiles say how to start an ACP agent and what it may touch.",
    )
    sub = profiles.add_subparsers(dest="profiles_command", metavar="ACTION", required=True)

    p = sub.add_parser("list", help="every profile with its description and whether it is ready")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_profiles_list)

    p = sub.add_parser("show", help="one fully resolved profile and where each value came from")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_profiles_show)

    p = sub.add_parser(
        "validate",
        help="check config and profile files (default: the active config)",
        description="Check config files and profile files; folders mean every *.yaml inside. "
        "Prints one line per problem as FILE:LINE:COL: FIELD: MESSAGE and exits 2 if any.",
    )
    p.add_argument("files", nargs="*", type=Path, metavar="FILE")
    p.add_argument("-v", "--verbose", action="store_true", help="also list the valid files")
    p.set_defaults(handler=cmd_profiles_validate)

    p = sub.add_parser("schema", help="print the JSON Schema of the config file")
    p.add_argument(
        "--profile", action="store_true", help="the schema of a single profile file instead"
    )
    p.set_defaults(handler=cmd_profiles_schema)

    p = commands.add_parser(
        "run",
        help="run TASK on the ACP agent of profile AGENT; print the envelope",
        formatter_class=_Formatter,
        description="Start the agent named by profile AGENT, hand it TASK over ACP, answer its "
        "file, terminal and permission requests inside the sandbox, and print the "
        "SubtaskResult envelope as JSON on stdout. Progress goes to stderr.",
        epilog="example: acp-bridge run demo 'Reply with exactly HELLO'",
    )
    p.add_argument("agent", metavar="AGENT", help="profile name (see: acp-bridge profiles list)")
    p.add_argument("task", metavar="TASK", help="the prompt; '-' reads it from stdin")
    p.add_argument(
        "--output-schema", metavar="LABEL", help="require a JSON answer under this contract label"
    )
    _run_options(p, observe_default="default", loop=False)
    p.set_defaults(handler=cmd_run)

    p = commands.add_parser(
        "smoke",
        help="run smoke-test suites against agents; JUnit and JSON reports for CI",
        formatter_class=_Formatter,
        description="Run every case of the SUITE files (YAML), each in a fresh temporary "
        "workspace, up to --parallel at once; print a summary table; exit 1 if any case "
        "failed. See docs/smoke.md for the format.",
        epilog="example: acp-bridge smoke examples/smoke/demo.yaml --junit out.xml",
    )
    p.add_argument("suites", nargs="+", type=Path, metavar="SUITE")
    p.add_argument("--agents", metavar="A,B", help="run only these agents' matrix entries")
    p.add_argument("--parallel", type=int, default=1, metavar="N", help="cases at once (1)")
    p.add_argument("--model", metavar="M", help="model for spawn and ask cases")
    p.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report")
    p.add_argument(
        "--json", type=Path, metavar="FILE", help="write a JSON report with every envelope"
    )
    p.add_argument(
        "--skip-missing",
        action="store_true",
        help="skip cases whose agent command is not installed (default: fail)",
    )
    p.add_argument("--keep", action="store_true", help="keep each case's workspace")
    p.set_defaults(handler=cmd_smoke)

    p = commands.add_parser(
        "demo-agent",
        help="serve the bundled offline demo ACP agent on stdin/stdout",
        description="The bundled demo agent (profile 'demo'). It speaks ACP on stdio; it is "
        "started by acp-bridge, not by people.",
    )
    p.set_defaults(handler=cmd_demo_agent)
    _add_entry_commands(commands)
    return parser


def _run_options(p: argparse.ArgumentParser, *, observe_default: str, loop: bool = True) -> None:
    """The options of every entry command; ``loop``: those of a model loop too."""
    if loop:
        p.add_argument("--model", metavar="M", help="a model name from the config's models")
    p.add_argument("--timeout", type=float, metavar="S", help="seconds the run may take")
    p.add_argument(
        "--cwd",
        type=Path,
        metavar="DIR",
        help="working directory (default: the profile's for run, else the current directory)",
    )
    p.add_argument(
        "--observe",
        choices=["default", "long_shell", "web_extract"],
        metavar="PROFILE",
        help=f"live events on stderr: default, long_shell, web_extract (default: "
        f"{observe_default})",
    )
    p.add_argument(
        "--events",
        choices=["human", "ndjson", "none"],
        default="human",
        help="live progress on stderr: human lines, one JSON object per line, or none",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="same as --events none")
    p.add_argument("--pretty", action="store_true", help="indent the envelope JSON")


def _add_entry_commands(commands: Any) -> None:
    envelope_note = (
        "Prints the SubtaskResult envelope (JSON) on stdout; live progress goes to stderr."
    )
    p = commands.add_parser(
        "bash",
        help="run one shell command as an isolated subtask",
        formatter_class=_Formatter,
        description="Run CMD with bash -c in its own process group, as a subtask "
        f"(subtask.bash.result.v1). {envelope_note}",
        epilog="example: acp-bridge bash --timeout 10 -- 'make test | tail -n 20'",
    )
    p.add_argument("command", nargs="+", metavar="CMD", help="the command line (after --)")
    p.add_argument(
        "--max-output-bytes", type=int, metavar="N", help="bytes kept per stream (head + tail)"
    )
    _run_options(p, observe_default="long_shell", loop=False)
    p.set_defaults(handler=cmd_bash)

    p = commands.add_parser(
        "spawn",
        help="run a task in a local inner model loop limited to some tools",
        formatter_class=_Formatter,
        description=f"Run TASK with a local model that may use only --tools. {envelope_note}",
        epilog="example: acp-bridge spawn 'count the TODOs in src/' --tools bash,read_file",
    )
    p.add_argument("task", metavar="TASK")
    p.add_argument("--tools", required=True, metavar="A,B", help="tools the inner agent may use")
    p.add_argument("--output-schema", metavar="LABEL", help="require a JSON answer under LABEL")
    _run_options(p, observe_default="default")
    p.set_defaults(handler=cmd_spawn)

    p = commands.add_parser(
        "ask",
        help="a host model loop that may call spawn, acp_spawn, bash, …",
        formatter_class=_Formatter,
        description="Answer PROMPT with a host model loop (depth 0) offered the tool registry: "
        f"it may call spawn, acp_spawn (if enabled), bash and the file tools. {envelope_note}",
    )
    p.add_argument("prompt", metavar="PROMPT")
    p.add_argument("--tools", metavar="A,B", help="tools to offer (default: every enabled tool)")
    _run_options(p, observe_default="default")
    p.set_defaults(handler=cmd_ask)

    p = commands.add_parser(
        "tools",
        help="print the function-calling specs of the enabled tools",
        formatter_class=_Formatter,
        description="Print each enabled tool as a function-calling definition (JSON Schema "
        "parameters) for a host loop to offer its model.",
    )
    p.add_argument("--format", choices=["openai", "anthropic"], default="openai")
    p.add_argument("--tools", metavar="A,B", help="only these tools")
    p.set_defaults(handler=cmd_tools)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except ConfigError as exc:
        name = type(exc).__name__
        for problem in exc.problems:
            _err(f"{name}: {problem}")
        return EXIT_USAGE
    except BridgeError as exc:
        _err(f"{type(exc).__name__}: {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `acp-bridge … | head`: not an error worth a traceback
        sys.stderr.close()
        return EXIT_OK
