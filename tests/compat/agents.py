"""The compatibility matrix's table of agents: for each built-in profile, what a user adds to
point it at the fake model endpoint (``tests/fake_models.py``), and how each scenario is
asked of it (its own tool names and arguments).

What a row may add to the built-in profile is what a user adds: the endpoint and key (the
variables or config file the agent really reads), and an allow rule only where a scenario
needs one (:data:`RULES`, shown in the table). Everything else is the profile as shipped,
under the default sandbox and the default policy.

A scenario an agent cannot do offline is listed in ``impossible`` with the reason (the table
shows it); notes in ``notes`` say how a passing cell passed when that differs between agents
(commands run in the agent's own process, not through the bridge's terminals).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.fake_models import call_custom, call_tool, slow

SCENARIOS = (
    "start",
    "doctor",
    "plain",
    "read",
    "edit",
    "terminal",
    "refused",
    "cancel",
    "follow-up",
    "resume",
)
"""The columns, in order: the agent starts in the sandbox and answers initialize;
``acp-bridge doctor`` says ready exactly when a run then finishes a plain task; a plain
answer; a file read; an edit inside the workspace (files changed exact); a terminal command
(allowed by a rule); a command the default policy refuses; cancel mid-turn (Ctrl-C); a
follow-up turn in the live session (``send``); resume in a new process (``--resume``)."""

RULES = {"terminal": [{"kind": "execute", "command": "printf *", "decision": "allow"}]}
"""The allow rules a scenario adds to the profile (a user's config would say the same)."""

OLD_LINE, NEW_LINE = "old line", "new line"
CANCEL_AFTER = 600  # seconds the cancelled turn's model answer would take


@dataclass(frozen=True)
class Workspace:
    """What a scenario's prompt may name: the session's folder, with ``notes.txt`` in it
    (its text holds the run's token), and the token itself."""

    root: Path
    token: str

    @property
    def notes(self) -> Path:
        return self.root / "notes.txt"

    def notes_text(self) -> str:
        return f"compat notes {self.token}\n{OLD_LINE}\n"

    def printf(self) -> str:
        """A command whose output (``ran-TOKEN``) is not in its own text."""
        return f"printf 'ran-%s\\n' {self.token}"

    @property
    def printed(self) -> str:
        return f"ran-{self.token}"

    def patch(self) -> str:
        """The edit as codex's apply_patch takes it."""
        return (
            "*** Begin Patch\n*** Update File: notes.txt\n@@\n"
            f"-{OLD_LINE}\n+{NEW_LINE}\n*** End Patch\n"
        )


@dataclass(frozen=True)
class Endpoint:
    """The fake model server (``url``: ``http://127.0.0.1:PORT``) and the run's own folder,
    where a row may write the config files a user would write."""

    url: str
    folder: Path


Prompt = Callable[[Workspace], str]
Mapping = Callable[[Endpoint], dict[str, str]]


def _nothing(_: Endpoint) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class Agent:
    profile: str
    api: str  # the model API it speaks (or "none")
    read: Prompt
    edit: Prompt
    terminal: Prompt
    refused: Prompt
    env: Mapping = _nothing  # added to the profile's env in the user's config
    host_env: Mapping = _nothing  # exported in the user's shell (read by the bridge too)
    files: Mapping = _nothing  # config files a user writes: name in the run folder → text
    cancel: Prompt = lambda ws: slow(CANCEL_AFTER)
    remember: Prompt = lambda ws: f"compat remember {ws.token}"
    recall: Prompt = lambda ws: "compat recall"
    terminal_rules: list[dict[str, str]] = field(default_factory=lambda: RULES["terminal"])
    impossible: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    load_after_a_minute: str = ""  # why a resume must wait for the next wall-clock minute

    @property
    def uses_model(self) -> bool:
        return self.api != "none"


IN_PROCESS = "in-process: runs commands in its own process, not through the bridge's terminals"


def _lines(*calls: str) -> str:
    return "\n".join(calls)


def _codex_config(endpoint: Endpoint) -> dict[str, str]:
    return {
        "codex-home/config.toml": (
            'model_provider = "fake"\nmodel = "gpt-5.5"\n\n[model_providers.fake]\n'
            f'name = "fake"\nbase_url = "{endpoint.url}/v1"\nenv_key = "FAKE_MODEL_KEY"\n'
            'wire_api = "responses"\n'
        )
    }


def _opencode_provider(endpoint: Endpoint) -> dict[str, str]:
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Fake",
        "options": {"baseURL": f"{endpoint.url}/v1", "apiKey": "sk-fake"},
        "models": {"fake-model": {"name": "Fake model", "tool_call": True}},
    }
    config = {"model": "fake/fake-model", "small_model": "fake/fake-model"}
    return {"opencode.json": json.dumps(config | {"provider": {"fake": provider}})}


def _vibe_providers(endpoint: Endpoint) -> str:
    provider = {"name": "mistral", "api_base": f"{endpoint.url}/v1"}
    provider |= {"api_key_env_var": "MISTRAL_API_KEY", "backend": "mistral"}
    return json.dumps([provider])


