"""How the viewer's templates show a run's values: times, durations, a batch task's
placement, the page of its batch or comparison; and the Jinja2 environment that has them
as filters, autoescape on for every template (whatever an agent wrote is shown as text)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import jinja2

from acp_bridge._runs.store.run_records import RunRecord


def _when(value: float | None) -> str:
    if value is None:
        return "-"
    return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _took(run: RunRecord) -> str:
    if run.started_at is None:
        return "-"
    seconds = max(0.0, (run.ended_at or time.time()) - run.started_at)
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{seconds % 3600 // 60:02.0f}m"


def _placement(batch: str | None) -> str:
    """A batch task's ``meta.batch`` (JSON text) as a person reads it: its key, its
    attempts when it was retried, whether it was interrupted."""
    if not batch:
        return "-"
    try:
        info = json.loads(batch)
    except ValueError:
        return "-"
    if not isinstance(info, dict):
        return "-"
    parts = [str(info.get("key") or info.get("index", "?"))]
    attempts = info.get("attempts")
    if isinstance(attempts, int) and attempts > 1:
        parts.append(f"{attempts} attempts")
    if info.get("interrupted"):
        parts.append("interrupted")
    return ", ".join(parts)


COMPARISON_PREFIX = "cmp_"
"""A ``batch_id`` of a comparison's attempts (a batch's begins ``batch_``)."""


def _group_url(batch_id: str) -> str:
    """The page of the batch or comparison ``batch_id``."""
    kind = "comparisons" if batch_id.startswith(COMPARISON_PREFIX) else "batches"
    return f"/{kind}/{quote(batch_id, safe='')}"


def _attempts(batch: str | None) -> str:
    """How many times a batch's task ran (``meta.batch.attempts``), or ``-``."""
    try:
        info = json.loads(batch) if batch else None
    except ValueError:
        return "-"
    attempts = info.get("attempts") if isinstance(info, dict) else None
    return str(attempts) if isinstance(attempts, int) else "-"


def environment(templates: Path) -> jinja2.Environment:
    """The templates' environment: autoescape on, and the filters above."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates),
        autoescape=True,  # every template, whatever its name: agent text is hostile
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["took"] = _took
    env.filters["placement"] = _placement
    env.filters["group_url"] = _group_url
    env.filters["attempts"] = _attempts
    return env
