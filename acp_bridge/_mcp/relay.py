"""A tool run followed by one ``tools/call``: what it tells the host, and how the call ends.

While the run goes on, its events become progress notifications and its log lines log
messages; a question goes to the host as an elicitation mid-call (handshake protocols), or
ends this round with an ``input_required`` result whose ``request_state`` names the tool run
(2026-07-28; the host's next ``tools/call`` carries the answers and follows on). The call
ends with the envelope: structured content, plus a short text for hosts that read only text.

The host's cancellation (``notifications/cancelled``; on the 2026-07-28 protocol a dropped
HTTP request too) cancels the handler. On the handshake protocols over HTTP a dropped
connection is not a cancellation (the spec and the SDK say so): the run goes on, bounded by
its own timeout and the session's idle timeout (a background run's ``stop`` still works).
A cancellation becomes the run's graceful cancel — the agent is told and may answer, a command
is stopped — and the handler waits, bounded by ``STOP_GRACE``, for the run to end. A
cancelled request gets no reply (the protocol says so), so the run's end is told as a log
message where one can still reach the host: on stdio, and on the handshake protocols' own
channel over HTTP (2026-07-28 over HTTP has none left once the call's stream is closed).
"""

from __future__ import annotations

import json

import anyio
import mcp.types as types
from anyio.abc import TaskGroup

from acp_bridge._mcp.host import Host
from acp_bridge._mcp.tool_runs import Finished, Item, LogLine, Progress, Question, ToolRun
from acp_bridge.envelope import SubtaskResult

STOP_GRACE = 30.0
"""Seconds a run the host cancelled gets to end before the handler stops waiting (the run
still ends on its own: it is the server's, not the request's)."""
TEXT_LIMIT = 20_000
"""Characters of output in the text content (all of it is in the structured content)."""
LOGGER = "acp_bridge.mcp"


async def follow(tool_run: ToolRun, host: Host) -> types.CallToolResult | types.InputRequiredResult:
    """Follow ``tool_run`` on behalf of one call; its result for that call."""
    try:
        outcome = await _relay(tool_run, host)
    except anyio.get_cancelled_exc_class():
        await _host_cancelled(tool_run, host)
        raise
    if isinstance(outcome, list):
        return types.InputRequiredResult(
            input_requests={q.key: types.ElicitRequest(params=q.params) for q in outcome},
            request_state=tool_run.id,
        )
    tool_run.collected.set()
    return envelope_result(outcome.result)


async def _relay(tool_run: ToolRun, host: Host) -> Finished | list[Question]:
    """Deliver the tool run's items until it finishes, or (2026-07-28) it has questions."""
    outcome: Finished | list[Question] | None = None
    tool_run.following = True
    try:
        async with anyio.create_task_group() as asking:
            while outcome is None:
                outcome = await _deliver(tool_run, host, await tool_run.take(), asking)
            asking.cancel_scope.cancel()  # questions still open when it finished are moot
    finally:
        tool_run.following = False
    assert outcome is not None  # the loop ends only with one; a cancel raises instead
    return outcome


async def _deliver(
    tool_run: ToolRun, host: Host, items: list[Item], asking: TaskGroup
) -> Finished | list[Question] | None:
    """Deliver ``items``; how the call ends, if they end it."""
    questions: list[Question] = []
    for item in items:
        if isinstance(item, Progress):
            tool_run.progress += 1
            await host.progress(tool_run.progress, item.text)
        elif isinstance(item, LogLine):
            await host.log(item)
        elif isinstance(item, Finished):
            return item
        elif not item.answered.is_set():  # a question, not timed out meanwhile
            if host.can_request:
                asking.start_soon(_ask, tool_run, host, item)
            else:
                questions.append(item)
    for question in questions:
        question.sent = True
    return questions or None


async def _ask(tool_run: ToolRun, host: Host, question: Question) -> None:
    question.settle(await host.elicit(question.params, tool_run.ask_timeout))


async def _host_cancelled(tool_run: ToolRun, host: Host) -> None:
    tool_run.cancel.set()
    with anyio.CancelScope(shield=True):
        with anyio.move_on_after(STOP_GRACE):
            await tool_run.finished.wait()
        tool_run.collected.set()
        result = tool_run.result
        text = (
            f"{result.task_id}: the host cancelled the call; {result.summary}"
            if result is not None
            else f"the host cancelled the call; the run is still stopping after {STOP_GRACE:g}s"
        )
        # Not on the cancelled call's stream: over HTTP that is gone.
        await host.log(LogLine("notice", LOGGER, text), scoped=False)


def envelope_result(result: SubtaskResult) -> types.CallToolResult:
    """The envelope as a tool result: structured, and as text (summary, output, task id).
    ``isError`` when the run failed, so a host's model treats it as the failure it is."""
    lines = [result.summary]
    output = result.output
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    if text and text.strip() != result.summary:
        if len(text) > TEXT_LIMIT:
            more = len(text) - TEXT_LIMIT
            text = f"{text[:TEXT_LIMIT]}\n… ({more} more characters in the structured output)"
        lines += ["", text]
    lines += ["", f"task_id: {result.task_id}"]
    return types.CallToolResult(
        content=[types.TextContent(type="text", text="\n".join(lines))],
        structured_content=result.to_dict(),
        is_error=result.status == "failed",
    )
