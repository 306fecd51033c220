"""A permission ``ask`` and the agent's own questions, as MCP elicitations to the host.

A permission question becomes a form with one field, ``decision``: the options the agent
offered (``allow_once``, ``reject_once``, … by their ids, with their names), or allow/reject
for a request the bridge serves unasked. Anything but an accepted decision — decline,
cancel, no answer within the ask timeout, a host that fails — is a rejection: the safe
default, recorded in ``meta.permissions`` like every decision. The agent's own question
(ACP ``elicitation/create``) is passed on as it came (form, or URL consent where the host
declares URL mode); no answer is ``cancel``.
"""

from __future__ import annotations

import json
import secrets

import mcp.types as types

from acp_bridge._acp.services.elicitation import (
    ElicitationAnswer,
    ElicitationHook,
    ElicitationQuestion,
)
from acp_bridge._acp.services.permissions import PermissionHook, PermissionQuestion
from acp_bridge._mcp.progress import clip
from acp_bridge._mcp.tool_runs import ToolRun

FIELD = "decision"
_PLAIN = (("allow", "Allow"), ("reject", "Reject"))
"""The choices when the agent offered none (a request the bridge serves unasked)."""


def permission_form(question: PermissionQuestion, who: str) -> types.ElicitRequestFormParams:
    """The elicitation that asks the host about one permission request."""
    what = question.title or question.tool_call_id or "a tool call"
    lines = [f"{who} asks permission: {what} [{question.kind or 'unknown kind'}]"]
    if question.locations:
        lines.append(f"at: {', '.join(question.locations)}")
    if question.raw_input not in (None, {}, ""):
        lines.append(f"input: {clip(json.dumps(question.raw_input, default=str), 400)}")
    choices = [(o.option_id, o.name or o.option_id) for o in question.options] or list(_PLAIN)
    rejecting = [o.option_id for o in question.options if o.kind.startswith("reject")]
    field = {
        "type": "string",
        "title": "Decision",
        "description": "allow or reject this tool call",
        "enum": [value for value, _ in choices],
        # enumNames: display names in the 2025-06-18 schema, still read by 2025-11-25 hosts.
        "enumNames": [name for _, name in choices],
        "default": rejecting[0] if rejecting else "reject",
    }
    schema = {"type": "object", "properties": {FIELD: field}, "required": [FIELD]}
    return types.ElicitRequestFormParams(message="\n".join(lines), requested_schema=schema)


def permission_answer(
    question: PermissionQuestion, answer: types.ElicitResult | None
) -> bool | str:
    """What the permission hook returns for the host's answer: an offered option id, or
    True / False when none was offered. Anything else is a rejection."""
    if answer is None or answer.action != "accept" or not answer.content:
        return False
    decision = answer.content.get(FIELD)
    if question.options:
        offered = {option.option_id for option in question.options}
        return decision if isinstance(decision, str) and decision in offered else False
    return decision == "allow"


def permission_hook(tool_run: ToolRun, who: str) -> PermissionHook:
    async def hook(question: PermissionQuestion) -> bool | str:
        answer = await tool_run.ask(permission_form(question, who))
        if answer is None:  # no answer by --ask-timeout (or none in the host's next round)
            raise TimeoutError  # recorded as "no answer", not as the host's rejection
        return permission_answer(question, answer)

    return hook


def elicitation_hook(tool_run: ToolRun, who: str, *, url_mode: bool) -> ElicitationHook:
    """The agent's own questions, passed on to the host (URL mode only if it declared it)."""

    async def hook(question: ElicitationQuestion) -> ElicitationAnswer:
        params: types.ElicitRequestFormParams | types.ElicitRequestURLParams
        message = f"{who} asks: {question.message}"
        if question.mode == "url":
            if not url_mode or not question.url:
                return ElicitationAnswer("cancel")
            params = types.ElicitRequestURLParams(
                message=message,
                url=question.url,
                elicitation_id=question.elicitation_id or secrets.token_hex(8),
            )
        else:
            schema = question.requested_schema or {"type": "object", "properties": {}}
            params = types.ElicitRequestFormParams(message=message, requested_schema=schema)
        answer = await tool_run.ask(params)
        if answer is None:
            return ElicitationAnswer("cancel")
        content = dict(answer.content) if answer.action == "accept" and answer.content else None
        return ElicitationAnswer(answer.action, content)

    return hook
