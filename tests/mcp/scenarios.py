"""What a host does with ``acp-bridge mcp``, written once and run over each transport and
protocol era (test_stdio.py, test_http.py)."""

from __future__ import annotations

import json
import random

import anyio
import mcp.types as types
from mcp import Client

from acp_bridge.envelope import SubtaskResult
from tests.mcp.conftest import FORM, Bridge, bounded, text_of


async def lists_the_tools(client: Client) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(listed) == [
        "acp_spawn", "spawn", "bash", "compare", "start", "wait", "status", "list", "stop",
        "send",
    ]  # fmt: skip
    spawn = listed["acp_spawn"]
    agent = spawn.input_schema["properties"]["agent"]
    assert {"demo", "asker"} <= set(agent["enum"])
    assert "asker: demo, asking the host before commands" in agent["description"]
    assert spawn.input_schema["required"] == ["agent", "task"]
    assert spawn.input_schema["additionalProperties"] is False
    assert spawn.output_schema == SubtaskResult.model_json_schema(mode="serialization")
    wait = listed["wait"]
    assert wait.annotations is not None and wait.annotations.read_only_hint
    assert wait.output_schema is not None and "envelope" in wait.output_schema["properties"]


async def acp_spawn_returns_the_envelope(client: Client) -> SubtaskResult:
    async with bounded():
        result = await client.call_tool(
            "acp_spawn", {"agent": "demo", "task": "Reply with exactly PONG"}
        )
    envelope = SubtaskResult.model_validate(result.structured_content)
    assert (envelope.status, envelope.output) == ("done", "PONG")
    assert (envelope.meta.entry, envelope.meta.agent) == ("acp_spawn", "demo")
    assert envelope.meta.sandbox  # the OS sandbox, as for every entry
    assert not result.is_error
    assert text_of(result).startswith("PONG") and envelope.task_id in text_of(result)
    return envelope


async def an_ask_is_answered_through_elicitation(
    bridge: Bridge, client: Client, decision: str | None
) -> SubtaskResult:
    """The ``asker`` profile's ``ask`` rule for commands, answered by the host with
    ``decision`` (None: it declines)."""
    bridge.answers.decision = decision
    bridge.answers.asked.clear()
    async with bounded():
        result = await client.call_tool(
            "acp_spawn", {"agent": "asker", "task": "run echo asked-and-answered"}
        )
    (question,) = bridge.answers.asked
    assert isinstance(question, types.ElicitRequestFormParams)
    assert "asker asks permission: run echo asked-and-answered [execute]" in question.message
    field = question.requested_schema["properties"]["decision"]
    assert field["enum"] == ["allow", "allow-always", "reject"]
    assert field["default"] == "reject"
    envelope = SubtaskResult.model_validate(result.structured_content)
    (permission,) = envelope.meta.permissions or []
    if decision == "allow":
        assert (permission.decision, permission.option_id) == ("allowed", "allow")
        assert envelope.output.strip() == "asked-and-answered"
    else:  # declined: the safe default, and the summary says so
        assert (permission.decision, permission.option_id) == ("rejected", "reject")
        assert "1 permission request refused" in envelope.summary
    return envelope


async def the_agents_own_question_goes_to_the_host(bridge: Bridge, client: Client) -> None:
    """An ACP agent's elicitation (a form) is passed on to the host as it came, and the
    host's answer goes back to the agent."""
    bridge.answers.asked.clear()
    async with bounded():
        result = await client.call_tool("acp_spawn", {"agent": "questioner", "task": "go"})
    (question,) = bridge.answers.asked
    assert isinstance(question, types.ElicitRequestFormParams)
    assert question.message == "questioner asks: How bold?"
    assert question.requested_schema == FORM
    envelope = SubtaskResult.model_validate(result.structured_content)
    # The spy agent answers with the replies it got to its requests.
    assert json.loads(envelope.output) == [{"action": "accept", "content": {"strategy": "bold"}}]
    (record,) = envelope.meta.elicitations or []
    assert (record.mode, record.action, record.fields) == ("form", "accept", ["strategy"])


