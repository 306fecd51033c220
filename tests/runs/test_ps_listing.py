"""``ps --json`` from the JSON texts the store keeps for ended runs (listing.py): byte for
byte what making each row's dict and encoding the whole list gives, whatever the rows hold,
before and after a row changes, and for a store written before the texts were kept."""

from __future__ import annotations

import json
import random
import re
import sqlite3
import struct
from pathlib import Path

import orjson
import pytest

from acp_bridge._os.process import proc
from acp_bridge._runs.store import listing, migrations
from acp_bridge._runs.store.run_records import DICT_COLUMNS, NewRun, Outcome
from acp_bridge._runs.store.run_store import Store, close_stores
from acp_bridge.cli import main
from acp_bridge.cli._safe_text import compact_json_raw, compact_json_text, safe_json

Capture = pytest.CaptureFixture[str]

TEXTS = [
    "plain",
    'quote " and back\\slash, "comma":[] and %s %% {}',
    "c0 \x00\x01\x08\t\n\x0c\r\x1b[2J\x1f and del \x7f",
    "c1 \x85\x9b2J, bidi \u202eevil\u202c, tag \U000e0041, sep \u2028",
    "é ü 漢字 😀 \ufeff",
    "",
]


def new_run(n: int, text: str, *, group: str | None = None) -> NewRun:
    return NewRun(
        id=f"sub_{n:012x}", entry="acp_spawn", agent=f"agent {text}", task=f"task {text}",
        cwd=f"/tmp/{text}", caller_cwd="/", request={"entry": "acp_spawn"}, config_path=None,
        lane=f"agent:{text}", group=group, env_key="k",
    )  # fmt: skip


def fill(store: Store) -> None:
    """Queued, running, ended (every status) and foreground runs, holding every kind of text
    and of float the columns can: a cost under 1e-4 (the encoders spell it differently)."""
    me = proc.own_identity()
    costs = [0.0, 0.5, 1e-05, 123456.789, 2.5e-07, 1e16, 3.0]
    for n in range(40):
        text = TEXTS[n % len(TEXTS)]
        store.create(new_run(n, text, group=text or None), me, detached=n % 3 != 0)
        if n % 5 == 4:
            continue  # still queued or running
        status = ("done", "failed", "cancelled", "lost")[n % 4]
        outcome = Outcome(
            status, {"status": status}, f"summary {text}", None if n % 2 else f"code {text}",
            session_id=f"session {text}", transcript=f"/t/{text}.jsonl", tokens=n * 1000,
            cost=costs[n % len(costs)],
        )  # fmt: skip
        with store.write() as db:
            assert store.finish(db, f"sub_{n:012x}", outcome)


def ps_json(capsys: Capture, *argv: str) -> str:
    capsys.readouterr()
    assert main(["ps", *argv, "--json"]) == 0
    return capsys.readouterr().out


def made_from_dicts(store: Store, *, active_only: bool) -> str:
    """What ``ps --json`` printed before the texts were kept: every row's dict, encoded."""
    return compact_json_text(store.run_dicts(active_only=active_only)) + "\n"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("ACP_BRIDGE_RUNS_DB", str(tmp_path / "runs.db"))
    close_stores()
    return Store(tmp_path / "runs.db")


def test_ps_json_is_byte_for_byte_the_rows_dicts_encoded(store: Store, capsys: Capture) -> None:
    fill(store)
    stored = store.db.execute("SELECT count(*) FROM runs WHERE listing IS NOT NULL").fetchone()
    assert 0 < stored[0] < 32  # most ended runs keep a text; those with a tiny cost do not
    assert ps_json(capsys, "--all") == made_from_dicts(store, active_only=False)
    assert ps_json(capsys) == made_from_dicts(store, active_only=True)
    for limit in (1, 7, 100):
        texts = listing.json_texts(store.db, compact_json_raw, limit=limit)
        dicts = store.run_dicts(limit=limit)
        assert safe_json("[" + ",".join(texts) + "]") == compact_json_text(dicts)
    # A change to an ended run after its end (a hold, a late count) clears its text.
    store.db.execute("UPDATE runs SET held_until = 12.5, events_count = 7 WHERE id = ?",
                     ("sub_000000000001",))  # fmt: skip
    store.db.execute("UPDATE runs SET summary = 'again' WHERE id = ?", ("sub_000000000002",))
    cleared = store.db.execute(
        "SELECT count(*) FROM runs WHERE listing IS NULL AND id IN (?, ?)",
        ("sub_000000000001", "sub_000000000002"),
    ).fetchone()
    assert cleared[0] == 2
    out = ps_json(capsys, "--all")
    assert out == made_from_dicts(store, active_only=False)
    assert '"held_until":12.5' in out and '"summary":"again"' in out
    close_stores()


