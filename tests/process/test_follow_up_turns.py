"""acp_spawn's follow-up turns (``follow_ups``): one live session, several runs, each turn
with its own envelope and deadline (the run layer's held agents build on this)."""

from __future__ import annotations

import anyio

from acp_bridge._entries.acp_spawn.live_turns import FollowUp, Held
from acp_bridge.envelope import SubtaskResult
from acp_bridge.events import Event
from tests.conftest import AgentHarness


class Script:
    """A hook that hands over the given turns, one per call, and records what it saw."""

    def __init__(self, *turns: FollowUp) -> None:
        self.turns = list(turns)
        self.seen: list[SubtaskResult] = []
        self.time_left: list[float] = []

    async def __call__(self, result: SubtaskResult, held: Held) -> FollowUp | None:
        self.seen.append(result)
        self.time_left.append(held.until - anyio.current_time())
        return self.turns.pop(0) if self.turns else None


def test_each_turn_is_a_run_of_its_own_in_one_session(harness: AgentHarness) -> None:
    config = harness.config({"demo": {"timeouts": {"idle": 30}}})
    hook = Script(
        FollowUp("recall", task_id="sub_turn_two"),
        FollowUp("sleep 30", task_id="sub_turn_three", timeout=0.5),
    )
    events: list[Event] = []
    result = harness.run(
        "demo", "remember PINEAPPLE", config, task_id="sub_turn_one", follow_ups=hook,
        on_event=events.append,
    )  # fmt: skip
    first, second = hook.seen  # the third turn timed out: the session was not handed over
    assert (first.task_id, first.output) == ("sub_turn_one", "Remembered: PINEAPPLE")
    assert (second.task_id, second.output) == ("sub_turn_two", "PINEAPPLE")
    assert second.meta.session_id == first.meta.session_id
    assert second.meta.usage != first.meta.usage  # each turn's own figures
    assert all(0 < left <= 30 for left in hook.time_left)
    # The returned envelope is the last turn's, bounded by its own deadline.
    assert (result.task_id, result.meta.error_code) == ("sub_turn_three", "timeout")
    assert {event.task_id for event in events} == {"sub_turn_one", "sub_turn_two", "sub_turn_three"}


def test_without_an_idle_time_the_run_is_one_shot(harness: AgentHarness) -> None:
    config = harness.config({"demo": {}})  # timeouts.idle: 0, the default
    hook = Script(FollowUp("recall", task_id="sub_never"))
    result = harness.run("demo", "remember KIWI", config, follow_ups=hook)
    assert result.status == "done" and result.output == "Remembered: KIWI"
    assert hook.seen == []
