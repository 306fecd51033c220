"""``acp-bridge mcp`` over stdio, as hosts run it today: one server, the official ``mcp``
client on the 2025 handshake protocol (questions to the host go mid-call). The 2026-07-28
protocol and HTTP are in test_http.py; the allowlist and the depth limit in test_limits.py."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from acp_bridge.envelope import SubtaskResult
from tests.mcp import scenarios
from tests.mcp.conftest import SECRET, Bridge, bounded, server_pids, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def client(bridge: Bridge) -> AsyncIterator[Client]:
    async with bridge.client(bridge.stdio(), "legacy") as client:
        assert client.protocol_version == "2025-11-25"
        yield client


@pytest.fixture
def nothing_left(bridge: Bridge) -> Iterator[None]:
    """After the test, only the server itself may still run."""
    yield
    assert not bridge.leftovers(server_pids(bridge.marker)), "processes left behind"


async def test_lists_the_tools_with_ready_profiles_and_the_envelope_schema(client: Client) -> None:
    await scenarios.lists_the_tools(client)


async def test_acp_spawn_returns_the_envelope(client: Client, nothing_left: None) -> None:
    await scenarios.acp_spawn_returns_the_envelope(client)


async def test_bash_runs_one_command_as_a_subtask(client: Client, nothing_left: None) -> None:
    async with bounded():
        result = await client.call_tool("bash", {"command": "echo from-bash; exit 3"})
    envelope = SubtaskResult.model_validate(result.structured_content)
    assert envelope.output_schema == "subtask.bash.result.v1"
    assert (envelope.output["exit_code"], envelope.output["stdout"]) == (3, "from-bash\n")
    assert result.is_error and envelope.error == "bash exited with code 3"


@pytest.mark.parametrize(
    ("tool", "arguments", "field", "says"),
    [
        ("acp_spawn", {"task": "hi"}, "agent", "Field required"),
        ("acp_spawn", {"agent": "nobody", "task": "hi"}, "agent", "no profile 'nobody'; ready: "),
        ("acp_spawn", {"agent": "demo", "task": "hi", "colour": "red"}, "colour", "unknown"),
        ("acp_spawn", {"agent": "demo", "task": "hi", "timeout": "soon"}, "timeout", "number"),
        ("acp_spawn", {"agent": "demo", "task": ""}, "task", "at least 1 character"),
        ("acp_spawn", {"agent": "demo", "task": "x", "observe_profile": "loud"}, "observe_profile",
         "'default'"),
        # What exec and chdir cannot take is refused, not an internal error mid-run.
        ("acp_spawn", {"agent": "demo", "task": "x", "cwd": "/tmp\0x"}, "cwd", "NUL byte"),
        ("bash", {"command": "echo a\0b"}, "command", "cannot contain a NUL byte"),
        ("bash", {"command": "pwd", "cwd": "/" + "a" * 300}, "cwd", "a name longer than 255"),
        ("start", {"agent": "demo", "task": "x", "max_tokens": 10**30}, "max_tokens", "less than"),
        ("start", {"entry": "bash", "task": "echo a\0b"}, "task", "cannot contain a NUL byte"),
        ("status", {"task_id": "x" * 100_000}, "task_id", "at most 64 characters"),
    ],
)  # fmt: skip
async def test_bad_arguments_get_an_error_naming_the_field(
    client: Client,
    tool: str,
    arguments: dict[str, Any],
    field: str,
    says: str,
    nothing_left: None,
) -> None:
    with pytest.raises(MCPError) as caught:
        async with bounded():
            await client.call_tool(tool, arguments)
    error = caught.value
    assert error.code == types.INVALID_PARAMS
    assert error.message.startswith(f"{tool}: {field}: ")
    assert says in error.message
    assert len(error.message) < 1000  # a huge argument is not echoed back
    (problem,) = error.data["problems"]
    assert problem["field"] == field


@pytest.mark.parametrize("decision", ["allow", None])
async def test_an_ask_rule_is_answered_through_elicitation(
    bridge: Bridge, client: Client, decision: str | None, nothing_left: None
) -> None:
    await scenarios.an_ask_is_answered_through_elicitation(bridge, client, decision)


async def test_the_agents_own_question_goes_to_the_host(
    bridge: Bridge, client: Client, nothing_left: None
) -> None:
    await scenarios.the_agents_own_question_goes_to_the_host(bridge, client)


async def test_progress_arrives_during_a_long_run_and_a_host_cancel_stops_it(
    bridge: Bridge, client: Client, nothing_left: None
) -> None:
    await scenarios.progress_arrives_and_a_host_cancel_stops_the_run(bridge, client)


async def test_start_then_wait_status_and_list(client: Client, nothing_left: None) -> None:
    await scenarios.start_then_wait_status_and_list(client)


async def test_stop_ends_a_background_run_cancelled(client: Client, nothing_left: None) -> None:
    await scenarios.stop_ends_a_background_run_cancelled(client)


async def test_a_background_run_keeps_to_its_budget(client: Client, nothing_left: None) -> None:
    arguments = {"agent": "demo", "task": "Reply with exactly OVER", "max_tokens": 1}
    async with bounded():
        started = await client.call_tool("start", arguments)
        assert started.structured_content is not None
        task_id = started.structured_content["task_id"]
        waited = await client.call_tool("wait", {"task_id": task_id, "timeout": 60})
    run = waited.structured_content
    assert run is not None and run["status"] == "failed"
    assert run["envelope"]["meta"]["error_code"] == "budget"


async def test_send_is_the_next_turn_in_a_background_runs_session(
    client: Client, nothing_left: None
) -> None:
    async with bounded():
        started = await client.call_tool("start", {"agent": "demo", "task": "remember KIWI"})
        assert started.structured_content is not None
        task_id = started.structured_content["task_id"]
        first = await client.call_tool("wait", {"task_id": task_id, "timeout": 60})
        sent = await client.call_tool("send", {"task_id": task_id, "text": "recall", "wait": 60})
    assert first.structured_content and first.structured_content["status"] == "done"
    run = sent.structured_content
    assert run is not None and run["status"] == "done" and run["task_id"] != task_id
    envelope = SubtaskResult.model_validate(run["envelope"])
    assert envelope.output == "KIWI"  # the agent remembered: the same session, resumed
    assert envelope.meta.session_id == first.structured_content["session_id"]
    assert text_of(sent).startswith(f"{run['task_id']}: done KIWI")


@pytest.mark.parametrize(("tool", "more"), [("status", {}), ("send", {"text": "more"})])
async def test_an_unknown_run_is_a_clear_error(
    client: Client, tool: str, more: dict[str, str]
) -> None:
    with pytest.raises(MCPError) as caught:
        await client.call_tool(tool, {"task_id": "sub_000000000000", **more})
    assert caught.value.message.startswith(f"{tool}: task_id: no run 'sub_000000000000'")


async def test_the_profiles_secrets_are_hidden_in_what_the_bridge_reports(
    client: Client, nothing_left: None
) -> None:
    """The agent names its API token (an unknown update kind, a path it may not write): the
    envelope's meta says what happened, the token hidden, as in the transcript."""
    async with bounded():
        result = await client.call_tool("acp_spawn", {"agent": "leaky", "task": "go"})
    envelope = SubtaskResult.model_validate(result.structured_content)
    meta = envelope.meta.model_dump_json()
    assert SECRET not in meta
    assert "[REDACTED]" in " ".join(envelope.meta.warnings or [])
    assert [r.target for r in envelope.meta.refusals or []] == ["/[REDACTED]"]


