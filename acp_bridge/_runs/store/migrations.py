"""The run store's SQLite schema and its migrations.

The schema version is SQLite's ``user_version``. Each entry of :data:`MIGRATIONS` takes the
database from version *i* to *i + 1*; :func:`migrate` applies the missing ones in one
``BEGIN IMMEDIATE`` transaction, so many processes opening a fresh store at once migrate it
exactly once. A store written by a newer acp-bridge is refused rather than misread.
"""

from __future__ import annotations

import sqlite3

_V1 = """
CREATE TABLE runs (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,  -- creation order: FIFO of the lanes
    id               TEXT NOT NULL UNIQUE,               -- the envelope's task_id, sub_ + 12 hex
    entry            TEXT NOT NULL,                      -- acp_spawn | spawn | bash
    agent            TEXT,                               -- profile name (acp_spawn)
    task             TEXT NOT NULL,                      -- prompt or command
    cwd              TEXT NOT NULL,                      -- the run's working directory
    caller_cwd       TEXT NOT NULL,                      -- where the caller was (config search)
    spec             TEXT NOT NULL,                      -- JSON: {"args": [...], "kwargs": {...}}
    config_path      TEXT,
    status           TEXT NOT NULL CHECK (status IN
                         ('queued', 'running', 'done', 'failed', 'cancelled', 'lost')),
    lane             TEXT NOT NULL,
    group_name       TEXT,
    created_at       REAL NOT NULL,                      -- Unix time
    started_at       REAL,
    ended_at         REAL,
    supervisor_pid   INTEGER,
    supervisor_start INTEGER,                            -- /proc/PID/stat field 22
    supervisor_boot  TEXT,                               -- /proc/sys/kernel/random/boot_id
    env_key          TEXT NOT NULL,                      -- digest of the caller's environment
    session_id       TEXT,
    transcript       TEXT,
    max_tokens       INTEGER,
    max_cost         REAL,
    tokens           INTEGER NOT NULL DEFAULT 0,         -- usage so far (budgets, groups)
    cost             REAL NOT NULL DEFAULT 0,
    stop_requested   REAL,                               -- when someone asked it to stop
    events_count     INTEGER NOT NULL DEFAULT 0,
    events_dropped   INTEGER NOT NULL DEFAULT 0,
    summary          TEXT NOT NULL DEFAULT '',
    error_code       TEXT,
    envelope         TEXT                                -- JSON, set with the final status
);
CREATE INDEX runs_active ON runs (lane, seq) WHERE status IN ('queued', 'running');
CREATE INDEX runs_ended ON runs (ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX runs_group ON runs (group_name) WHERE group_name IS NOT NULL;

CREATE TABLE events (
    run_id TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    event  TEXT NOT NULL,                                -- JSON of one Event
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- Process groups a run's supervisor started (agents, commands, terminals), by leader.
CREATE TABLE run_groups (
    run_id      TEXT NOT NULL,
    pgid        INTEGER NOT NULL,
    leader_start INTEGER NOT NULL,
    boot        TEXT NOT NULL,
    PRIMARY KEY (run_id, pgid)
) WITHOUT ROWID;

-- Wakeups: abstract unix datagram sockets of processes waiting for a run to change
-- (named ``wakeups`` since v6).
CREATE TABLE bells (
    name   TEXT NOT NULL,
    run_id TEXT NOT NULL,
    pid    INTEGER NOT NULL,
    PRIMARY KEY (run_id, name)
) WITHOUT ROWID;

-- max_concurrent per lane; the lane '*' is the global limit (runs.max_concurrent).
CREATE TABLE limits (
    lane           TEXT PRIMARY KEY,
    max_concurrent INTEGER NOT NULL CHECK (max_concurrent > 0)
);

-- Budgets shared by every run of a group.
CREATE TABLE groups (
    name       TEXT PRIMARY KEY,
    max_tokens INTEGER,
    max_cost   REAL
);

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

# v2: every run of every entry is recorded. A foreground run (a caller waiting for its
# envelope) records itself as running, run by the caller's own process; it never waits
# in a lane, and lanes do not count it. ``spec`` now holds the EntryRequest (JSON) that the
# supervisor runs; a run queued under v1 fails with config_error when it starts.
_V2 = """
ALTER TABLE runs ADD COLUMN detached INTEGER NOT NULL DEFAULT 1;
"""

# v3: follow-up turns (see session_chains.py and ``_runs/held_agents.py``). A run may
# continue another run's ACP session (``follows``: `acp-bridge send`), belong to a named
# session (``run --session NAME``), and keep its agent alive after its turn for the next one
# (``held_until``: its supervisor holds the agent process, and the lane slot, until then).
_V3 = """
ALTER TABLE runs ADD COLUMN follows TEXT;
ALTER TABLE runs ADD COLUMN session_name TEXT;
ALTER TABLE runs ADD COLUMN held_until REAL;
CREATE INDEX runs_follows ON runs (follows) WHERE follows IS NOT NULL;
CREATE INDEX runs_session ON runs (session_name, seq) WHERE session_name IS NOT NULL;
CREATE INDEX runs_held ON runs (held_until) WHERE held_until IS NOT NULL;
"""

# v4: the supervisors that take new runs (issue 24; ``accepting_supervisors`` since v6). A
# supervisor runs several detached runs of one environment at once; while it takes new ones
# it is listed here, and a starter hands it a run in the insert's own transaction, only
# while the row stands. The supervisor leaves the table in the transaction that finds
# nothing of its own queued, running or held (see supervisors.py).
# And the active runs in queue order straight from an index: every look at the lanes (each
# run's end, each claim), ``ps`` and the liveness check read them, and with the old index
# (lane first) SQLite scanned the whole table instead — 10 000 ended runs, envelopes and all.
_V4 = """
DROP INDEX runs_active;
CREATE INDEX runs_active ON runs (seq) WHERE status IN ('queued', 'running');
CREATE TABLE runners (
    pid     INTEGER NOT NULL,
    start   INTEGER NOT NULL,                            -- /proc/PID/stat field 22
    boot    TEXT NOT NULL,
    env_key TEXT NOT NULL,                               -- the environment of the runs it takes
    PRIMARY KEY (pid, start, boot)
) WITHOUT ROWID;
CREATE INDEX runners_env ON runners (env_key);
"""

# v5: an ended run's ``ps --json`` object, stored once as JSON text (see listing.py); any
# later change to a column it shows clears it, and that row is made afresh by each reader.
# The column list is records.DICT_COLUMNS (a test holds them equal).
_V5 = """
ALTER TABLE runs ADD COLUMN listing TEXT;
CREATE TRIGGER runs_listing_stale AFTER UPDATE OF
    id, entry, agent, task, cwd, status, lane, group_name, created_at, started_at, ended_at,
    supervisor_pid, session_id, transcript, summary, error_code, tokens, cost, events_count,
    detached, follows, session_name, held_until
    ON runs WHEN old.listing IS NOT NULL
    BEGIN UPDATE runs SET listing = NULL WHERE seq = new.seq; END
