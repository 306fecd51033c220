"""What the run store holds, as Python values: a run, a run to create, how a run ended.

Kept apart from :mod:`acp_bridge._runs.store.run_store` so readers of runs (``ps``, ``wait``) and
the store itself share one definition, and no pydantic is needed to look at a run. Named tuples, not
dataclasses: ``dataclasses`` (with ``inspect``) is a tenth of a queued supervisor's start-up, and a
run may wait in the queue behind hundreds of others.
"""

import json
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, cast

from acp_bridge._os.process.proc import Identity

RunStatus = Literal["queued", "running", "done", "failed", "cancelled", "lost"]
"""Where a run stands: ``queued``, ``running``, then ``done``, ``failed``, ``cancelled`` or
``lost`` (the process that ran it died without recording an envelope)."""
ACTIVE: tuple[RunStatus, ...] = ("queued", "running")
FINAL: tuple[RunStatus, ...] = ("done", "failed", "cancelled", "lost")

LIST_COLUMNS = (
    "id, entry, agent, task, cwd, status, lane, group_name, created_at, started_at, ended_at, "
    "supervisor_pid, supervisor_start, supervisor_boot, session_id, transcript, summary, "
    "error_code, tokens, cost, max_tokens, max_cost, stop_requested, events_count, seq, env_key, "
    "detached, follows, session_name, held_until"
)
FULL_COLUMNS = LIST_COLUMNS + ", caller_cwd, spec, config_path, envelope"
DICT_COLUMNS = (
    "id, entry, agent, task, cwd, status, lane, group_name, created_at, started_at, ended_at, "
    "supervisor_pid, session_id, transcript, summary, error_code, tokens, cost, events_count, "
    "detached, follows, session_name, held_until"
)
"""What :func:`row_to_dict` reads: fetching a value costs, and ps fetches 10 000 rows."""
TABLE_COLUMNS = (
    "id, status, entry, detached, agent, group_name, created_at, started_at, ended_at, "
    f"CASE WHEN status IN ({', '.join(repr(status) for status in FINAL)}) AND summary <> '' "
    "THEN summary ELSE task END"
)
"""What ``ps``'s table shows of a run (its summary once it ended, else its task): its rows
are these values as they are, no record made (100 000 runs took ~5 s with records)."""


class RunRecord(NamedTuple):
    """One run as the store knows it. Listings leave the heavy columns (request, envelope)
    out."""

    id: str
    entry: str
    agent: str | None
    task: str
    cwd: str
    status: RunStatus
    lane: str
    group: str | None
    created_at: float
    started_at: float | None
    ended_at: float | None
    supervisor: Identity | None
    session_id: str | None
    transcript: str | None
    summary: str
    error_code: str | None
    tokens: int
    cost: float
    max_tokens: int | None
    max_cost: float | None
    stop_requested: float | None
    events_count: int
    seq: int
    env_key: str
    detached: bool = True
    """False: a foreground call, run (and recorded) by its caller's process."""
    follows: str | None = None
    """The run whose ACP session this one continues (a follow-up turn)."""
    session_name: str | None = None
    held_until: float | None = None
    """Its supervisor keeps the agent alive for a follow-up turn until then (Unix time)."""
    caller_cwd: str = ""
    request: dict[str, Any] | None = None
    """The :class:`~acp_bridge.EntryRequest` of the run, as JSON data."""
    config_path: str | None = None
    envelope: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINAL

    def to_dict(self) -> dict[str, Any]:
        """The run as JSON data (``ps --json``, ``show``); the envelope when it was loaded."""
        data: dict[str, Any] = {
            "task_id": self.id,
            "status": self.status,
            "entry": self.entry,
            "agent": self.agent,
            "task": self.task,
            "cwd": self.cwd,
            "lane": self.lane,
            "group": self.group,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "supervisor_pid": self.supervisor.pid if self.supervisor else None,
            "session_id": self.session_id,
            "transcript": self.transcript,
            "summary": self.summary,
            "error_code": self.error_code,
            "usage": {"tokens": self.tokens, "cost": self.cost},
            "events": self.events_count,
            "detached": self.detached,
            "follows": self.follows,
            "session": self.session_name,
            "held_until": self.held_until,
        }
        if self.envelope is not None:
            data["envelope"] = self.envelope
        return data


def row_to_run(row: Sequence[Any]) -> RunRecord:
    """A row of :data:`LIST_COLUMNS` (or :data:`FULL_COLUMNS`), in that order, as a record.
    By position, not by name: ``ps`` decodes every row of the store (1000 in ~3 ms)."""
    (run_id, entry, agent, task, cwd, status, lane, group, created_at, started_at, ended_at,
     pid, start, boot, session_id, transcript, summary, error_code, tokens, cost, max_tokens,
     max_cost, stop_requested, events_count, seq, env_key, detached, follows, session_name,
     held_until, *full) = row  # fmt: skip
    caller_cwd, spec, config_path, envelope = full if full else ("", None, None, None)
    return RunRecord(
        run_id, entry, agent, task, cwd, cast(RunStatus, status), lane, group, created_at,
        started_at, ended_at, None if pid is None else Identity(pid, start, boot), session_id,
        transcript, summary, error_code, tokens, cost, max_tokens, max_cost, stop_requested,
        events_count, seq, env_key, bool(detached), follows, session_name, held_until, caller_cwd,
        None if spec is None else json.loads(spec), config_path,
        json.loads(envelope) if envelope else None,
    )  # fmt: skip


def row_to_dict(row: Sequence[Any]) -> dict[str, Any]:
    """A row of :data:`DICT_COLUMNS` as :meth:`RunRecord.to_dict` gives it, without making
    the record: ``ps --json`` of 10 000 runs spends half its time on the records else."""
    (run_id, entry, agent, task, cwd, status, lane, group, created_at, started_at, ended_at,
     pid, session_id, transcript, summary, error_code, tokens, cost, events_count, detached,
     follows, session_name, held_until) = row  # fmt: skip
    return {
        "task_id": run_id, "status": status, "entry": entry, "agent": agent, "task": task,
        "cwd": cwd, "lane": lane, "group": group, "created_at": created_at,
        "started_at": started_at, "ended_at": ended_at, "supervisor_pid": pid,
        "session_id": session_id, "transcript": transcript, "summary": summary,
        "error_code": error_code, "usage": {"tokens": tokens, "cost": cost},
        "events": events_count, "detached": bool(detached), "follows": follows,
        "session": session_name, "held_until": held_until,
    }  # fmt: skip


class NewRun(NamedTuple):
    """What :meth:`Store.create` records for a run that is about to be queued."""

    id: str
    entry: str
    agent: str | None
    task: str
    cwd: str
    caller_cwd: str
    request: dict[str, Any]
    """The EntryRequest as JSON data (stored in the ``spec`` column)."""
    config_path: str | None
    lane: str
    group: str | None
    env_key: str
    max_tokens: int | None = None
    max_cost: float | None = None
    follows: str | None = None
    session_name: str | None = None
    batch_id: str | None = None
    """The batch (``batch_…``) or comparison (``cmp_…``) that made the run."""


class Outcome(NamedTuple):
    """How a run ended: written in one transaction with its final status."""

    status: RunStatus
    envelope: dict[str, Any]
    summary: str
    error_code: str | None
    session_id: str | None = None
    transcript: str | None = None
    tokens: int | None = None
    cost: float | None = None