async def test_a_chatty_runs_events_are_merged_into_a_few_progress_lines(
    client: Client, nothing_left: None
) -> None:
    """wait replays a run's events from the start: 2000 message chunks were 2000 progress
    notifications (a finished run's wait took seconds to return); they merge, as a
    synchronous call's do."""
    async with bounded():
        started = await client.call_tool("start", {"agent": "chatty", "task": "go"})
        task_id = started.structured_content["task_id"]
        await client.call_tool("wait", {"task_id": task_id})
    lines: list[str] = []

    async def on_progress(number: float, total: float | None, message: str | None) -> None:
        lines.append(message or "")

    async with bounded(10):
        ended = await client.call_tool("wait", {"task_id": task_id}, progress_callback=on_progress)
    assert ended.structured_content["status"] == "done"
    assert any(line.startswith("agent: ") for line in lines)
    assert len(lines) < 50, len(lines)


async def test_compare_picks_the_attempt_that_passes_the_verifier(
    client: Client, tmp_path: Path, nothing_left: None
) -> None:
    repo = one_commit(tmp_path / "repo")
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    schema = tools["compare"].input_schema
    assert {"demo", "writer"} <= set(schema["properties"]["agents"]["items"]["enum"])
    assert schema["required"] == ["agents", "task"]
    assert "isolation" not in schema["properties"] and "n" in schema["properties"]
    arguments = {
        "agents": ["demo", "writer"], "task": "Reply with exactly DONE", "cwd": str(repo),
        "verify": "test -f expected.txt", "apply": True,
    }  # fmt: skip
    async with bounded(90):
        result = await client.call_tool("compare", arguments)
    document = result.structured_content
    assert document is not None and not result.is_error
    demo, writer = document["attempts"]
    assert (demo["verifier"]["passed"], writer["verifier"]["passed"]) == (False, True)
    assert document["winner"] == writer["task_id"]
    assert document["apply"]["applied"] and (repo / "expected.txt").is_file()
    assert f"winner: writer#1 ({writer['task_id']})" in text_of(result)
    with pytest.raises(MCPError) as caught:  # the tree is dirty now: refused, nothing runs
        async with bounded():
            await client.call_tool("compare", arguments)
    assert caught.value.code == types.INVALID_PARAMS
    assert "expected.txt" in caught.value.message


def one_commit(repo: Path) -> Path:
    """A git repository with one commit."""
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("the project\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    return repo