"""

# v6: names that say what they hold (issue 32): the supervisors listed as taking new runs,
# the wakeups waiting on runs, and the idle time of a supervisor (config key
# ``runs.supervisor_idle``, once ``runs.runner_idle``). Same columns, same rows.
_V6 = """
DROP INDEX runners_env;
ALTER TABLE runners RENAME TO accepting_supervisors;
CREATE INDEX accepting_supervisors_env ON accepting_supervisors (env_key);
ALTER TABLE bells RENAME TO wakeups;
UPDATE settings SET key = 'supervisor_idle' WHERE key = 'runner_idle';
"""

# v7: ``ps --json`` reads the stored texts from an index of their own (issue 36): the column
# comes after the envelope, so reading it walked every row's envelope first (19 000 runs:
# 0.3 s of SQLite; 0.09 s from the index, for a store ~30% larger).
_V7 = """
CREATE INDEX runs_listing ON runs (seq, listing);
"""

# v8: the batch or comparison a run belongs to (issue 35): ``batch_<hex>`` for a batch's
# task, ``cmp_<hex>`` for a comparison's attempt, made once per call, so the viewer finds a
# batch's runs from an index instead of reading every envelope's ``meta.batch``. And what a
# comparison decided (the winner, why, the verifiers): it lives in no run's envelope.
_V8 = """
ALTER TABLE runs ADD COLUMN batch_id TEXT;
CREATE INDEX runs_batch ON runs (batch_id, seq) WHERE batch_id IS NOT NULL;
CREATE TABLE comparisons (
    id         TEXT PRIMARY KEY,                         -- cmp_ + 12 hex, the runs' batch_id
    created_at REAL NOT NULL,
    result     TEXT NOT NULL                             -- JSON: compare --json's document
);
"""

MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8)
VERSION = len(MIGRATIONS)


def migrate(db: sqlite3.Connection, where: str) -> None:
    """Bring the store at ``where`` to :data:`VERSION` (no-op when it is there already)."""
    if _version(db) == VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        current = _version(db)  # again, under the lock: another process may have done it
        _refuse_newer(current, where)
        for script in MIGRATIONS[current:]:
            for statement in script.split(";\n"):
                if statement.strip():
                    db.execute(statement)
        if current < 5:  # the runs that ended before v5 get their stored listing too
            from acp_bridge._runs.store.listing import backfill

            backfill(db)
        db.execute(f"PRAGMA user_version = {VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _refuse_newer(current: int, where: str) -> None:
    if current > VERSION:
        # Imported here: a queued run's supervisor opens the store and must start light.
        from acp_bridge.errors import ConfigError

        raise ConfigError(
            f"{where}: run store schema version {current} is newer than this acp-bridge "
            f"understands ({VERSION}); upgrade acp-bridge or use another store"
        )


def _version(db: sqlite3.Connection) -> int:
    row = db.execute("PRAGMA user_version").fetchone()
    return int(row[0])
