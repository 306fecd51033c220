"""The permission policy: modes, rules, the host hook, option choice, the ledger, cancel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp.schema import RequestPermissionResponse

from acp_bridge._acp.services.client import ClientServices
from acp_bridge._acp.services.permission_policy import PermissionPolicy, choose_option
from acp_bridge._acp.services.permissions import PermissionHook, PermissionQuestion
from acp_bridge._acp.turn.prompt_turn import TurnSignals
from acp_bridge._acp.turn.tool_calls import named_locations
from acp_bridge._acp.wire.schema import PermissionOption, RequestPermissionParams, ToolCallUpdate
from acp_bridge._os.fs.roots import Roots
from acp_bridge.config import AgentProfile, Permissions
from acp_bridge.events import Event, EventSink
from tests.helpers import serve

pytestmark = pytest.mark.anyio

OPTIONS = [
    {"optionId": "yes-always", "name": "Always", "kind": "allow_always"},
    {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
    {"optionId": "never", "name": "Never", "kind": "reject_always"},
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def roots(tmp_path: Path) -> Roots:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ref").mkdir()
    return Roots.for_session(tmp_path / "ws", [tmp_path / "ref"], [tmp_path / "ws"])


def request(
    kind: str | None, paths: list[str] = (), options: list[dict[str, Any]] = OPTIONS, **tool: Any
) -> RequestPermissionParams:  # type: ignore[assignment]
    return RequestPermissionParams.model_validate(
        {
            "sessionId": "s",
            "toolCall": {
                "toolCallId": "call_1",
                "title": tool.pop("title", "a tool"),
                "kind": kind,
                "locations": [{"path": p} for p in paths],
                **tool,
            },
            "options": options,
        }
    )


async def decide(policy: PermissionPolicy, params: RequestPermissionParams) -> str:
    reply, _record = await policy.answer(params)
    RequestPermissionResponse.model_validate(reply)  # the official schema is the oracle
    outcome = reply["outcome"]
    return outcome.get("optionId") or outcome["outcome"]


def policy(roots: Roots, mode: str = "workspace-write", **kwargs: Any) -> PermissionPolicy:
    rules = kwargs.pop("rules", [])
    return PermissionPolicy(Permissions(mode=mode, rules=rules), roots, **kwargs)  # type: ignore[arg-type]


# --- the modes ----------------------------------------------------------------------------------

INSIDE, READ_ONLY_ROOT, OUTSIDE = "{ws}/a.py", "{ref}/b.py", "/etc/passwd"
CASES = [
    # kind, locations, read-only, workspace-write
    ("read", [INSIDE], "yes", "yes"),
    ("read", [READ_ONLY_ROOT], "yes", "yes"),
    ("read", [OUTSIDE], "no", "no"),
    ("search", [], "yes", "yes"),
    ("think", [], "yes", "yes"),
    ("fetch", [], "yes", "yes"),
    ("edit", [INSIDE], "no", "yes"),
    ("edit", [INSIDE, OUTSIDE], "no", "no"),
    ("edit", [READ_ONLY_ROOT], "no", "no"),
    ("edit", [], "no", "no"),  # names nothing we could check
    ("delete", ["{ws}/../ws/../x"], "no", "no"),
    ("move", [INSIDE, "{ws}/b.py"], "no", "yes"),
    ("execute", [], "no", "no"),
    ("execute", [INSIDE], "no", "no"),
    ("switch_mode", [], "no", "yes"),
    ("other", [INSIDE], "no", "yes"),
    (None, [], "no", "no"),
]


@pytest.mark.parametrize(("kind", "paths", "read_only", "workspace_write"), CASES)
async def test_modes(
    roots: Roots, kind: str | None, paths: list[str], read_only: str, workspace_write: str
) -> None:
    ws, ref = roots.write[0], roots.read[0]
    spelled = [p.format(ws=ws, ref=ref) for p in paths]
    assert await decide(policy(roots, "read-only"), request(kind, spelled)) == read_only
    assert await decide(policy(roots), request(kind, spelled)) == workspace_write
    assert await decide(policy(roots, "approve-all"), request(kind, spelled)) == "yes"
    assert await decide(policy(roots, "deny-all"), request(kind, spelled)) == "no"


async def test_locations_come_from_diffs_and_raw_input_too(roots: Roots) -> None:
    ws = roots.write[0]
    # fast-agent names the file only in rawInput; gemini also in a diff.
    tool = ToolCallUpdate.model_validate(
        {
            "toolCallId": "c",
            "rawInput": {"path": "rel.txt", "file_path": f"{ws}/x.txt", "content": "…"},
            "content": [{"type": "diff", "path": "/etc/hosts", "newText": "x"}],
            "locations": [{"path": f"{ws}/x.txt"}],
        }
    )
    assert named_locations(tool, ws) == (f"{ws}/x.txt", "/etc/hosts", f"{ws}/rel.txt")
    sneaky = request("edit", [], rawInput={"path": "/etc/cron.d/evil"})
    assert await decide(policy(roots), sneaky) == "no"
    honest = request("edit", [], rawInput={"path": f"{ws}/ok.py"})
    assert await decide(policy(roots), honest) == "yes"
    # pydantic-acp's names of a location: each is checked like any other
    for key in ("filepath", "target_path", "destination_path", "source_path"):
        assert await decide(policy(roots), request("edit", [], rawInput={key: "/etc/x"})) == "no"
        inside = request("edit", [], rawInput={key: f"{ws}/x"})
        assert await decide(policy(roots), inside) == "yes"


@pytest.mark.parametrize(
    ("kind", "sandboxed"),
    [("edit", "yes"), ("delete", "yes"), ("move", "yes"), ("other", "no"), (None, "no"),
     ("execute", "no")],
)  # fmt: skip
async def test_a_file_change_that_names_no_location_is_held_by_the_sandbox(
    roots: Roots, kind: str | None, sandboxed: str
) -> None:
    """pydantic-acp's approved ``update_note(name, content)`` and kimi's ``Write`` name no
    path: under workspace-write they pass when the OS sandbox holds what the agent's own
    process writes, never without it, and the ledger says why either way."""
    note = request(kind, [], title="update_note", rawInput={"name": "todo", "content": "x"})
    for mode in ("bwrap", "landlock"):
        rules = policy(roots, sandbox=mode)
        assert await decide(rules, note) == sandboxed
        if sandboxed == "yes":
            assert f"allowed because the {mode} sandbox keeps" in rules.ledger.records[-1].reason
    rules = policy(roots)  # the sandbox off
    assert await decide(rules, note) == "no"
    reason = rules.ledger.records[-1].reason
    if kind != "execute":  # a command is refused for what it is, located or not
        assert "names no location to check" in reason and "a rule by its title or name" in reason
    assert await decide(policy(roots, "read-only", sandbox="bwrap"), note) == "no"
    # A location named is checked as ever, sandbox or not.
    outside = request(kind, ["/etc/passwd"], title="update_note")
    assert await decide(policy(roots, sandbox="bwrap"), outside) == "no"


# --- rules and the host hook --------------------------------------------------------------------


async def test_rules_come_first_and_the_first_match_wins(roots: Roots) -> None:
    rules = [
        {"kind": "execute", "title": "git *", "decision": "allow"},
        {"kind": "execute", "decision": "reject"},
        {"title": "*DANGER*", "decision": "reject"},
    ]
    checked = policy(roots, "approve-all", rules=rules)
    assert await decide(checked, request("execute", title="GIT status")) == "yes"
    assert await decide(checked, request("execute", title="rm -rf /")) == "no"
    assert await decide(checked, request("edit", title="a danger zone")) == "no"
    assert await decide(checked, request("edit", title="fine")) == "yes"
    assert checked.ledger.records[0].reason == "rule 1 (allow)"


async def test_ask_goes_to_the_host_hook(roots: Roots) -> None:
    asked: list[PermissionQuestion] = []

    async def hook(question: PermissionQuestion) -> bool:
        asked.append(question)
        return question.title == "ok"

    rules = [{"decision": "ask"}]
    checked = policy(roots, rules=rules, permission_hook=hook)
    assert await decide(checked, request("execute", title="ok")) == "yes"
    assert await decide(checked, request("execute", title="nope")) == "no"
    assert [q.title for q in asked] == ["ok", "nope"]
    assert asked[0].options[0].option_id == "yes-always"
    assert checked.ledger.records[1].reason == "rule 1 (ask): host rejected"


async def test_headless_ask_and_a_failing_hook_reject_and_say_why(roots: Roots) -> None:
    headless = policy(roots, rules=[{"decision": "ask"}])
    assert await decide(headless, request("edit")) == "no"
    assert "no host hook to ask (headless)" in headless.ledger.records[0].reason

    async def broken(question: PermissionQuestion) -> bool:
        raise RuntimeError("host bug")

    failing = policy(roots, rules=[{"decision": "ask"}], permission_hook=broken)
    assert await decide(failing, request("edit")) == "no"
    assert "host hook failed (RuntimeError)" in failing.ledger.records[0].reason


# --- option choice ------------------------------------------------------------------------------


def options(*kinds: str) -> tuple[PermissionOption, ...]:
    return tuple(PermissionOption(option_id=f"id-{k}", kind=k) for k in kinds)


def test_once_is_preferred_and_only_offered_options_are_chosen() -> None:
    offered = options("allow_always", "reject_always", "allow_once", "reject_once")
    assert choose_option(offered, True).option_id == "id-allow_once"  # type: ignore[union-attr]
    assert choose_option(offered, False).option_id == "id-reject_once"  # type: ignore[union-attr]
    assert choose_option(options("allow_always"), True).option_id == "id-allow_always"  # type: ignore[union-attr]
    assert choose_option(options("allow_once"), False) is None
    assert choose_option(options("proceed_once"), True) is None  # unknown kinds never match


async def test_without_an_allow_option_the_answer_is_no(roots: Roots) -> None:
    only_reject = [{"optionId": "r", "name": "Reject", "kind": "reject_once"}]
    checked = policy(roots, "approve-all")
    assert await decide(checked, request("edit", options=only_reject)) == "r"
    record = checked.ledger.records[0]
    assert record.decision == "rejected" and "no allow option offered" in record.reason
    # Nothing that means "no" either: the only refusal left is the cancelled outcome.
    only_allow = [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]
    denying = policy(roots, "deny-all")
    assert await decide(denying, request("edit", options=only_allow)) == "cancelled"
    assert denying.ledger.records[0].decision == "rejected"


# --- the ledger, the summary, cancel ------------------------------------------------------------


def services(
    tmp_path: Path, tg: Any, hook: PermissionHook | None = None, **profile: Any
) -> ClientServices:
    return ClientServices(
        AgentProfile(name="t", command="x", **profile),
        roots=Roots.for_session(tmp_path),
        cwd=tmp_path,
        env={},
        tg=tg,
        sink=EventSink(None),
        signals=TurnSignals(),
        permission_hook=hook,
    )


async def test_refusals_reach_the_summary_notes(tmp_path: Path) -> None:
    async with anyio.create_task_group() as tg:
        served = services(tmp_path, tg, permissions={"mode": "read-only"})
        assert served.summary_notes() == []
        await serve(served.request_permission, **request("edit").wire())
        await serve(served.request_permission, **request("execute").wire())
        params = {"sessionId": "s", "path": "/etc/hostname"}
        message = {"jsonrpc": "2.0", "id": 3, "method": "fs/read_text_file", "params": params}
        reply = await served.router().answer(message)
        assert reply is not None and "outside the read roots" in reply["error"]["message"]
        assert served.summary_notes() == [
            "2 permission requests refused",
            "1 file/terminal request refused",
        ]
        assert [r.decision for r in served.ledger.records] == ["rejected", "rejected"]


async def test_a_pending_request_is_answered_cancelled_when_the_turn_is(tmp_path: Path) -> None:
    started = anyio.Event()

    async def slow_host(question: PermissionQuestion) -> bool:
        started.set()
        await anyio.sleep(60)
        return True

    async with anyio.create_task_group() as tg:
        served = services(tmp_path, tg, slow_host, permissions={"rules": [{"decision": "ask"}]})
        replies: list[dict[str, Any]] = []
        answered = anyio.Event()

        async def ask() -> None:
            replies.append(await serve(served.request_permission, **request("edit").wire()))
            answered.set()

        with anyio.fail_after(5):
            tg.start_soon(ask)
            await started.wait()
            served.signals.cancelled.set()
            await answered.wait()
        assert replies == [{"outcome": {"outcome": "cancelled"}}]
        assert served.ledger.records[-1].decision == "cancelled"
        # And one that arrives after the cancel is answered at once.
        assert await serve(served.request_permission, **request("edit").wire()) == replies[0]


async def test_concurrent_requests_are_decided_and_reported_each_for_its_own_tool_call(
    tmp_path: Path,
) -> None:
    """Two requests pending at once, answered in the opposite order: every reply, ledger
    record and event names its own tool call (not whichever was decided last)."""
    release = {"first": anyio.Event(), "second": anyio.Event()}

    async def host(question: PermissionQuestion) -> bool:
        await release[question.tool_call_id].wait()
        return question.tool_call_id == "first"

    events: list[Event] = []
    async with anyio.create_task_group() as tg:
        served = services(tmp_path, tg, host, permissions={"rules": [{"decision": "ask"}]})
        served.sink = EventSink(events.append, task_id="sub_x")
        replies: dict[str, Any] = {}

        async def ask(call_id: str) -> None:
            params = request("edit", toolCallId=call_id).wire()
            replies[call_id] = await serve(served.request_permission, **params)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as asking:
                asking.start_soon(ask, "first")
                asking.start_soon(ask, "second")
                await anyio.wait_all_tasks_blocked()
                release["second"].set()
                await anyio.wait_all_tasks_blocked()
                release["first"].set()
    assert replies["first"]["outcome"]["optionId"] == "yes"
    assert replies["second"]["outcome"]["optionId"] == "no"
    assert [(r.tool_call_id, r.decision) for r in served.ledger.records] == [
        ("second", "rejected"),
        ("first", "allowed"),
    ]
    assert [(e.data["tool_call_id"], e.data["decision"]) for e in events] == [
        ("second", "rejected"),
        ("first", "allowed"),
    ]
