"""A local model loop over a ToolSet: the engine under ``spawn`` and ``ask``.

pydantic-ai's ``Agent`` runs the loop (model request → tool calls → results → …). This module
adapts a registry's tools to it, records each call for ``meta.tool_calls`` (and each subtask
envelope a tool returned for ``meta.subtasks``), reports live events, maps pydantic-ai's
failures onto the BridgeError tree, and turns the outcome into an envelope, ``output_schema``
and its repair turns included.

Import this module only on the loop path: it imports pydantic-ai.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio
import pydantic_ai
from pydantic_ai import Agent, RunContext
from pydantic_ai import Tool as AgentTool
from pydantic_ai.exceptions import AgentRunError, UsageLimitExceeded, UserError
from pydantic_ai.messages import ModelMessage
from pydantic_ai.usage import RunUsage, UsageLimits

from acp_bridge._loop.models import ModelChoice, build_model
from acp_bridge._loop.toolset import Selection, Tool, ToolSet
from acp_bridge._os import bounded_json
from acp_bridge._os.race import race, wait_any
from acp_bridge._output_schema.schema_check import check_structured_output
from acp_bridge._output_schema.structured_output import (
    SchemaRegistry,
    structured_output_instruction,
)
from acp_bridge.envelope import (
    Meta,
    SubtaskResult,
    ToolCallRecord,
    done,
    first_line,
    from_error,
    is_envelope,
)
from acp_bridge.errors import (
    BridgeError,
    ConfigError,
    ModelError,
    OutputSchemaError,
    RunCancelled,
    RunTimeout,
    TurnLimitError,
)
from acp_bridge.events import EventSink

# pydantic-ai shows a first-run banner and an advert on a terminal's stderr; here that is
# the bridge's progress stream (and -q must mean quiet): it is for people using pydantic-ai.
pydantic_ai.BANNER_ENABLED = False

WORKER_INSTRUCTIONS = """\
You are a worker agent doing one subtask for a host. Use your tools when the task needs them; \
do exactly what the task asks. When you are done, answer with the result only: no preamble, \
no account of your steps."""

HOST_INSTRUCTIONS = """\
You are a host agent with tools. Use them as the user asks. spawn, acp_spawn, and bash with \
run_in_subtask=true run an isolated subtask and return a SubtaskResult JSON envelope: its \
status says whether it worked and its output holds the answer (for bash, output.stdout). \
Answer the user with what they asked for, nothing more."""

REPAIR_PROMPT = """\
Your answer cannot be used: {error}
Answer again with the JSON value only: no prose, no code fence."""

_TITLE_LIMIT = 80


@dataclass(frozen=True)
class LoopTask:
    """What one run of a loop must do, and within which limits."""

    prompt: str
    max_requests: int
    timeout: float
    output_schema: str = ""
    schemas: SchemaRegistry | None = None
    repair_turns: int = 0
    cancel: anyio.Event | None = None
    abort: anyio.Event | None = None


class ModelLoop:
    """One model, one registry's tools, one conversation (kept across repair turns)."""

    def __init__(
        self,
        registry: ToolSet,
        choice: ModelChoice,
        *,
        instructions: str,
        sink: EventSink,
    ) -> None:
        self._registry = registry
        self._sink = sink
        self.choice = choice
        self.tool_calls: list[ToolCallRecord] = []
        self.subtasks: list[dict[str, Any]] = []
        self.usage = RunUsage()
        self.last_text = ""
        self._history: list[ModelMessage] = []
        tools = [self._adapt(registry.get(name)) for name in registry.names()]
        self._agent = Agent(build_model(choice), instructions=instructions, tools=tools)

    async def run(self, prompt: str, *, max_requests: int) -> str:
        """One user turn; the model's final text. Failures are BridgeErrors."""
        self._sink.emit("status", phase="prompting", model=self.choice.name)
        try:
            result = await self._agent.run(
                prompt,
                message_history=self._history or None,
                usage_limits=UsageLimits(request_limit=max_requests),
            )
        except UsageLimitExceeded as exc:
            raise TurnLimitError(f"the model loop used up its requests: {exc}") from exc
        except UserError as exc:  # pydantic-ai's word for a setup mistake (key, model name)
            raise ConfigError(f"model {self.choice.name!r}: {exc}") from exc
        except AgentRunError as exc:
            raise ModelError(f"model {self.choice.name!r}: {first_line(str(exc))}") from exc
        self._history = result.all_messages()
        self.usage.incr(result.usage)
        self.last_text = result.output
        self._sink.emit("message", text=result.output)
        return result.output

    def usage_dict(self) -> dict[str, int]:
        return {
            "requests": self.usage.requests,
            "tool_calls": self.usage.tool_calls,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
        }

    def _adapt(self, tool: Tool) -> AgentTool[None]:
        """``tool`` as a pydantic-ai tool whose calls go through the registry (validation,
        errors as text) and into the ledger."""

        async def call(ctx: RunContext[None], **arguments: Any) -> str:
            call_id = ctx.tool_call_id or f"call_{len(self.tool_calls) + 1}"
            title = _title(tool.name, arguments)
            self._sink.emit("tool_call", tool_call_id=call_id, title=title, tool_kind=tool.kind)
            # Recorded before it runs: a run cancelled mid-call still says what it was doing.
            record = ToolCallRecord(
                tool_call_id=call_id, title=title, kind=tool.kind, status="cancelled"
            )
            self.tool_calls.append(record)
            text = await self._registry.call(tool.name, arguments)
            record.status = status = "failed" if text.startswith("error:") else "completed"
            envelope = _as_envelope(text)
            if envelope is not None:
                self.subtasks.append(envelope)
            self._sink.emit("tool_update", tool_call_id=call_id, status=status, tool_kind=tool.kind)
            return text

        return AgentTool.from_schema(
            call,
            name=tool.name,
            description=tool.description,
            json_schema=tool.parameters(self._registry),
            takes_ctx=True,
        )


