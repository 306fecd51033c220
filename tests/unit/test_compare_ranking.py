"""Which attempt wins, and the reason given: only done attempts (verified ones, when there is
a verifier) win; pick decides among them; ties go to the earlier attempt."""

from __future__ import annotations

from typing import Any

import pytest

from acp_bridge._compare.ranking import Standing, choose


def s(wall: int, *, done: bool = True, verified: bool | None = None, **figures: Any) -> Standing:
    return Standing(done=done, verified=verified, wall_ms=wall, **figures)


def test_only_an_attempt_that_passed_the_verifier_wins() -> None:
    standings = [s(100, verified=False), s(900, verified=True), s(50, done=False, verified=None)]
    assert choose(standings, "verified") == (1, "the only attempt that passed the verifier (0.9 s)")


def test_verified_takes_the_fastest_of_those_that_passed() -> None:
    standings = [s(900, verified=True), s(300, verified=True), s(100, verified=False)]
    index, reason = choose(standings, "verified")
    assert index == 1
    assert reason == "fastest of the 2 attempt(s) that passed the verifier (0.3 s)"


@pytest.mark.parametrize(
    ("standings", "reason"),
    [
        ([s(1, verified=False), s(2, done=False, verified=False)],
         "no attempt ended done and passed the verifier"),
        ([s(1, done=False), s(2, done=False)], "no attempt ended done"),
        ([], "no attempt ended done"),
    ],
)  # fmt: skip
def test_no_winner_says_why(standings: list[Standing], reason: str) -> None:
    assert choose(standings, "fastest") == (None, reason)


def test_cheapest_by_cost_then_tokens_then_time() -> None:
    by_cost = [s(100, cost=0.5, tokens=10), s(900, cost=0.2, tokens=99), s(50)]
    assert choose(by_cost, "cheapest") == (
        1,
        "cheapest of the 3 attempt(s) that ended done (cost 0.2)",
    )
    by_tokens = [s(100, tokens=30), s(900, tokens=20)]
    assert choose(by_tokens, "cheapest") == (
        1, "cheapest of the 2 attempt(s) that ended done (20 tokens; no agent reported a cost)"
    )  # fmt: skip
    unknown = [s(500), s(400)]
    index, reason = choose(unknown, "cheapest")
    assert index == 1 and "no agent reported tokens or cost" in reason


def test_smallest_by_lines_then_files_unknown_sizes_last() -> None:
    standings = [s(10, lines=None, files=1), s(20, lines=7, files=2), s(30, lines=7, files=1)]
    assert choose(standings, "smallest") == (
        2, "smallest change of the 3 attempt(s) that ended done (7 changed lines in 1 file(s))"
    )  # fmt: skip


def test_ties_go_to_the_earlier_attempt() -> None:
    assert choose([s(100), s(100), s(100)], "fastest")[0] == 0
    assert choose([s(100, lines=1), s(100, lines=1)], "smallest")[0] == 0
