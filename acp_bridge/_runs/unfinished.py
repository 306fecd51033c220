"""Envelopes the run layer writes itself, and how an envelope maps to a run's status.

Most envelopes come from the entry a supervisor ran. These are for runs the entry never
finished: lost (the supervisor died), stopped while queued, refused by a group budget before
starting, or over budget after the fact. They are real
:class:`~acp_bridge.envelope.SubtaskResult` envelopes, built by the envelope module's own
``failed`` (docs/explanation/envelope.md): ``meta`` with ``entry``, ``agent`` and ``error_code``,
and for ``bash`` the ``subtask.bash.result.v1`` output (exit code -1: no exit status is known).

Importing this module loads pydantic (~0.1 s): the readers that may have to write such an
envelope (``ps``, ``wait`` finding a lost run, ``stop`` of a queued run) import it only then.
"""

from __future__ import annotations

from typing import cast

from acp_bridge._os.process.proc import Identity
from acp_bridge._runs.store import lanes
from acp_bridge._runs.store.run_records import Outcome, RunRecord, RunStatus
from acp_bridge._runs.store.run_store import Store
from acp_bridge._runs.wakeups import wake
from acp_bridge.envelope import BASH_RESULT_SCHEMA, Entry, Meta, SubtaskResult
from acp_bridge.envelope import failed as failed_envelope
from acp_bridge.errors import ErrorCode

UNKNOWN_EXIT = -1


def run_failed(run: RunRecord, error: str, code: ErrorCode) -> SubtaskResult:
    """A failed envelope for ``run`` that its entry never produced."""
    meta = Meta(
        entry=cast(Entry, run.entry),
        agent=run.agent,
        session_id=run.session_id,
        transcript=run.transcript,
    )
    if run.entry != "bash":
        return failed_envelope(error, code, task_id=run.id, meta=meta)
    output = {
        "exit_code": UNKNOWN_EXIT,
        "stdout_truncated": False,
        "stderr_truncated": False,
        "stdout": "",
        "stderr": "",
    }
    return failed_envelope(
        error,
        code,
        task_id=run.id,
        meta=meta,
        output=output,
        output_kind="json",
        output_schema=BASH_RESULT_SCHEMA,
    )


def over_budget(result: SubtaskResult, error: str) -> SubtaskResult:
    """An entry's envelope turned into a ``budget`` failure; its output (partial or whole)
    is kept, as for any failure."""
    return failed_envelope(
        error,
        ErrorCode.BUDGET,
        task_id=result.task_id,
        meta=result.meta,
        output=result.output,
        output_kind=result.output_kind,
        output_schema=result.output_schema,
    )


def not_continued(result: SubtaskResult, follows: str) -> SubtaskResult:
    """The envelope of a follow-up whose own supervisor could not continue the session of
    run ``follows`` (no agent held): the error says so first, then why."""
    error = (
        f"follow-up of run {follows}: no live agent holds its session, so the session has to "
        f"be resumed or loaded, and that failed: {result.error}"
    )
    code = result.meta.error_code or ErrorCode.AGENT_ERROR
    return failed_envelope(
        error, code, task_id=result.task_id, meta=result.meta, output=result.output,
        output_kind=result.output_kind, output_schema=result.output_schema,
    )  # fmt: skip


def run_status(result: SubtaskResult, *, stopped: bool) -> RunStatus:
    """The run's status for the envelope it ended with: ``cancelled`` only when someone asked
    the run to stop and it ended cancelled (an agent may cancel a turn on its own)."""
    if result.status == "done":
        return "done"
    code = result.meta.error_code
    if code == ErrorCode.LOST:
        return "lost"
    if code == ErrorCode.CANCELLED and stopped:
        return "cancelled"
    return "failed"


def outcome(
    result: SubtaskResult,
    *,
    stopped: bool = False,
    tokens: int | None = None,
    cost: float | None = None,
) -> Outcome:
    """How a run ended, for the store: its status, and the envelope as JSON data."""
    meta = result.meta
    return Outcome(
        status=run_status(result, stopped=stopped),
        envelope=result.to_dict(),
        summary=result.summary,
        error_code=None if meta.error_code is None else meta.error_code.value,
        session_id=meta.session_id,
        transcript=meta.transcript,
        tokens=tokens,
        cost=cost,
    )


def ended(run: RunRecord, error: str, code: ErrorCode, *, stopped: bool = False) -> Outcome:
    """The outcome of a run that ends without its entry: :func:`run_failed`, as stored."""
    return outcome(run_failed(run, error, code), stopped=stopped)


def end_runs(store: Store, me: Identity, run_ids: list[str], why: str, *, stopped: bool) -> None:
    """Record ``run_ids`` (ours, their entries not run to the end) as ended: cancelled
    when ``stopped``, else failed with ``internal_error``."""
    code = ErrorCode.CANCELLED if stopped else ErrorCode.INTERNAL_ERROR
    written = []
    for run_id in run_ids:
        run = store.get(run_id)
        if run is None:
            continue
        outcome = ended(run, why, code, stopped=stopped)
        with store.write() as db:
            if store.finish(db, run_id, outcome, supervisor=me):
                written.append(run_id)
    if written:
        wake(store, [*written, *lanes.heads(store)])