def _passthrough(tool: str, **args: object) -> str:
    return f"***CALL_TOOL {tool} {json.dumps(args)}"


AUGGIE_OFFLINE = (
    "needs an Augment account and subscription: it speaks only to Augment's backend, and its "
    "licence allows no other (no offline endpoint)"
)

AGENTS: dict[str, Agent] = {
    agent.profile: agent
    for agent in [
        Agent(
            profile="demo",
            api="none",
            read=lambda ws: "read notes.txt",
            edit=lambda ws: f"write notes.txt: {NEW_LINE}",  # one line: each line is a directive
            terminal=lambda ws: f"run {ws.printf()}",
            # Its profile allows every command (its commands are the prompt's): an edit
            # outside the workspace is what the policy refuses.
            refused=lambda ws: "write ../refused.txt: no",
            cancel=lambda ws: f"sleep {CANCEL_AFTER}",
            remember=lambda ws: f"remember {ws.token}",  # its memory's own words
            recall=lambda ws: "recall",
            terminal_rules=[],  # its profile allows its commands (they are the prompt's)
            notes={"refused": "a write outside the workspace (its profile allows commands)"},
        ),
        Agent(
            profile="claude",
            api="Anthropic messages",
            env=lambda e: {"ANTHROPIC_BASE_URL": e.url, "ANTHROPIC_API_KEY": "sk-fake"},
            read=lambda ws: call_tool("Read", file_path=str(ws.notes)),
            edit=lambda ws: _lines(
                call_tool("Read", file_path=str(ws.notes)),
                call_tool(
                    "Edit", file_path=str(ws.notes), old_string=OLD_LINE, new_string=NEW_LINE
                ),
            ),
            terminal=lambda ws: call_tool("Bash", command=ws.printf(), description="print"),
            refused=lambda ws: call_tool("Bash", command="touch refused.txt", description="t"),
            notes={"terminal": IN_PROCESS},
        ),
        Agent(
            profile="codex",
            api="OpenAI responses",
            env=lambda e: {"FAKE_MODEL_KEY": "sk-fake"},
            host_env=lambda e: {"CODEX_HOME": str(e.folder / "codex-home")},
            files=_codex_config,
            read=lambda ws: call_tool("exec_command", cmd="cat notes.txt", login=False),
            edit=lambda ws: call_custom("apply_patch", ws.patch()),
            terminal=lambda ws: call_tool("exec_command", cmd=ws.printf(), login=False),
            # Commands run in codex's own sandbox without asking; one that needs more asks.
            refused=lambda ws: call_tool(
                "exec_command",
                cmd="touch refused.txt",
                login=False,
                sandbox_permissions="require_escalated",
                justification="compat",
            ),
            notes={
                "read": "reads with its own commands (cat), not through the bridge's files",
                "terminal": IN_PROCESS + ", in its own Landlock sandbox, without asking",
                "refused": "a command that asks to leave codex's own sandbox",
            },
        ),
        Agent(
            profile="gemini",
            api="Gemini",
            env=lambda e: {"GOOGLE_GEMINI_BASE_URL": e.url, "GEMINI_API_KEY": "fake-key"},
            read=lambda ws: call_tool("read_file", file_path=str(ws.notes)),
            edit=lambda ws: call_tool(
                "replace",
                file_path=str(ws.notes),
                old_string=OLD_LINE,
                new_string=NEW_LINE,
                instruction="compat",
            ),
            terminal=lambda ws: call_tool(
                "run_shell_command", command=ws.printf(), description="print"
            ),
            refused=lambda ws: call_tool("run_shell_command", command="touch refused.txt"),
            notes={"terminal": IN_PROCESS},
            load_after_a_minute=(
                "0.61.0 names a session's chat file by the minute it started, and a load "
                "within that minute overwrites it"
            ),
        ),
        Agent(
            profile="qwen-code",
            api="OpenAI chat completions",
            env=lambda e: {
                "OPENAI_BASE_URL": f"{e.url}/v1",
                "OPENAI_API_KEY": "fake-key",
                "OPENAI_MODEL": "fake-model",
            },
            read=lambda ws: call_tool("read_file", file_path=str(ws.notes)),
            # It edits only a file read in the same session.
            edit=lambda ws: _lines(
                call_tool("read_file", file_path=str(ws.notes)),
                call_tool(
                    "edit", file_path=str(ws.notes), old_string=OLD_LINE, new_string=NEW_LINE
                ),
            ),
            terminal=lambda ws: call_tool(
                "run_shell_command", command=ws.printf(), is_background=False, description="p"
            ),
            refused=lambda ws: call_tool(
                "run_shell_command", command="touch refused.txt", is_background=False
            ),
            notes={"terminal": IN_PROCESS},
        ),
        Agent(
            profile="kimi",
            api="OpenAI chat completions",
            env=lambda e: {
                "KIMI_MODEL_NAME": "fake-model",
                "KIMI_MODEL_API_KEY": "fake-key",
                "KIMI_MODEL_PROVIDER_TYPE": "openai",
                "KIMI_MODEL_BASE_URL": f"{e.url}/v1",
            },
            read=lambda ws: call_tool("Read", path=str(ws.notes)),
            edit=lambda ws: _lines(
                call_tool("Read", path=str(ws.notes)),
                call_tool("Edit", path=str(ws.notes), old_string=OLD_LINE, new_string=NEW_LINE),
            ),
            terminal=lambda ws: call_tool("Bash", command=ws.printf()),
            refused=lambda ws: call_tool("Bash", command="touch refused.txt"),
            # Its permission request names no command and no kind (the title Bash alone):
            # a rule by title lets it ask; the command it then runs through the bridge's
            # terminal is judged by the command rule.
            terminal_rules=[{"title": "Bash", "decision": "allow"}, *RULES["terminal"]],
        ),
        Agent(
            profile="opencode",
            api="OpenAI chat completions",
            env=lambda e: {"OPENCODE_CONFIG": str(e.folder / "opencode.json")},
            files=_opencode_provider,
            read=lambda ws: call_tool("read", path=str(ws.notes)),
            edit=lambda ws: call_tool(
                "edit", path=str(ws.notes), oldString=OLD_LINE, newString=NEW_LINE
            ),
            terminal=lambda ws: call_tool("shell", command=ws.printf()),
            refused=lambda ws: call_tool("shell", command="touch refused.txt"),
            notes={"terminal": IN_PROCESS},
        ),
        Agent(
            profile="vibe",
            api="Mistral chat (OpenAI chat completions)",
            env=lambda e: {
                "MISTRAL_API_KEY": "fake-key",
                "VIBE_ENABLE_TELEMETRY": "false",
                "VIBE_PROVIDERS": _vibe_providers(e),
            },
            read=lambda ws: call_tool("read_file", path=str(ws.notes)),
            edit=lambda ws: call_tool(
                "edit", file_path=str(ws.notes), old_string=OLD_LINE, new_string=NEW_LINE
            ),
            terminal=lambda ws: call_tool("bash", command=ws.printf()),
            refused=lambda ws: call_tool("bash", command="touch refused.txt"),
            notes={"terminal": IN_PROCESS},
        ),
        Agent(
            profile="goose",
            api="OpenAI chat completions",
            env=lambda e: {
                "GOOSE_PROVIDER": "openai",
                "GOOSE_MODEL": "fake-model",
                "OPENAI_HOST": e.url,
                "OPENAI_API_KEY": "sk-fake",
            },
            read=lambda ws: call_tool("read", path=str(ws.notes)),
            edit=lambda ws: call_tool("edit", path=str(ws.notes), before=OLD_LINE, after=NEW_LINE),
            terminal=lambda ws: call_tool("shell", command=ws.printf()),
            refused=lambda ws: call_tool("shell", command="touch refused.txt"),
        ),
        Agent(
            profile="fast-agent",
            api="OpenAI chat completions",
            env=lambda e: {
                "FAST_AGENT_MODEL": "generic.fake-model",
                "GENERIC_BASE_URL": f"{e.url}/v1",
                "GENERIC_API_KEY": "fake-key",
            },
            read=lambda ws: call_tool("read_text_file", path=str(ws.notes)),
            # Its tools write whole files (no edit tool when the client serves fs/*).
            edit=lambda ws: call_tool(
                "write_text_file",
                path=str(ws.notes),
                content=f"compat notes {ws.token}\n{NEW_LINE}\n",
            ),
            terminal=lambda ws: call_tool("execute", command=ws.printf()),
            refused=lambda ws: call_tool("execute", command="touch refused.txt"),
        ),
        Agent(
            profile="fast-agent-passthrough",
            api="none",
            read=lambda ws: _passthrough("read_text_file", path=str(ws.notes)),
            edit=lambda ws: _passthrough(
                "write_text_file",
                path=str(ws.notes),
                content=f"compat notes {ws.token}\n{NEW_LINE}\n",
            ),
            terminal=lambda ws: _passthrough("execute", command=ws.printf()),
            # Its profile allows every command (its commands are the prompt's): a write
            # outside the workspace is what the policy refuses.
            refused=lambda ws: _passthrough(
                "write_text_file", path=str(ws.root.parent / "refused.txt"), content="no\n"
            ),
            cancel=lambda ws: _passthrough("execute", command=f"sleep {CANCEL_AFTER}"),
            terminal_rules=[],  # its profile allows its commands (they are the prompt's)
            notes={"refused": "a write outside the workspace (its profile allows commands)"},
        ),
        Agent(
            profile="auggie",
            api="Augment's own",
            read=lambda ws: "",
            edit=lambda ws: "",
            terminal=lambda ws: "",
            refused=lambda ws: "",
            impossible={
                scenario: AUGGIE_OFFLINE
                for scenario in SCENARIOS
                if scenario not in ("start", "doctor")
            },
            notes={"start": "session/new answers -32000 without a login: auth_required"},
        ),
    ]
}
