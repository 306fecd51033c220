"""What ``compare`` returns: every attempt (its envelope, its verifier, its figures), the
winner's task id and why it won, the group budget's use, and what ``apply`` did. The same
data is the one JSON document ``acp-bridge compare --json`` prints and the MCP tool's
structured result.
"""

import json
from typing import Any

from pydantic import BaseModel, Field

from acp_bridge._compare.compare_options import Pick
from acp_bridge._compare.verifier import VerifierResult
from acp_bridge.envelope import SubtaskResult


class AttemptResult(BaseModel):
    """One attempt: an ``acp_spawn`` run of ``agent`` in its own worktree."""

    agent: str
    attempt: int = Field(description="1 … n for each agent")
    task_id: str
    status: str = Field(description="the envelope's: done or failed")
    envelope: SubtaskResult
    verifier: VerifierResult | None = Field(
        None, description="None: no verifier, or the run did not end done"
    )
    wall_ms: int | None = Field(None, description="the run's duration")
    tokens: int | None = None
    cost: float | None = None
    files: int = Field(0, description="files it changed")
    added: int | None = Field(None, description="lines added (None: no diff to count)")
    removed: int | None = None
    diff: str | None = Field(None, description="its diff, a file on this machine")
    worktree: str | None = Field(None, description="its worktree, when kept (--keep)")
    branch: str | None = None

    @property
    def key(self) -> str:
        return f"{self.agent}#{self.attempt}"

    @property
    def lines(self) -> int | None:
        return None if self.added is None or self.removed is None else self.added + self.removed


class ApplyResult(BaseModel):
    """What ``apply`` did with the winner's diff."""

    dry_run: bool
    applied: bool = Field(description="the diff is now in the working tree")
    files: list[str] = Field(default_factory=list, description="the files the diff changes")
    patch: str = Field("", description="with dry_run: the diff itself")
    error: str = Field("", description="why nothing was applied")


class BudgetUse(BaseModel):
    """The group budget of the comparison: its limits and what the attempts used."""

    max_tokens: int | None = None
    max_cost: float | None = None
    tokens: int = 0
    cost: float = 0.0
    exceeded: str = Field("", description="why it stopped the attempts still running")


class CompareResult(BaseModel):
    """The whole comparison."""

    id: str = Field("", description="cmp_ and 12 hex digits: every attempt's meta.batch.id")
    task: str
    agents: list[str]
    n: int
    verify: str | None
    pick: Pick
    repository: str = Field(description="the top of the caller's working tree")
    base: str = Field(description="the commit every attempt started from")
    attempts: list[AttemptResult]
    winner: str | None = Field(description="the winner's task id (None: no attempt may win)")
    reason: str = Field(description="why it won, or why none did")
    budget: BudgetUse | None = None
    apply: ApplyResult | None = None
    interrupted: bool = False
    warnings: list[str] = Field(default_factory=list)

    @property
    def winning(self) -> AttemptResult | None:
        return next((a for a in self.attempts if a.task_id == self.winner), None)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = self.model_dump(mode="json")
        for attempt, envelope in zip(data["attempts"], self.attempts, strict=True):
            attempt["envelope"] = envelope.envelope.to_dict()  # as every envelope is written
        return data

    def to_json(self, *, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)