async def progress_arrives_and_a_host_cancel_stops_the_run(
    bridge: Bridge, client: Client, *, told: bool = True
) -> None:
    """A long run (the demo agent sleeps 30 s) reports progress while it goes; the host
    cancels the call mid-run; the agent is told (``session/cancel``, in the run's transcript)
    and the run ends ``cancelled``, which — where a message can still reach the host
    (``told``) — a log message says, since a cancelled call gets no reply."""
    seconds = f"30.{random.randrange(10**6, 10**7)}"  # this run's own, to find its transcript
    progress: list[str] = []
    sleeping = anyio.Event()

    async def on_progress(number: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")
        if (message or "").startswith(f"tool: sleep {seconds}"):
            sleeping.set()

    bridge.logs.clear()
    returned = False

    async def call() -> None:
        nonlocal returned
        await client.call_tool(
            "acp_spawn",
            {"agent": "demo", "task": f"sleep {seconds}"},
            progress_callback=on_progress,
        )
        returned = True

    async with bounded(), anyio.create_task_group() as tg:
        tg.start_soon(call)
        await sleeping.wait()  # mid-run: the agent sleeps, the call has not returned
        tg.cancel_scope.cancel()  # the client sends notifications/cancelled
    assert not returned
    assert progress[0].startswith("starting agent=demo")
    assert "prompting" in progress
    async with bounded():
        transcript = await _transcript_with(bridge, seconds, '"stopReason":"cancelled"')
    assert '"method":"session/cancel"' in transcript
    if told:
        async with bounded():
            while not (said := [str(m.data) for m in bridge.logs if "cancelled" in str(m.data)]):
                bridge.logged = anyio.Event()  # no await since the look: nothing slips by
                await bridge.logged.wait()
        assert "failed: the run was cancelled" in said[0]


async def start_then_wait_status_and_list(client: Client) -> None:
    async with bounded():
        started = await client.call_tool(
            "start", {"agent": "demo", "task": "Reply with exactly LATER"}
        )
    assert started.structured_content is not None
    task_id = started.structured_content["task_id"]
    assert started.structured_content["status"] == "queued"
    progress: list[str] = []

    async def on_progress(number: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with bounded():
        waited = await client.call_tool(
            "wait", {"task_id": task_id, "timeout": 60}, progress_callback=on_progress
        )
    run = waited.structured_content
    assert run is not None and run["status"] == "done"
    envelope = SubtaskResult.model_validate(run["envelope"])
    assert (envelope.task_id, envelope.output) == (task_id, "LATER")
    assert "prompting" in progress  # the run's events, replayed as progress
    async with bounded():
        status = await client.call_tool("status", {"task_id": task_id})
        listed = await client.call_tool("list", {"limit": 5})
    assert status.structured_content and status.structured_content["status"] == "done"
    assert listed.structured_content
    assert task_id in [run["task_id"] for run in listed.structured_content["runs"]]
    assert text_of(listed).startswith(f"{task_id}: done LATER")


async def stop_ends_a_background_run_cancelled(client: Client) -> None:
    async with bounded():
        started = await client.call_tool("start", {"agent": "demo", "task": "sleep 30"})
        assert started.structured_content is not None
        task_id = started.structured_content["task_id"]
        stopped = await client.call_tool("stop", {"task_id": task_id, "wait": 20})
    run = stopped.structured_content
    assert run is not None and run["status"] == "cancelled"
    assert run["envelope"]["meta"]["error_code"] == "cancelled"


async def _transcript_with(bridge: Bridge, *needles: str) -> str:
    """The text of the run transcript that holds every needle, once one does."""
    while True:
        for path in (bridge.root / "transcripts").glob("*.jsonl"):
            text = path.read_text()
            if all(needle in text for needle in needles):
                return text
        await anyio.sleep(0.05)  # the server writes it; nothing here to wait on
