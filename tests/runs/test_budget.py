"""Budgets on real agents: a run over budget fails with ``error_code: budget``."""

from __future__ import annotations

from typing import Any

import pytest

from acp_bridge.errors import ConfigError
from tests.runs.conftest import RunsEnv


def test_demo_agent_over_max_tokens_fails_with_budget(runs: RunsEnv) -> None:
    # The demo agent reports usage only in its prompt reply (5 tokens for this prompt), so the
    # turn cannot be cut short; the run still fails, and keeps its answer as partial output.
    result = runs.demo("Reply with exactly OK", max_tokens=4).wait_sync(timeout=30)
    assert result is not None and result.status == "failed", result
    assert result.meta.error_code == "budget" and result.output == "OK"
    assert "max_tokens is 4" in result.error
    assert "reported as the turn ended" in result.error


def test_usage_mid_turn_over_max_cost_cancels_the_turn(runs: RunsEnv) -> None:
    # This agent reports a cost of 0.5 mid-turn, then would wait 30 s for a cancel: the run
    # ending at all within the wait below shows the turn was cancelled.
    runs.usage_agent_config()
    handle = runs.start("acp_spawn", "anything", "usage", max_cost=0.1)
    result = handle.wait_sync(timeout=20)
    assert result is not None and result.status == "failed", result
    assert result.meta.error_code == "budget" and "max_cost is 0.1" in result.error
    assert result.output == "partial answer"
    assert handle.record().cost == 0.5
    assert "usage" in [item.event.kind for item in handle.events_sync()]


def test_a_group_shares_one_total(runs: RunsEnv) -> None:
    first = runs.demo(group="fan-out", group_max_tokens=8)
    assert first.wait_sync(timeout=30).status == "done"  # type: ignore[union-attr]  # 5 of 8
    # The group's budget is stored: later runs of the group need not repeat it.
    result = runs.demo(group="fan-out").wait_sync(timeout=30)  # 10 of 8
    assert result is not None and result.meta.error_code == "budget", result
    assert "group 'fan-out' budget exceeded" in result.error
    result = runs.demo(group="fan-out").wait_sync(timeout=30)
    assert result is not None and result.meta.error_code == "budget", result
    assert "used up before this run started" in result.error


@pytest.mark.parametrize(
    "options",
    [{"max_tokens": 10**30}, {"max_cost": 1e300}, {"group": "g", "group_max_tokens": 2**63}],
)
def test_a_budget_the_store_cannot_keep_is_refused_before_anything_starts(
    runs: RunsEnv, options: dict[str, Any]
) -> None:
    with pytest.raises(ConfigError, match=r"must be a (whole )?number"):
        runs.bash("true", **options)
    assert not runs.db.exists() or runs.store().active() == []


def test_a_run_over_its_budget_is_stopped_at_once_whatever_it_does_with_its_cancel(
    runs: RunsEnv,
) -> None:
    # The agent reports a cost growing by 1 every 20 ms and ignores its cancel and SIGTERM:
    # a graceful cancel would let it spend through the grace (30 s) before being cut off.
    runs.usage_agent_config()
    handle = runs.start("acp_spawn", "spend 1", "usage", max_cost=3)
    result = handle.wait_sync(timeout=20)
    assert result is not None and result.meta.error_code == "budget", result
    assert handle.record().cost <= 3 + 1  # what it reported before the first report over


def test_runs_of_a_group_overshoot_by_at_most_one_report_each(runs: RunsEnv) -> None:
    """Six runs of one group, all spending at once: the group's total may go over by what
    each run reports after the others' last report (here 1 each), never through a grace."""
    runs.usage_agent_config()
    handles = [
        runs.start("acp_spawn", "spend 1", "usage", group="six", group_max_cost=10)
        for _ in range(6)
    ]
    results = [handle.wait_sync(timeout=30) for handle in handles]
    assert all(r is not None and r.meta.error_code == "budget" for r in results), results
    spent = sum(handle.record().cost or 0 for handle in handles)
    assert spent <= 10 + 6 * 1, spent