def test_every_stored_text_is_what_the_cli_encoder_makes(store: Store) -> None:
    fill(store)
    rows = store.db.execute(f"SELECT listing, {DICT_COLUMNS} FROM runs").fetchall()
    for stored, *row in rows:
        if stored is not None:
            assert stored == orjson.dumps(listing.row_to_dict(row)).decode()


def test_json_and_orjson_spell_every_float_kept_alike() -> None:
    """The stored texts are made with json (no orjson import where runs end); the CLI's
    encoder is orjson. They agree on every float a text is kept for."""
    rng = random.Random(24)
    values = [0.0, -0.0, 1e-4, 1e15, 1e16, 1.7976931348623157e308, 1795639663.230059]
    values += [rng.choice((1, -1)) * 10 ** rng.uniform(-4, 20) for _ in range(20_000)]
    values += [struct.unpack("d", rng.randbytes(8))[0] for _ in range(20_000)]
    kept = [v for v in values if listing._plain(v)]
    assert len(kept) > 30_000
    assert json.dumps(kept, separators=(",", ":")) == orjson.dumps(kept).decode()
    for tiny in (1e-05, 2.5e-07, float("inf"), float("nan")):
        assert not listing._plain(tiny)


def test_the_trigger_watches_every_column_ps_shows() -> None:
    watched = re.search(r"AFTER UPDATE OF(.*?)ON runs", migrations._V5, re.S)
    assert watched is not None
    assert watched.group(1).split() == [f"{c}," for c in DICT_COLUMNS.split(", ")[:-1]] + [
        DICT_COLUMNS.split(", ")[-1]
    ]


def test_a_store_from_before_the_texts_gets_them_when_it_migrates(
    store: Store, capsys: Capture
) -> None:
    fill(store)
    expected = made_from_dicts(store, active_only=False)
    store.db.execute("DROP INDEX runs_batch")  # v8's column, index and table undone
    store.db.execute("ALTER TABLE runs DROP COLUMN batch_id")
    store.db.execute("DROP TABLE comparisons")
    store.db.execute("UPDATE runs SET listing = NULL")
    store.db.execute("DROP TRIGGER runs_listing_stale")
    store.db.execute("DROP INDEX runs_listing")  # v7's index, on the column v5 added
    store.db.execute("ALTER TABLE runs DROP COLUMN listing")
    store.db.execute("DROP INDEX accepting_supervisors_env")  # and v6's renames undone
    store.db.execute("ALTER TABLE accepting_supervisors RENAME TO runners")
    store.db.execute("CREATE INDEX runners_env ON runners (env_key)")
    store.db.execute("ALTER TABLE wakeups RENAME TO bells")
    store.db.execute("PRAGMA user_version = 4")
    store.close()
    close_stores()
    with sqlite3.connect(store.path) as db:
        assert "listing" not in {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    assert ps_json(capsys, "--all") == expected  # migrated by this ps, then read
    migrated = Store(store.path)
    kept = migrated.db.execute("SELECT count(*) FROM runs WHERE listing IS NOT NULL")
    assert kept.fetchone()[0] > 0
    migrated.close()
    close_stores()


def test_ps_json_reads_the_stored_texts_from_their_index(tmp_path: Path) -> None:
    """The stored text is the row's last column, after its envelope: read from the table,
    every envelope was walked to reach it (19 000 runs: 0.3 s of SQLite)."""
    store = Store(tmp_path / "runs.db")
    fill(store)
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    listing.json_texts(store.db, compact_json_raw)
    store.db.set_trace_callback(None)
    reads = [s for s in statements if "SELECT listing" in s]
    assert reads, statements
    for statement in reads:
        plan = [row[3] for row in store.db.execute(f"EXPLAIN QUERY PLAN {statement}")]
        assert plan == ["SCAN runs USING COVERING INDEX runs_listing"], (statement, plan)
    store.close()
