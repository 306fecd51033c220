"""Envelopes the run layer writes itself, as JSON data.

Most envelopes come from the entry a supervisor ran. These are for runs the entry never
finished: lost (the supervisor died), stopped while queued, refused by a group budget before
starting, or over budget after the fact. They follow the SubtaskResult contract (DESIGN §2):
the seven stable keys, ``meta`` with ``entry``, ``agent`` and ``error_code``, and for ``bash``
the ``subtask.bash.result.v1`` output (exit code -1: no exit status is known).

Plain dicts rather than :class:`~acp_bridge.envelope.SubtaskResult`, on purpose: any reader
(``ps``, ``wait``) may have to write a ``lost`` envelope, and importing pydantic would triple
its start-up; and ``meta.error_code`` here can be ``lost`` or ``budget``, which
:class:`~acp_bridge.errors.ErrorCode` does not list yet, so the model would refuse them.
"""

from __future__ import annotations

import copy
from typing import Any

from acp_bridge._runs.records import Run, RunStatus

LOST = "lost"
BUDGET = "budget"
CANCELLED = "cancelled"

SUMMARY_LIMIT = 160  # the envelope contract's summary length (acp_bridge.envelope)
BASH_RESULT_SCHEMA = "subtask.bash.result.v1"
UNKNOWN_EXIT = -1


def _clip(text: str, limit: int = SUMMARY_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def failed(run: Run, error: str, code: str) -> dict[str, Any]:
    """A failed envelope for ``run`` that its entry never produced."""
    error = _one_line(error) or f"failed ({code})"
    meta: dict[str, Any] = {"entry": run.entry, "error_code": code}
    if run.agent:
        meta["agent"] = run.agent
    if run.session_id:
        meta["session_id"] = run.session_id
    if run.transcript:
        meta["transcript"] = run.transcript
    envelope: dict[str, Any] = {
        "task_id": run.id,
        "status": "failed",
        "summary": _clip(f"failed: {error}"),
        "output_kind": "text",
        "output_schema": "",
        "output": "",
        "error": error,
        "meta": meta,
    }
    if run.entry == "bash":
        envelope["output_kind"] = "json"
        envelope["output_schema"] = BASH_RESULT_SCHEMA
        envelope["output"] = {
            "exit_code": UNKNOWN_EXIT,
            "stdout_truncated": False,
            "stderr_truncated": False,
            "stdout": "",
            "stderr": "",
        }
    return envelope


def over_budget(envelope: dict[str, Any], error: str) -> dict[str, Any]:
    """An entry's envelope turned into a ``budget`` failure; its output (partial or whole)
    is kept, as for any failure."""
    result = copy.copy(envelope)
    error = _one_line(error)
    result["status"] = "failed"
    result["error"] = error
    result["summary"] = _clip(f"failed: {error}")
    result["meta"] = {**envelope.get("meta", {}), "error_code": BUDGET}
    return result


def run_status(envelope: dict[str, Any], *, stopped: bool) -> RunStatus:
    """The run's status for the envelope it ended with: ``cancelled`` only when someone asked
    the run to stop and it ended cancelled (an agent may cancel a turn on its own)."""
    if envelope.get("status") == "done":
        return "done"
    code = envelope.get("meta", {}).get("error_code")
    if code == LOST:
        return "lost"
    if code == CANCELLED and stopped:
        return "cancelled"
    return "failed"


def error_code(envelope: dict[str, Any]) -> str | None:
    code = envelope.get("meta", {}).get("error_code")
    return None if code is None else str(code)
