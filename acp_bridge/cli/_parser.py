"""The argument parser of ``acp-bridge``: every command, its options and its handler.

Numbers are checked where the user typed them (``_argtypes``); a usage error of an entry
command still answers with an envelope on stdout (``_usage``).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from acp_bridge._version import __version__
from acp_bridge.cli._agent_commands.agents_flags import add_agents_command
from acp_bridge.cli._argtypes import count, seconds
from acp_bridge.cli._batch_commands import batch_flags, compare_flags
from acp_bridge.cli._run_commands import run_store_commands, serve_flags
from acp_bridge.cli._run_commands.usage_errors import EntryParser, for_entry


class _Handlers:
    """A command module imported only when one of its handlers runs: building the parser
    stays cheap, and commands that only read the run store (wait, ps, logs) never load the
    entry code and pydantic."""

    def __init__(self, module: str) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Callable[[argparse.Namespace], int]:
        def handler(args: argparse.Namespace) -> int:
            func: Callable[[argparse.Namespace], int] = getattr(
                importlib.import_module(self._module), name
            )
            return func(args)

        return handler


_RUN = "acp_bridge.cli._run_commands"
_AGENT = "acp_bridge.cli._agent_commands"
_entries = _Handlers(f"{_RUN}.entry_commands")
_sessions = _Handlers(f"{_RUN}.sessions_command")
_mcp = _Handlers(f"{_RUN}.mcp_command")
_ui = _Handlers(f"{_RUN}.ui_command")
_doctor = _Handlers(f"{_AGENT}.doctor_command")
_profiles = _Handlers(f"{_AGENT}.profiles_command")
_agents = _Handlers(f"{_AGENT}.agents_command")
_smoke = _Handlers("acp_bridge.cli._batch_commands.smoke_command")


class _Commands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The commands. With ``only`` (the command the command line names), every other
    command is registered (``--help`` lists it, a wrong name is told the choices) but
    neither its parser nor its arguments are made: what building takes goes to an
    :class:`_Unbuilt` that keeps nothing. Issue 24: a cold ``run`` or ``ps`` built ~150
    arguments it never parses, and ~20 parsers (~0.7 M instructions each)."""

    only: str | None = None

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if self.only is None or name == self.only:
            return cast(argparse.ArgumentParser, super().add_parser(name, **kwargs))
        # What argparse's add_parser registers, but the parser (these commands take no aliases).
        if "help" in kwargs:
            self._choices_actions.append(self._ChoicesPseudoAction(name, (), kwargs["help"]))
        self._name_parser_map[name] = unbuilt = _Unbuilt()
        return cast(argparse.ArgumentParser, unbuilt)

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, *args: Any) -> None:
        name = args[0][0]
        if isinstance(self._name_parser_map.get(name), _Unbuilt):  # never: see command_of
            raise argparse.ArgumentError(self, f"{name}: not the command the line names")
        super().__call__(parser, namespace, *args)


class _Unbuilt:
    """A command parser left unbuilt: every call (add_argument, set_defaults, a group…)
    is taken and dropped, and gives this object back for the next one."""

    def __getattr__(self, name: str) -> Callable[..., _Unbuilt]:
        return self._take

    def _take(self, *args: Any, **kwargs: Any) -> _Unbuilt:
        return self


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30)


