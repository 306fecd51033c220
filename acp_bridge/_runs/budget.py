"""Budgets: ``max_tokens`` and ``max_cost`` per run, and totals shared by a group of runs.

What is counted: the figures the agent reports. During a turn that is the ``usage`` event
(ACP ``usage_update``: ``used`` context tokens as ``context_used``, ``cost`` as
``{"amount", "currency"}``); at the end of a turn the prompt reply's token counts, which land
in the envelope's ``meta.usage`` (``total_tokens``, or ``input_tokens + output_tokens``).
Tokens are the largest of these seen so far (they only grow within a session); cost is the
reported amount (ACP reports the session's cumulative cost). The tokens the agent's child
sessions report (``subagent_tokens``, see ``_acp/turn/subagents.py``) are added. Currencies are
not converted: ``max_cost`` is in whatever currency the agent reports.

When: at every usage event the supervisor compares the run's figures with its own budget, and
its figures plus every other run of its group (as last written to the store) with the group's.
Exceeded: the turn is cancelled and the run fails with ``error_code: "budget"``, keeping its
partial output. An agent that reports usage only when the turn ends (the bundled demo agent
does) cannot be stopped mid-turn; its run still fails with ``budget`` when the final figures
are over. A group whose total is already spent refuses new runs before they start. Runs of a
group running at the same moment can overshoot the group total by what they use between two
usage updates; the store has no way to reserve tokens an agent has not reported yet.

What the other runs of a group spent is what they last reported: runs of this process are read
live (:data:`LIVE`), the others as last written to the store (every ~50 ms while they run). A
run over a budget is stopped without grace (see ``supervisor/active_run.py``), so the overshoot
is what each run reports after the others' last report, whatever an agent does with a cancel.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from acp_bridge._os.limits import MAX_COST, MAX_TOKENS
from acp_bridge._records.frozen import FrozenRecord
from acp_bridge.errors import ConfigError


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:40]}…"  # 10**10000 has 10 001 digits


class Budget(FrozenRecord):
    """Limits on what one run, or one group of runs, may use. None: no limit."""

    # A frozen record, not a frozen dataclass: a dataclass compiles its generated methods
    # from source when its module loads, on every start-up's path (~3 M instructions).
    max_tokens: int | None
    max_cost: float | None
    _compared = __slots__ = ("max_tokens", "max_cost")

    def __init__(self, max_tokens: int | None = None, max_cost: float | None = None) -> None:
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
            or not 0 < max_tokens <= MAX_TOKENS
        ):  # fmt: skip
            raise ConfigError(
                f"max_tokens must be a whole number from 1 to {MAX_TOKENS}, got "
                f"{_shown(max_tokens)}"
            )  # the store keeps 64-bit integers: a larger one could not even be recorded
        if max_cost is not None and not (
            isinstance(max_cost, int | float) and not isinstance(max_cost, bool)
            and math.isfinite(max_cost) and 0 < max_cost <= MAX_COST
        ):  # fmt: skip
            raise ConfigError(
                f"max_cost must be a number above 0, at most {MAX_COST:g}, got {_shown(max_cost)}"
            )
        object.__setattr__(self, "max_tokens", max_tokens)  # frozen: set once, here
        object.__setattr__(self, "max_cost", max_cost)

    @property
    def limited(self) -> bool:
        return self.max_tokens is not None or self.max_cost is not None


def _number(value: Any) -> float | None:
    """A figure from 0 to MAX_TOKENS, else None: nothing the store's 64-bit integers or
    ``float()`` cannot take (``meta.usage`` of an older record may hold anything)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value <= MAX_TOKENS else None


