"""One budget for a whole comparison: ``max_tokens`` / ``max_cost`` over all its attempts
together, judged as the run layer judges a group (:mod:`acp_bridge._runs.budget`).

When: as each attempt ends, with the figures its agent reported (the batch executor sends
envelopes back, not live usage). The attempt whose figures take the total past a limit fails
with ``error_code: budget`` (its output kept), and every attempt still running is cancelled
and fails the same way, as does every attempt not yet started. Attempts running side by side
can overshoot by what they use before one of them ends: no executor can reserve tokens an
agent has not reported yet.
"""

from __future__ import annotations

from acp_bridge._compare.compare_result import BudgetUse
from acp_bridge._runs.budget import Budget, BudgetGuard
from acp_bridge._runs.unfinished import over_budget
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ErrorCode

GROUP = "comparison"
"""The group's name in a budget message."""


class SharedBudget:
    """What the attempts of one comparison used, against its limits."""

    def __init__(self, max_tokens: int | None, max_cost: float | None) -> None:
        self.budget = Budget(max_tokens, max_cost)
        self.tokens = 0
        self.cost = 0.0
        self.exceeded = ""
        """Why the comparison's budget stopped it (empty: it did not)."""

    def judge(self, envelope: SubtaskResult) -> SubtaskResult:
        """``envelope`` as the budget makes it: its usage counted; a ``budget`` failure if
        it took the total past a limit, or was cancelled or never started because an
        earlier one did."""
        guard = BudgetGuard(
            Budget(), group=GROUP, group_budget=self.budget, spent_by_others=self._spent
        )
        reason = guard.observe(envelope.meta.usage or {})
        self.tokens += guard.tokens
        self.cost += guard.cost
        if reason:
            self.exceeded = self.exceeded or reason
            return over_budget(envelope, reason)
        if self.exceeded and envelope.meta.error_code == ErrorCode.CANCELLED:
            return over_budget(envelope, f"stopped: {self.exceeded}")
        return envelope

    def _spent(self) -> tuple[int, float]:
        return self.tokens, self.cost

    def use(self) -> BudgetUse | None:
        """The budget and its use (None: the comparison had none)."""
        if not self.budget.limited:
            return None
        return BudgetUse(
            max_tokens=self.budget.max_tokens,
            max_cost=self.budget.max_cost,
            tokens=self.tokens,
            cost=self.cost,
            exceeded=self.exceeded,
        )