def build_parser(
    entry: str | None = None, *, every_option: bool = True, command: str | None = None
) -> argparse.ArgumentParser:
    """The parser; ``entry``: the entry path the command line runs, if any (its usage errors
    then print an envelope too). Without ``every_option`` the options of the other entry
    commands are left out: they come from the options models (pydantic), which commands
    that only read the run store (``wait``, ``ps``) must start without. With ``command``
    (the one the command line names) only that command's arguments are built."""
    parser = EntryParser(
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
    parser.entry = entry
    parser.register("action", "parsers", _Commands)
    commands = cast(
        _Commands, parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    )
    commands.only = command

    profiles = commands.add_parser(
        "profiles",
        help="list, show, validate agent profiles; export the config schema",
        formatter_class=_Formatter,
        description="Agent profiles say how to start an ACP agent and what it may touch.",
    )
    sub = profiles.add_subparsers(dest="profiles_command", metavar="ACTION", required=True)

    p = sub.add_parser("list", help="every profile with its description and whether it is ready")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_profiles.cmd_profiles_list)

    p = sub.add_parser("show", help="one fully resolved profile and where each value came from")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_profiles.cmd_profiles_show)

    p = sub.add_parser(
        "validate",
        help="check config and profile files (default: the active config)",
        description="Check config files and profile files; folders mean every *.yaml inside. "
        "Prints one line per problem as FILE:LINE:COL: FIELD: MESSAGE and exits 2 if any.",
    )
    p.add_argument("files", nargs="*", type=Path, metavar="FILE")
    p.add_argument("-v", "--verbose", action="store_true", help="also list the valid files")
    p.set_defaults(handler=_profiles.cmd_profiles_validate)

    p = sub.add_parser("schema", help="print the JSON Schema of the config file")
    p.add_argument("--profile", action="store_true", help="the schema of one profile file")
    p.set_defaults(handler=_profiles.cmd_profiles_schema)

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
    p.add_argument("--install", action="store_true", help="install the agent first if missing")
    _entry_options(p, "acp_spawn", every_option or entry == "acp_spawn")
    _answer_options(p)
    run_store_commands.add_output_options(p)
    _run_layer_options(p, every_option or entry == "acp_spawn")
    p.set_defaults(handler=_entries.cmd_run)
    for_entry(p, "acp_spawn")

    p = commands.add_parser(
        "sessions",
        help="list the sessions an ACP agent keeps (session/list); --delete one",
        formatter_class=_Formatter,
        description="Print the session ids, last activity and titles the agent of profile "
        "AGENT lists for the working directory (--all: every directory). Continue one with "
        "`acp-bridge run AGENT TASK --resume SESSION_ID`. Only for agents that offer "
        "session/list (session/delete for --delete).",
    )
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--cwd", type=Path, metavar="DIR", help="list this directory's sessions")
    p.add_argument("--all", action="store_true", help="sessions of every directory")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--delete", metavar="SESSION_ID", help="remove this session from the list")
    p.set_defaults(handler=_sessions.cmd_sessions)

    p = commands.add_parser(
        "logout",
        help="log an ACP agent out (logout), where it offers that",
        description="End the authenticated state of the agent of profile AGENT: its next "
        "sessions need authentication again. Only for agents that offer logout.",
    )
    p.add_argument("agent", metavar="AGENT")
    p.set_defaults(handler=_sessions.cmd_logout)

    p = commands.add_parser(
        "smoke",
        help="run smoke-test suites against agents; JUnit and JSON reports for CI",
        formatter_class=_Formatter,
        description="Run every case of the SUITE files (YAML), each in a fresh temporary "
        "workspace, up to --parallel at once; print a summary table; exit 1 if any case "
        "failed. See docs/how-to/smoke.md for the format.",
        epilog="example: acp-bridge smoke examples/smoke/demo.yaml --junit out.xml",
    )
    p.add_argument("suites", nargs="+", type=Path, metavar="SUITE")
    p.add_argument("--agents", metavar="A,B", help="run only these agents' matrix entries")
    p.add_argument(
        "--parallel", type=count(1, 256), default=1, metavar="N", help="cases at once (1)"
    )
    p.add_argument("--model", metavar="M", help="model for spawn and ask cases")
    p.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report")
    p.add_argument(
        "--json", type=Path, metavar="FILE", help="write a JSON report with every envelope"
    )
    p.add_argument(
        "--skip-missing",
        action="store_true",
        help="skip the cases of agents the doctor finds not ready here (not installed, not "
        "starting in their sandbox, refusing a session without a key), saying why "
        "(default: they run and fail)",
    )
    p.add_argument("--keep", action="store_true", help="keep each case's workspace")
    batch_flags.add_executor_options(p)  # where the cases run
    p.set_defaults(handler=_smoke.cmd_smoke)

    p = commands.add_parser(
        "doctor",
        help="is each profile ready here: it starts each agent in its sandbox to prove it",
        formatter_class=_Formatter,
        description="For each PROFILE (default: every profile): whether its command is found, "
        "which sandbox mode a run would use and why, its version (from the record `acp-bridge "
        "agents install` keeps, else its version_args run in its sandbox; older than "
        "min_version is not ready), and the proof: the agent started as a run starts it (its "
        "sandbox, environment and managed install, in a temporary workspace) through "
        "initialize and session/new, and closed again (session/close, else the agent ended); "
        "no prompt is sent. Ready means all of that worked and the agent did not ask for a "
        "key: a -32000 (auth required) answer to session/new or an auth status of 'not "
        "logged in' is not ready, and so is an agent whose profile says it opens sessions "
        "with nothing to answer them (auth.checked_by_session: false) while none of its "
        "auth.env is set and none of its auth.files exists. Each step is bounded by the "
        "profile's timeouts.startup and timeouts.session (the probe at most 90 s, a "
        "--version at most 30 s); nothing of the "
        "agent runs outside its sandbox or is left running, and it writes only its declared "
        "state paths. Profiles are checked one after another. Every problem comes with a "
        "one-line fix. Exit 0 when everything asked about is ready.",
    )
    p.add_argument("profiles", nargs="*", metavar="PROFILE")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_doctor.cmd_doctor)

    serve_flags.add_mcp_command(commands, _mcp, _Formatter)
    serve_flags.add_ui_command(commands, _ui, _Formatter)
    add_agents_command(commands, _agents, _Formatter)

    p = commands.add_parser(
        "demo-agent",
        help="serve the bundled offline demo ACP agent on stdin/stdout",
        description="The bundled demo agent (profile 'demo'). It speaks ACP on stdio; it is "
        "started by acp-bridge, not by people.",
    )
    p.set_defaults(handler=_entries.cmd_demo_agent)
    _add_entry_commands(commands, entry, every_option)
    run_store_commands.add_commands(commands)
    batch_flags.add_commands(commands, _Formatter)
    compare_flags.add_compare_command(commands, _Formatter, options=every_option)
    return parser


