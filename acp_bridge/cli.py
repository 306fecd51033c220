"""The ``acp-bridge`` command line: the only module that prints.

Exit codes (DESIGN §7): 0 done, 1 failed, 2 usage or config error, 124 timeout,
130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from acp_bridge._version import __version__
from acp_bridge.errors import BridgeError, ConfigError, ErrorCode, Problem

if TYPE_CHECKING:
    from acp_bridge.envelope import Entry, SubtaskResult
    from acp_bridge.events import Event

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
    rows = []
    for name in catalog.names():
        if name in catalog.errors:
            first = catalog.errors[name].problems[0]
            rows.append({"name": name, "installed": None, "description": "", "error": str(first)})
            continue
        profile = catalog.resolved[name].profile
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
    from acp_bridge.yamlsource import field_name

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
        for name in loaded.profiles.names():
            if name in loaded.profiles.errors:
                problems.extend(loaded.profiles.errors[name].problems)
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


# --- the entry paths: bash, spawn, ask; tool specs ---------------------------------------------

_EXIT_BY_ERROR = {
    ErrorCode.TIMEOUT: EXIT_TIMEOUT,
    ErrorCode.CANCELLED: EXIT_INTERRUPTED,
    ErrorCode.CONFIG_ERROR: EXIT_USAGE,
}


def _finish(result: SubtaskResult) -> int:
    """Print the envelope on stdout; its status decides the exit code."""
    _out(result.to_json(indent=2))
    if result.ok:
        return EXIT_OK
    return _EXIT_BY_ERROR.get(result.meta.error_code or ErrorCode.INTERNAL_ERROR, EXIT_FAILED)


RunOptions = dict[str, Any]


def _run_entry(
    args: argparse.Namespace, entry: Entry, run: Callable[[RunOptions], SubtaskResult]
) -> int:
    """Load the config, run with the options every entry command shares, print the envelope.
    A broken config prints one too (runs always answer with an envelope), its problems
    listed on stderr."""
    from acp_bridge.envelope import Meta, from_error

    try:
        loaded = _load(args)
    except ConfigError as exc:
        for problem in exc.problems:
            _err(f"{type(exc).__name__}: {problem}")
        return _finish(from_error(exc, meta=Meta(entry=entry)))
    options = {
        "timeout": args.timeout,
        "cwd": args.cwd,
        "observe_profile": args.observe,
        "on_event": _progress(args),
        "config": loaded,
    }
    return _finish(run(options))


def _progress(args: argparse.Namespace) -> Callable[[Event], None] | None:
    """Live events on stderr (command output as it comes), unless --quiet."""
    if args.quiet:
        return None

    def show(event: Event) -> None:
        if event.kind == "terminal_output":
            sys.stderr.write(event.data.get("text", ""))
            sys.stderr.flush()
            return
        details = " ".join(f"{k}={_clip(v)}" for k, v in event.data.items())
        _err(f"[{event.elapsed:6.2f}s] {event.kind} {details}".rstrip())

    return show


def _clip(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _names(raw: str | None) -> list[str] | None:
    return None if raw is None else [n.strip() for n in raw.split(",") if n.strip()]


def cmd_bash(args: argparse.Namespace) -> int:
    from acp_bridge.bash import bash_sync

    command = " ".join(args.command)  # like ssh: the words make one shell line
    return _run_entry(
        args,
        "bash",
        lambda options: bash_sync(command, max_output_bytes=args.max_output_bytes, **options),
    )


def cmd_spawn(args: argparse.Namespace) -> int:
    from acp_bridge.spawn import spawn_sync

    tools = _names(args.tools) or []
    return _run_entry(
        args,
        "spawn",
        lambda options: spawn_sync(
            args.task, tools, model=args.model, output_schema=args.output_schema, **options
        ),
    )


def cmd_ask(args: argparse.Namespace) -> int:
    from acp_bridge.ask import ask_sync

    tools = _names(args.tools)
    return _run_entry(
        args, "ask", lambda options: ask_sync(args.prompt, tools=tools, model=args.model, **options)
    )


def cmd_tools(args: argparse.Namespace) -> int:
    from acp_bridge.tools import ToolRegistry

    registry = ToolRegistry(_load(args))
    wanted = _names(args.tools)
    if wanted is not None:
        selection = registry.select(wanted)
        for note in selection.warnings():
            _err(f"warning: {note}")
        registry = selection.registry
    _out(json.dumps(registry.specs(args.format), indent=2, ensure_ascii=False))
    return EXIT_OK


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

    _add_entry_commands(commands)
    return parser


def _run_options(p: argparse.ArgumentParser, *, observe_default: str, loop: bool = True) -> None:
    """The options of every entry command; ``loop``: those of a model loop too."""
    if loop:
        p.add_argument("--model", metavar="M", help="a model name from the config's models")
    p.add_argument("--timeout", type=float, metavar="S", help="seconds the run may take")
    p.add_argument("--cwd", type=Path, metavar="DIR", help="working directory (default: here)")
    p.add_argument(
        "--observe",
        choices=["default", "long_shell", "web_extract"],
        metavar="PROFILE",
        help=f"live events on stderr: default, long_shell, web_extract (default: "
        f"{observe_default})",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no live events on stderr")


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
