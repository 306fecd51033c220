"""The comparison as people read it: a table of the attempts, the winner and why, the
budget, what apply did, its id. The CLI prints it on stderr; the MCP tool sends it as its text.
"""

from __future__ import annotations

from acp_bridge._compare.compare_result import AttemptResult, CompareResult

COLUMNS = ("  AGENT", "#", "STATUS", "VERIFIER", "WALL", "TOKENS", "COST", "FILES", "+/-")


def table(result: CompareResult) -> list[str]:
    """The comparison for people: a row per attempt, then the winner and why."""
    rows = [list(COLUMNS)]
    for attempt in result.attempts:
        mark = "* " if attempt.task_id == result.winner else "  "
        rows.append(
            [
                mark + attempt.agent,
                str(attempt.attempt),
                status_of(attempt),
                verifier_of(attempt),
                wall_of(attempt),
                "-" if attempt.tokens is None else str(attempt.tokens),
                "-" if attempt.cost is None else f"{attempt.cost:g}",
                str(attempt.files),
                "-" if attempt.lines is None else f"+{attempt.added} -{attempt.removed}",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]  # fmt: skip
    winning = result.winning
    if winning is not None:
        lines.append(f"winner: {winning.key} ({winning.task_id}): {result.reason}")
    else:
        lines.append(f"no winner: {result.reason}")
    if result.budget is not None and result.budget.exceeded:
        lines.append(f"budget: {result.budget.exceeded}")
    if result.apply is not None:
        lines.append(_applied(result))
    lines += [f"warning: {warning}" for warning in result.warnings]
    if result.id:  # where a person looks at it again (acp-bridge ui)
        lines.append(f"comparison {result.id}: acp-bridge ui shows it at /comparisons/{result.id}")
    return lines


def _applied(result: CompareResult) -> str:
    applied = result.apply
    assert applied is not None
    if applied.error:
        return f"not applied: {applied.error}"
    files = ", ".join(applied.files)
    if applied.dry_run:
        return f"dry run: the patch would change {files}"
    return f"applied to {result.repository}: {files}"


def status_of(attempt: AttemptResult) -> str:
    if attempt.envelope.ok:
        return "done"
    return f"failed ({attempt.envelope.meta.error_code})"


def verifier_of(attempt: AttemptResult) -> str:
    return "-" if attempt.verifier is None else attempt.verifier.shown


def wall_of(attempt: AttemptResult) -> str:
    return "-" if attempt.wall_ms is None else f"{attempt.wall_ms / 1000:.1f}s"