def _entry_options(p: argparse.ArgumentParser, entry: str, wanted: bool) -> None:
    """The flags of ``entry``'s options (from its options model), when ``wanted``."""
    if wanted:
        from acp_bridge.cli._run_commands.entry_flags import add_options

        add_options(p, entry)


def _run_layer_options(
    p: argparse.ArgumentParser, wanted: bool, without: tuple[str, ...] = ()
) -> None:
    """``--detach`` and the run layer's options (a named session: ``acp_spawn`` only)."""
    if wanted:
        from acp_bridge.cli._run_commands.entry_flags import add_run_layer_options

        add_run_layer_options(p, without=without)


def _answer_options(p: argparse.ArgumentParser) -> None:
    """``run``'s answers to the agent's ``ask`` permissions and questions."""
    a = p.add_argument_group(
        "answers",
        "On a terminal, `ask` permission decisions and the agent's questions are prompted; "
        "headless they are rejected.",
    )
    yes_no = a.add_mutually_exclusive_group()
    yes_no.add_argument("-y", "--yes", action="store_true", help="allow every `ask`; no prompts")
    yes_no.add_argument("-n", "--no", action="store_true", help="reject every `ask`; no prompts")
    a.add_argument(
        "--ask-timeout",
        type=seconds,
        metavar="S",
        help="seconds a prompt waits before its default (reject / cancel; default 60)",
    )


def _add_entry_commands(commands: Any, entry: str | None, every_option: bool) -> None:
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
    _entry_options(p, "bash", every_option or entry == "bash")
    run_store_commands.add_output_options(p)
    _run_layer_options(p, every_option or entry == "bash", without=("session",))
    p.set_defaults(handler=_entries.cmd_bash)
    for_entry(p, "bash")

    p = commands.add_parser(
        "spawn",
        help="run a task in a local inner model loop limited to some tools",
        formatter_class=_Formatter,
        description=f"Run TASK with a local model that may use only --tools. {envelope_note}",
        epilog="example: acp-bridge spawn 'count the TODOs in src/' --tools bash,read_file",
    )
    p.add_argument("task", metavar="TASK")
    p.add_argument("--tools", required=True, metavar="A,B", help="tools the inner agent may use")
    _entry_options(p, "spawn", every_option or entry == "spawn")
    run_store_commands.add_output_options(p)
    _run_layer_options(p, every_option or entry == "spawn", without=("session",))
    p.set_defaults(handler=_entries.cmd_spawn)
    for_entry(p, "spawn")

    p = commands.add_parser(
        "ask",
        help="a host model loop that may call spawn, acp_spawn, bash, …",
        formatter_class=_Formatter,
        description="Answer PROMPT with a host model loop (depth 0) offered the tool registry: "
        f"it may call spawn, acp_spawn (if enabled), bash and the file tools. {envelope_note}",
    )
    p.add_argument("prompt", metavar="PROMPT")
    p.add_argument("--tools", metavar="A,B", help="tools to offer (default: every enabled tool)")
    _entry_options(p, "ask", every_option or entry == "ask")
    run_store_commands.add_output_options(p)
    p.set_defaults(handler=_entries.cmd_ask)
    for_entry(p, "ask")

    p = commands.add_parser(
        "tools",
        help="print the function-calling specs of the enabled tools",
        formatter_class=_Formatter,
        description="Print each enabled tool as a function-calling definition (JSON Schema "
        "parameters) for a host loop to offer its model.",
    )
    p.add_argument("--format", choices=["openai", "anthropic"], default="openai")
    p.add_argument("--tools", metavar="A,B", help="only these tools")
    p.set_defaults(handler=_entries.cmd_tools)
