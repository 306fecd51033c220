"""Budgets on real agents: a run over budget fails with ``error_code: budget``."""

from __future__ import annotations

import time

from acp_bridge._runs.budget import Budget
from acp_bridge._runs.handle import RunOptions, start_sync
from tests.runs.conftest import RunsEnv


def test_demo_agent_over_max_tokens_fails_with_budget(runs: RunsEnv) -> None:
    # The demo agent reports usage only in its prompt reply (5 tokens for this prompt), so the
    # turn cannot be cut short; the run still fails, and keeps its answer as partial output.
    handle = start_sync(
        "acp_spawn", "demo", "Reply with exactly OK", options=RunOptions(budget=Budget(4))
    )
    run = handle.wait_sync(timeout=30)
    assert run.status == "failed", run.envelope
    assert run.envelope is not None
    assert run.envelope["meta"]["error_code"] == "budget"
    assert run.envelope["output"] == "OK"
    assert "max_tokens is 4" in run.envelope["error"]
    assert "reported as the turn ended" in run.envelope["error"]


def test_usage_mid_turn_over_max_cost_cancels_the_turn(runs: RunsEnv) -> None:
    # This agent reports a cost of 0.5 mid-turn, then would wait 30 s for a cancel.
    options = RunOptions(budget=Budget(max_cost=0.1), config_path=runs.usage_agent_config())
    began = time.monotonic()
    handle = start_sync("acp_spawn", "usage", "anything", options=options)
    run = handle.wait_sync(timeout=20)
    assert run.status == "failed", run.envelope
    assert time.monotonic() - began < 15
    assert run.envelope is not None
    assert run.envelope["meta"]["error_code"] == "budget"
    assert "max_cost is 0.1" in run.envelope["error"]
    assert run.envelope["output"] == "partial answer"
    assert run.cost == 0.5
    kinds = [event["kind"] for event in handle.events_sync()]
    assert "usage" in kinds


def test_a_group_shares_one_total(runs: RunsEnv) -> None:
    group = RunOptions(group="fan-out", group_budget=Budget(max_tokens=8))
    first = start_sync("acp_spawn", "demo", "Reply with exactly OK", options=group)
    assert first.wait_sync(timeout=30).status == "done"  # 5 of 8
    # The group's budget is stored: later runs of the group need not repeat it.
    second = start_sync(
        "acp_spawn", "demo", "Reply with exactly OK", options=RunOptions(group="fan-out")
    )
    run = second.wait_sync(timeout=30)  # 10 of 8
    assert run.status == "failed" and run.error_code == "budget", run.envelope
    assert run.envelope is not None and "group 'fan-out' budget exceeded" in run.envelope["error"]
    third = start_sync("acp_spawn", "demo", "Reply with exactly OK", options=group)
    run = third.wait_sync(timeout=30)
    assert run.status == "failed" and run.error_code == "budget", run.envelope
    assert run.envelope is not None and "used up before this run started" in run.envelope["error"]