def selection_meta(selection: Selection, choice: ModelChoice) -> Meta:
    """What a loop's envelope says about its setup: model, tools, what was left out, why."""
    warnings = [*choice.warnings, *selection.warnings()]
    return Meta(
        model=choice.name,
        tools=selection.registry.names(),
        tools_ignored=[*selection.unknown, *selection.refused] or None,
        warnings=warnings or None,
    )


async def run_selected(
    selection: Selection,
    choice: ModelChoice,
    task: LoopTask,
    *,
    instructions: str,
    sink: EventSink,
    task_id: str,
) -> SubtaskResult:
    """Run ``task`` with ``choice`` over the selected tools: the envelope (``spawn`` and
    ``ask`` differ only in what they select and the instructions)."""
    meta = selection_meta(selection, choice)
    for warning in meta.warnings or []:
        sink.emit("warning", message=warning)
    loop = ModelLoop(selection.registry, choice, instructions=instructions, sink=sink)
    return await run_to_envelope(loop, task, meta=meta, task_id=task_id)


async def run_to_envelope(
    loop: ModelLoop, task: LoopTask, *, meta: Meta, task_id: str
) -> SubtaskResult:
    """Run ``task`` on ``loop`` within its limits; the envelope, whatever happens.

    The envelope keeps what the loop did (tool calls, subtask envelopes, usage) and, on
    failure, the last answer the model gave.
    """
    prompt = task.prompt
    if task.output_schema:
        schema = task.schemas.schema(task.output_schema) if task.schemas else None
        prompt += "\n" + structured_output_instruction(task.output_schema, schema)

    async def answer() -> tuple[str, Any]:
        text = await loop.run(prompt, max_requests=task.max_requests)
        return text, (await _structured(loop, text, task) if task.output_schema else None)

    error: BridgeError
    try:
        raced = await race(answer, lambda: wait_any(task.cancel, task.abort), timeout=task.timeout)
    except BridgeError as exc:
        error = exc
    else:
        if raced.value is not None:
            text, value = raced.value
            meta = _with_progress(meta, loop)
            if task.output_schema:
                return done(
                    value,
                    output_kind="json",
                    output_schema=task.output_schema,
                    meta=meta,
                    task_id=task_id,
                )
            return done(text, meta=meta, task_id=task_id)
        error = (
            RunTimeout(f"the model loop did not finish within {task.timeout:g}s")
            if raced.timed_out
            else RunCancelled("the run was cancelled")
        )
    return from_error(
        error,
        output=loop.last_text,
        output_schema=task.output_schema,
        meta=_with_progress(meta, loop),
        task_id=task_id,
    )


async def _structured(loop: ModelLoop, text: str, task: LoopTask) -> Any:
    """The JSON answer under ``task.output_schema``, asking again up to ``repair_turns``."""
    for turn in range(task.repair_turns + 1):
        try:
            # Validated in a child the loop's timeout and cancel can kill (a hostile
            # pattern or a quadratic keyword must not hold the loop).
            return await check_structured_output(
                text, task.output_schema, task.schemas, timeout=task.timeout
            )
        except OutputSchemaError as exc:
            if turn == task.repair_turns:
                raise
            text = await loop.run(REPAIR_PROMPT.format(error=exc), max_requests=task.max_requests)
    raise AssertionError("unreachable")  # pragma: no cover


def _with_progress(meta: Meta, loop: ModelLoop) -> Meta:
    return meta.model_copy(
        update={
            "tool_calls": loop.tool_calls or None,
            "subtasks": loop.subtasks or None,
            "usage": loop.usage_dict(),
        }
    )


def _title(name: str, arguments: dict[str, Any]) -> str:
    """A one-line label for a tool call: the command, the task or the path, else the args."""
    for key in ("command", "task", "path"):
        if isinstance(arguments.get(key), str):
            return f"{name}: {first_line(arguments[key], _TITLE_LIMIT)}"
    args = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    return first_line(f"{name} {args}", _TITLE_LIMIT)


def _as_envelope(text: str) -> dict[str, Any] | None:
    """The SubtaskResult in a tool result, if it is one."""
    if not text.startswith("{"):
        return None
    try:
        value = bounded_json.loads(text, 2 * bounded_json.MAX_DEPTH)
    except bounded_json.JsonRefused:
        return None
    return value if is_envelope(value) else None