def usage_figures(usage: Mapping[str, Any]) -> tuple[int | None, float | None]:
    """Tokens and cost in a ``usage`` event or a ``meta.usage`` mapping (None: not reported)."""
    tokens = _number(usage.get("total_tokens"))
    if tokens is None:
        parts = [_number(usage.get(k)) for k in ("input_tokens", "output_tokens")]
        known = [p for p in parts if p is not None]
        tokens = sum(known) if known else None
    context = _number(usage.get("context_used"))
    if context is not None:
        tokens = context if tokens is None else max(tokens, context)
    children = _number(usage.get("subagent_tokens"))  # the agent's child sessions count too
    if children is not None:
        tokens = children if tokens is None else tokens + children
    raw_cost = usage.get("cost")
    cost = _number(raw_cost.get("amount")) if isinstance(raw_cost, Mapping) else _number(raw_cost)
    return (None if tokens is None else int(tokens)), cost


def _over(used: float, limit: float | None) -> bool:
    return limit is not None and used > limit


LIVE: dict[str, dict[str, BudgetGuard]] = {}
"""The guards of the runs of this process that are running now, by group and run id: their
figures are newer than what the store holds (written in batches)."""


class BudgetGuard:
    """Tracks one run's usage against its budget and its group's."""

    def __init__(
        self,
        budget: Budget,
        *,
        group: str | None = None,
        group_budget: Budget | None = None,
        spent_by_others: Callable[[], tuple[int, float]] = lambda: (0, 0.0),
    ) -> None:
        self.budget = budget
        self.group = group
        self.group_budget = group_budget or Budget()
        self._spent_by_others = spent_by_others
        self.tokens = 0
        self.cost = 0.0

    def observe(self, usage: Mapping[str, Any]) -> str | None:
        """Take in reported figures; a one-line reason when a budget is now exceeded."""
        tokens, cost = usage_figures(usage)
        if tokens is not None:
            self.tokens = max(self.tokens, tokens)
        if cost is not None:
            self.cost = max(self.cost, cost)
        return self.exceeded()

    def exceeded(self) -> str | None:
        run = self.budget
        if _over(self.tokens, run.max_tokens):
            return f"budget exceeded: used {self.tokens} tokens, max_tokens is {run.max_tokens}"
        if _over(self.cost, run.max_cost):
            return f"budget exceeded: cost {self.cost:g}, max_cost is {run.max_cost:g}"
        if not self.group_budget.limited:
            return None
        other_tokens, other_cost = self._spent_by_others()
        tokens, cost = self.tokens + other_tokens, self.cost + other_cost
        group = self.group_budget
        if _over(tokens, group.max_tokens):
            return (
                f"group {self.group!r} budget exceeded: {tokens} tokens in all, "
                f"max_tokens is {group.max_tokens}"
            )
        if _over(cost, group.max_cost):
            return (
                f"group {self.group!r} budget exceeded: cost {cost:g}, "
                f"max_cost is {group.max_cost:g}"
            )
        return None

    def spent_before_start(self) -> str | None:
        """Why a new run of the group may not even start (its total is used up), or None."""
        if not self.group_budget.limited:
            return None
        tokens, cost = self._spent_by_others()
        group = self.group_budget
        if group.max_tokens is not None and tokens >= group.max_tokens:
            return (
                f"group {self.group!r} budget used up before this run started: {tokens} tokens, "
                f"max_tokens is {group.max_tokens}"
            )
        if group.max_cost is not None and cost >= group.max_cost:
            return (
                f"group {self.group!r} budget used up before this run started: cost {cost:g}, "
                f"max_cost is {group.max_cost:g}"
            )
        return None


def live_siblings(group: str, run_id: str) -> dict[str, BudgetGuard]:
    """The other runs of ``group`` running in this process now, by id."""
    return {other: guard for other, guard in LIVE.get(group, {}).items() if other != run_id}


def join_live(group: str | None, run_id: str, guard: BudgetGuard) -> None:
    """``run_id`` runs in this process: its group's other runs read its figures live."""
    if group is not None:
        LIVE.setdefault(group, {})[run_id] = guard


def leave_live(group: str | None, run_id: str) -> None:
    if group is not None and group in LIVE:
        LIVE[group].pop(run_id, None)
        if not LIVE[group]:
            del LIVE[group]
