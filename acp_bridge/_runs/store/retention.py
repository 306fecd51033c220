"""Pruning the run store: by age and by count, never an active run (and a comparison's
decision with the last of its attempts).

The retention setting lives in the store (``settings``: ``retention_days``, default 30, and
``retention_keep``, default unlimited; the config's ``runs.retention``) so every process
prunes alike; supervisors and foreground runs prune by it at most once an hour (``acp-bridge
prune`` does it on demand). Deleting
is chunked into short transactions: a store with long event logs must not hold the write lock
for seconds while fifty supervisors wait to write.
"""

from __future__ import annotations

import contextlib
import time

from acp_bridge._runs.store import session_chains
from acp_bridge._runs.store.run_store import Store

DEFAULT_DAYS = 30.0
AUTO_PRUNE_EVERY = 3600.0
_CHUNK = 100


def retention(store: Store) -> tuple[float | None, int | None]:
    """The store's retention setting: days after ending, and how many ended runs are kept
    (None: no limit of that kind). Written from the config's ``runs.retention`` by every
    start (see :mod:`.rules`)."""
    days, keep = store.setting("retention_days"), store.setting("retention_keep")
    return (
        DEFAULT_DAYS if days is None else (None if days == "none" else float(days)),
        None if keep in (None, "none") else int(keep),
    )


def prune(
    store: Store,
    *,
    older_than_days: float | None = None,
    keep: int | None = None,
    now: float | None = None,
) -> list[str]:
    """Delete ended runs that ended over ``older_than_days`` ago or are beyond the newest
    ``keep``, with their events; both None: the store's retention setting. Returns their ids.
    Spared: a run whose agent is held, and the runs a queued or running follow-up continues
    (:func:`~acp_bridge._runs.store.session_chains.in_use`)."""
    if older_than_days is None and keep is None:
        older_than_days, keep = retention(store)
    now = time.time() if now is None else now
    ended = "status IN ('done', 'failed', 'cancelled', 'lost')"
    doomed: set[str] = set()
    if older_than_days is not None:
        cutoff = now - older_than_days * 86400
        rows = store.db.execute(f"SELECT id FROM runs WHERE {ended} AND ended_at < ?", (cutoff,))
        doomed.update(run_id for (run_id,) in rows)
    if keep is not None:
        rows = store.db.execute(
            f"SELECT id FROM runs WHERE {ended} ORDER BY seq DESC LIMIT -1 OFFSET ?", (keep,)
        )
        doomed.update(run_id for (run_id,) in rows)
    candidates = sorted(doomed)
    ids: list[str] = []
    for start in range(0, len(candidates), _CHUNK):
        with store.write() as db:
            # Checked under the lock: a held run, and the runs a waiting follow-up continues.
            spared = session_chains.in_use(db)
            chunk = [
                (run_id,) for run_id in candidates[start : start + _CHUNK] if run_id not in spared
            ]
            for table in ("events", "run_groups", "wakeups"):
                db.executemany(f"DELETE FROM {table} WHERE run_id = ?", chunk)
            # Checked again under the lock: only ended runs, whatever happened meanwhile.
            db.executemany(f"DELETE FROM runs WHERE id = ? AND {ended}", chunk)
        ids.extend(run_id for (run_id,) in chunk)
    if ids:
        with store.write() as db:
            # A comparison's decision goes with the last of its attempts (issue 35).
            db.execute(
                "DELETE FROM comparisons WHERE NOT EXISTS"
                " (SELECT 1 FROM runs WHERE runs.batch_id = comparisons.id)"
            )
    for run_id in ids:
        with contextlib.suppress(OSError):
            (store.logs_dir / f"{run_id}.log").unlink(missing_ok=True)
    store.set_setting("last_prune", repr(now))
    return ids


def maybe_prune(store: Store) -> None:
    """:func:`prune` by the retention setting, if nobody did in the last hour."""
    last = store.setting("last_prune")
    if last is None or time.time() - float(last) > AUTO_PRUNE_EVERY:
        prune(store)
