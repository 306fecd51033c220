"""The ``passthrough`` model: offline and deterministic, for smoke tests and demos.

It is **not** a language model and understands nothing. Like fast-agent's passthrough model,
it echoes, and it follows explicit directives, one per line of the latest user prompt:

- ``***CALL_TOOL NAME {JSON arguments}``: call tool NAME with those arguments. Several lines
  make several calls, one per model turn, in order.
- ``***FIXED_RESPONSE TEXT``: answer TEXT once the calls are made.

With no directive it answers with the prompt itself. After its calls, without a fixed
response, it passes the last tool result through, unwrapped: a SubtaskResult envelope gives
its ``output`` (a failed one its ``summary``), a bash result (``exit_code``, ``stdout`` …)
its ``stdout``; JSON values are written compactly, surrounding whitespace is stripped, and
an empty answer becomes ``(no output)``. So a prompt that makes it call
``bash`` with ``run_in_subtask: true`` on ``echo hi`` ends with the answer ``hi``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from acp_bridge._os import bounded_json
from acp_bridge.config import PASSTHROUGH_MODEL
from acp_bridge.envelope import is_envelope
from acp_bridge.errors import ModelError

CALL_TOOL = "***CALL_TOOL"
FIXED_RESPONSE = "***FIXED_RESPONSE"
EMPTY_ANSWER = "(no output)"
"""Said instead of an empty answer, which model loops take for no answer at all."""


@dataclass(frozen=True)
class Directive:
    """One tool call the prompt asks for."""

    tool: str
    args: dict[str, Any]


def call_tool_directive(tool: str, args: dict[str, Any] | None = None) -> str:
    """The directive line that makes the passthrough model call ``tool`` with ``args``."""
    return f"{CALL_TOOL} {tool} {json.dumps(args or {}, ensure_ascii=False)}"


def parse_prompt(prompt: str) -> tuple[list[Directive], str | None]:
    """The tool-call directives of ``prompt`` and its fixed response, if any."""
    directives: list[Directive] = []
    fixed: str | None = None
    for line in prompt.splitlines():
        text = line.strip()
        if text.startswith(FIXED_RESPONSE):
            fixed = text[len(FIXED_RESPONSE) :].strip()
        elif text.startswith(CALL_TOOL):
            directives.append(_directive(text[len(CALL_TOOL) :].strip()))
    return directives, fixed


def _directive(rest: str) -> Directive:
    name, _, raw = rest.partition(" ")
    if not name:
        raise ModelError(f"passthrough model: {CALL_TOOL} needs a tool name")
    try:
        args = bounded_json.loads(raw) if raw.strip() else {}
    except bounded_json.JsonRefused as exc:
        raise ModelError(f"passthrough model: arguments of {CALL_TOOL} {name}: {exc}") from exc
    if not isinstance(args, dict):
        raise ModelError(f"passthrough model: arguments of {CALL_TOOL} {name} must be an object")
    return Directive(name, args)


def unwrap_tool_result(text: str) -> str:
    """The answer inside a tool result: a done envelope → its output, a failed one → its
    summary; a bash result → its stdout."""
    try:
        value: Any = bounded_json.loads(text, 2 * bounded_json.MAX_DEPTH)
    except bounded_json.JsonRefused:
        return text.strip() or EMPTY_ANSWER
    if is_envelope(value):
        value = value["output"] if value["status"] == "done" else value["summary"]
    if isinstance(value, dict) and {"exit_code", "stdout"} <= set(value):
        value = value["stdout"]
    if isinstance(value, str):
        return value.strip() or EMPTY_ANSWER
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """One turn of the passthrough model (a pydantic-ai ``FunctionModel`` function)."""
    start = _latest_prompt(messages)
    prompt = _prompt_text(messages[start]) if start is not None else ""
    since = messages[start + 1 :] if start is not None else messages
    directives, fixed = parse_prompt(prompt)
    made = sum(
        isinstance(part, ToolCallPart)
        for message in since
        if isinstance(message, ModelResponse)
        for part in message.parts
    )
    if made < len(directives):
        wanted = directives[made]
        call = ToolCallPart(wanted.tool, wanted.args, tool_call_id=f"passthrough_{made + 1}")
        return ModelResponse(parts=[call])
    if fixed is not None:
        return ModelResponse(parts=[TextPart(fixed)])
    results = [
        part
        for message in since
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart | RetryPromptPart)
    ]
    if not results:
        return ModelResponse(parts=[TextPart(prompt.strip())])
    last = results[-1]
    text = last.model_response_str() if isinstance(last, ToolReturnPart) else last.model_response()
    return ModelResponse(parts=[TextPart(unwrap_tool_result(text))])


def passthrough_model() -> FunctionModel:
    return FunctionModel(respond, model_name=PASSTHROUGH_MODEL)


def _latest_prompt(messages: Sequence[ModelMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelRequest) and any(
            isinstance(p, UserPromptPart) for p in message.parts
        ):
            return index
    return None


def _prompt_text(message: ModelMessage) -> str:
    texts = []
    for part in message.parts:
        if isinstance(part, UserPromptPart):
            content = part.content
            if isinstance(content, str):
                texts.append(content)
            else:  # multi-part prompts: only the text parts can hold directives
                texts.extend(item for item in content if isinstance(item, str))
    return "\n".join(texts)
