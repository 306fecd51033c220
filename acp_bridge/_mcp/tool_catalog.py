"""The tools as MCP lists them: names, descriptions, input and output schemas, hints.

Input schemas come from the argument models (:mod:`.arguments`), so what a host is shown is
what is checked. ``agent`` lists the profiles that are ready here (valid, and their command
found, as ``acp-bridge profiles list`` says READY) as an enum, each with its description. The
entry tools' output schema is the envelope's (:class:`~acp_bridge.SubtaskResult`); the
run-control tools describe the runs (:mod:`.run_control`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel

from acp_bridge._entries.entry_table import entries_offered
from acp_bridge._loop.toolset import json_parameters
from acp_bridge._mcp import arguments as a
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ConfigError

ENTRY_TOOLS = entries_offered("mcp")
RUN_TOOLS = ("start", "wait", "status", "list", "stop", "send")
COMPARE_TOOL = "compare"


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    args: type[BaseModel]
    read_only: bool = False
    destructive: bool = True
    open_world: bool = True


_ENVELOPE_NOTE = (
    " Returns the SubtaskResult envelope (task_id, status done|failed, summary, output_kind, "
    "output, error, meta) as structured content, and the summary and output as text."
)
SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "acp_spawn",
            "Hand a self-contained task to an external coding agent (an ACP agent profile) "
            "running in a sandbox, and wait for its result. Its permission requests follow "
            "the profile's policy; an `ask` comes to you as an elicitation." + _ENVELOPE_NOTE,
            a.AcpSpawnArgs,
        ),
        ToolSpec(
            "spawn",
            "Run a self-contained task in a local model loop that may use only the named "
            "tools, and wait for its result." + _ENVELOPE_NOTE,
            a.SpawnArgs,
        ),
        ToolSpec(
            "bash",
            "Run one shell command as an isolated subtask (own process group, sandbox, time "
            "limit) and wait for it; output is {exit_code, stdout, stderr, …} "
            "(subtask.bash.result.v1)." + _ENVELOPE_NOTE,
            a.BashArgs,
            open_world=False,
        ),
        ToolSpec(
            COMPARE_TOOL,
            "Best of N in one call: run the same task on several agents (or n times on one), "
            "each attempt in its own git worktree of the repository at cwd; run `verify` (a "
            "shell command, exit 0 = passed) on each attempt's changes; pick the winner "
            "(verified, fastest, cheapest, smallest) and, with apply, apply its diff to the "
            "working tree (refused unless clean; dry_run returns the patch). Returns every "
            "attempt's envelope and verifier result, the winner's task_id and why it won.",
            a.CompareArgs,
        ),
        ToolSpec(
            "start",
            "Start a run in the background (acp_spawn by default; spawn, bash) and return "
            "its task_id at once; it outlives this connection. Follow it with wait, status, "
            "stop. An `ask` permission is answered by the config (rejected headless).",
            a.StartArgs,
        ),
        ToolSpec(
            "wait",
            "Wait for a background run to end (its events arrive as progress) and return it "
            "with its envelope; or, after timeout seconds, the run as it is.",
            a.WaitArgs,
            read_only=True,
            destructive=False,
            open_world=False,
        ),
        ToolSpec(
            "status",
            "A background run now: status (queued, running, done, failed, cancelled, lost), "
            "times, usage, and its envelope once it ended.",
            a.StatusArgs,
            read_only=True,
            destructive=False,
            open_world=False,
        ),
        ToolSpec(
            "list",
            "Background runs, newest first, each with its status and summary.",
            a.ListArgs,
            read_only=True,
            destructive=False,
            open_world=False,
        ),
        ToolSpec(
            "stop",
            "Stop a background run gracefully (its agent is told; envelope `cancelled`) and "
            "return it once it ended (or after wait seconds).",
            a.StopArgs,
            open_world=False,
        ),
        ToolSpec(
            "send",
            "Send a follow-up prompt to a background acp_spawn run's agent: the next turn in "
            "the same ACP session (it remembers the conversation), a run of its own with its "
            "own task_id. Waits like wait (up to `wait` seconds) and returns that run with its "
            "envelope. Refused clearly when the session cannot be continued.",
            a.SendArgs,
        ),
    )
}


def select(names: Sequence[str] | None) -> tuple[str, ...]:
    """The allowlist (``--tools``) checked: every name known; None means every tool."""
    if names is None:
        return tuple(SPECS)
    unknown = [name for name in names if name not in SPECS]
    if unknown:
        raise ConfigError(
            f"--tools: unknown tool {', '.join(map(repr, unknown))}; known: {', '.join(SPECS)}"
        )
    if not names:
        raise ConfigError("--tools: name at least one tool")
    return tuple(dict.fromkeys(names))


@cache
def envelope_schema() -> dict[str, Any]:
    """The JSON Schema of the envelope as it is sent (serialization mode)."""
    return SubtaskResult.model_json_schema(mode="serialization")


def input_schema(spec: ToolSpec, ready: dict[str, str]) -> dict[str, Any]:
    schema = json_parameters(spec.args)
    properties: dict[str, Any] = schema["properties"]
    if "agent" in properties:
        properties["agent"] = _agent_property(properties["agent"], ready)
    if "agents" in properties:  # compare: each item one of the ready profiles
        items = _agent_property(properties["agents"]["items"], ready)
        properties["agents"] = {**properties["agents"], "items": items}
    required = schema.get("required", [])
    # Required first: a model reading the schema sees what it must give before the options.
    schema["properties"] = {
        **{name: properties[name] for name in required},
        **{name: value for name, value in properties.items() if name not in required},
    }
    return schema


def _agent_property(prop: dict[str, Any], ready: dict[str, str]) -> dict[str, Any]:
    if not ready:
        return {**prop, "description": "the agent profile (none is ready here: see "
                "`acp-bridge doctor`)"}  # fmt: skip
    listed = "; ".join(f"{name}: {text}" if text else name for name, text in ready.items())
    # A plain enum, the descriptions in the text: some hosts' function-calling schemas
    # (Gemini's) refuse oneOf, the JSON Schema idiom for a description per value.
    return {**prop, "enum": list(ready), "description": f"the agent profile. Ready: {listed}"}
