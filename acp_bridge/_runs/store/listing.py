"""``ps --json`` rows kept as JSON text: made once when a run ends, read back as they are.

``ps --json`` of 10 000 runs spent ~60 ms of its ~150 fetching 23 values a row, making a
dict of each row and encoding it. An ended run's row no longer changes, so its JSON object is
made once, in the transaction that ends it (:func:`write_listing`, column ``listing``), and
``ps`` joins the stored texts (:func:`json_texts`): one value a row.

A stored text is exactly what ``ps`` would make of the row now, or there is none:

- it is :func:`~.run_records.row_to_dict` of the row through ``json.dumps`` (compact, UTF-8
  kept), which writes what the CLI's encoder (orjson) writes, character for character — except a
  float under 1e-4 (``1e-05`` against ``0.00001``) or one that is not finite: a row holding
  such a float gets no stored text (a test checks the two encoders agree on the rest);
- a later change to any column it shows clears it (the trigger ``runs_listing_stale`` of
  migration v5, on the columns of :data:`~.run_records.DICT_COLUMNS`): a hold released, a
  late event count. A row without a stored text (queued and running runs, those) is made
  live through the caller's encoder, in the same read transaction as the stored ones.

What a terminal must not receive is escaped in the whole output, as before
(``cli/_safe_text.py``): the stored text is plain JSON.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from acp_bridge._runs.store.run_records import DICT_COLUMNS, row_to_dict

_ACTIVE = "status IN ('queued', 'running')"
SMALLEST_PLAIN_FLOAT = 1e-4
"""json and orjson spell every finite float from here up (and 0) the same way."""


def listing_text(row: Sequence[Any]) -> str | None:
    """The ``ps --json`` object of a row of :data:`DICT_COLUMNS` as JSON text, or None when
    the two encoders could spell one of its floats differently."""
    for value in row:
        if type(value) is float and not _plain(value):
            return None
    return json.dumps(row_to_dict(row), ensure_ascii=False, separators=(",", ":"))


def _plain(value: float) -> bool:
    return value == 0 or (math.isfinite(value) and abs(value) >= SMALLEST_PLAIN_FLOAT)


def write_listing(db: sqlite3.Connection, run_id: str) -> None:
    """Inside the write transaction that ended ``run_id``: store its ``ps --json`` object,
    from the row as that transaction left it."""
    row = db.execute(f"SELECT {DICT_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is not None:
        db.execute("UPDATE runs SET listing = ? WHERE id = ?", (listing_text(row), run_id))


def backfill(db: sqlite3.Connection) -> None:
    """Stored texts for the ended runs of a store that had none (migration v5)."""
    rows = db.execute(f"SELECT seq, {DICT_COLUMNS} FROM runs WHERE NOT {_ACTIVE}").fetchall()
    db.executemany(
        "UPDATE runs SET listing = ? WHERE seq = ?", [(listing_text(r[1:]), r[0]) for r in rows]
    )


def json_texts(
    db: sqlite3.Connection,
    encode: Callable[[dict[str, Any]], str],
    *,
    active_only: bool = False,
    limit: int | None = None,
) -> list[str]:
    """Each run's ``ps --json`` object as JSON text, newest first: the stored text, else the
    row's :func:`~.run_records.row_to_dict` through ``encode``."""
    where = f" WHERE {_ACTIVE}" if active_only else ""
    bound = "" if limit is None else f" LIMIT {int(limit)}"
    db.execute("BEGIN")  # one snapshot for both reads: the live rows are the ones without
    try:
        query = f"SELECT listing FROM runs{where} ORDER BY seq DESC{bound}"
        stored: list[str | None] = [row[0] for row in db.execute(query).fetchall()]
        missing = stored.count(None)
        if not missing:
            return stored  # type: ignore[return-value]  # no None in it
        # The rows without a text, in the same order: the first `missing` of them.
        live = f"{where} AND listing IS NULL" if where else " WHERE listing IS NULL"
        query = f"SELECT {DICT_COLUMNS} FROM runs{live} ORDER BY seq DESC LIMIT {missing}"
        made = iter([encode(row_to_dict(row)) for row in db.execute(query).fetchall()])
        return [text if text is not None else next(made) for text in stored]
    finally:
        db.execute("COMMIT")
