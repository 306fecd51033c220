"""The run store, lanes and budgets on a real SQLite file (no supervisor processes)."""

from __future__ import annotations

import json
import sqlite3
import stat
import time
from pathlib import Path

import anyio
import pytest

from acp_bridge._os.process import proc
from acp_bridge._runs import liveness, unfinished
from acp_bridge._runs.budget import Budget, BudgetGuard, usage_figures
from acp_bridge._runs.recorder import MAX_EVENT_CHARS, EventRecorder, encode
from acp_bridge._runs.store import lanes, retention, rules, supervisors
from acp_bridge._runs.store.migrations import MIGRATIONS, VERSION
from acp_bridge._runs.store.run_pages import record_comparison
from acp_bridge._runs.store.run_records import NewRun, RunRecord
from acp_bridge._runs.store.run_store import Store
from acp_bridge.config import load_config
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ConfigError, ErrorCode, RunStoreError


def new_run(run_id: str, lane: str = "entry:bash", group: str | None = None) -> NewRun:
    return NewRun(
        id=run_id, entry="bash", agent=None, task="true", cwd="/", caller_cwd="/",
        request={"entry": "bash", "task": "true"}, config_path=None, lane=lane, group=group,
        env_key="k",
    )  # fmt: skip


def end(store: Store, run_id: str) -> None:
    run = store.get(run_id)
    assert run is not None
    with store.write() as db:
        assert store.finish(db, run_id, unfinished.ended(run, "x", ErrorCode.AGENT_ERROR))


def test_a_new_store_is_private_and_at_the_current_schema(tmp_path: Path) -> None:
    store = Store(tmp_path / "state" / "runs.db")
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == VERSION
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    Store(store.path).close()  # opening again migrates nothing
    store.close()


def test_a_store_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    Store(path).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {VERSION + 1}")
    with pytest.raises(ConfigError, match="newer than this acp-bridge"):
        Store(path)


def test_a_v5_store_keeps_its_rows_through_the_v6_renames(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    me, gone = proc.own_identity(), proc.Identity(1 << 22, 1, "no-such-boot")
    with sqlite3.connect(path, isolation_level=None) as db:  # a store as v5 left it
        for script in MIGRATIONS[:5]:
            for statement in script.split(";\n"):
                if statement.strip():
                    db.execute(statement)
        db.execute("PRAGMA user_version = 5")
        rows = [(*me, "env-a"), (*gone, "env-b")]
        db.executemany("INSERT INTO runners (pid, start, boot, env_key) VALUES (?, ?, ?, ?)", rows)
        db.execute("INSERT INTO bells (name, run_id, pid) VALUES ('acp-bridge/ab', 'sub_1', 7)")
        db.execute("INSERT INTO settings (key, value) VALUES ('runner_idle', '0.5')")
    db.close()
    store = Store(path)  # migrates
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == VERSION == 8
    tables = {name for (name,) in store.db.execute("SELECT name FROM sqlite_schema")}
    assert {"accepting_supervisors", "accepting_supervisors_env", "wakeups"} <= tables
    assert not {"runners", "runners_env", "bells"} & tables
    assert supervisors.find(store, "env-a") == me  # the rows are read under the new names
    assert supervisors.find(store, "env-b") is None  # (and a dead one's row removed)
    assert store.db.execute("SELECT * FROM wakeups").fetchall() == [("acp-bridge/ab", "sub_1", 7)]
    assert store.setting("supervisor_idle") == "0.5" and store.setting("runner_idle") is None
    store.close()


def test_a_v7_store_keeps_its_runs_and_records_batch_ids_after_v8(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    me = proc.own_identity()
    with sqlite3.connect(path, isolation_level=None) as db:  # a store as v7 left it
        for script in MIGRATIONS[:7]:
            for statement in script.split(";\n"):
                if statement.strip():
                    db.execute(statement)
        db.execute("PRAGMA user_version = 7")
    db.close()
    store = Store(path)  # migrates
    store.create(new_run("sub_000000000001"), me)
    store.create(new_run("sub_000000000002")._replace(batch_id="batch_0123456789ab"), me)
    rows = store.db.execute("SELECT id, batch_id FROM runs ORDER BY seq").fetchall()
    assert rows == [("sub_000000000001", None), ("sub_000000000002", "batch_0123456789ab")]
    plan = store.db.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM runs WHERE batch_id = ? ORDER BY seq", ("b",)
    ).fetchall()
    assert "runs_batch" in str(plan)  # a batch's page never scans the table
    record_comparison(store, "cmp_0123456789ab", '{"winner": null}')
    record_comparison(store, "cmp_0123456789ab", '{"winner": "sub_000000000002"}')  # replaced
    kept = store.db.execute("SELECT id, result FROM comparisons").fetchall()
    assert kept == [("cmp_0123456789ab", '{"winner": "sub_000000000002"}')]
    store.create(new_run("sub_000000000003")._replace(batch_id="cmp_0123456789ab"), me)
    for run_id in ("sub_000000000001", "sub_000000000002", "sub_000000000003"):
        end(store, run_id)
    record_comparison(store, "cmp_ffffffffffff", "{}")  # its attempts pruned already
    assert retention.prune(store, keep=1) == ["sub_000000000001", "sub_000000000002"]
    left = store.db.execute("SELECT id FROM comparisons").fetchall()
    assert left == [("cmp_0123456789ab",)]  # one of its attempts is still there
    retention.prune(store, keep=0)
    assert store.db.execute("SELECT count(*) FROM comparisons").fetchone()[0] == 0
    store.close()


def test_finish_is_a_compare_and_set_on_the_supervisor(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    me = proc.own_identity()
    store.create(new_run("sub_000000000001"), me)
    run = store.get("sub_000000000001")
    assert run is not None and run.supervisor == me and run.status == "queued"
    other = proc.Identity(me.pid, me.start + 1, me.boot)
    outcome = unfinished.ended(run, "gone", ErrorCode.LOST)
    with store.write() as db:
        assert not store.finish(db, run.id, outcome, supervisor=other)
        assert store.finish(db, run.id, outcome, supervisor=me)
        assert not store.finish(db, run.id, outcome, supervisor=me)  # ended once, for good
    ended = store.get(run.id)
    assert ended is not None and ended.status == "lost" and ended.envelope is not None
    # A real envelope, bash-shaped: the subtask.bash.result.v1 output with exit code -1.
    result = SubtaskResult.model_validate(ended.envelope)
    assert result.status == "failed" and result.meta.error_code == ErrorCode.LOST
    assert result.task_id == run.id and result.output["exit_code"] == -1
    assert result.output_schema == "subtask.bash.result.v1"
    store.close()


def test_prune_by_age_and_count_never_touches_active_runs(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    me = proc.own_identity()
    for n in range(6):
        store.create(new_run(f"sub_00000000000{n}"), me)
    for n in range(4):
        end(store, f"sub_00000000000{n}")
    store.add_events("sub_000000000000", ['{"kind": "status"}'], 0)
    assert retention.prune(store, keep=2) == ["sub_000000000000", "sub_000000000001"]
    assert store.events("sub_000000000000") == []
    later = time.time() + 40 * 86400  # the default retention: 30 days
    assert retention.prune(store, now=later) == ["sub_000000000002", "sub_000000000003"]
    assert sorted(run.id for run in store.runs()) == ["sub_000000000004", "sub_000000000005"]
    store.close()


def test_the_event_log_is_capped_with_a_marker(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    store.create(new_run("sub_0000000000aa"), proc.own_identity())

    async def record() -> None:
        recorder = EventRecorder(store, "sub_0000000000aa", max_events=5)
        for n in range(12):
            recorder.add({"kind": "message", "task_id": "sub_0000000000aa", "text": str(n)})
        recorder.flush()

    anyio.run(record)
    kept = [json.loads(text) for _, text in store.events("sub_0000000000aa")]
    assert [e.get("text") for e in kept[:4]] == ["0", "1", "2", "3"]
    assert kept[4]["kind"] == "warning" and "event log full" in kept[4]["message"]
    assert len(kept) == 5
    row = store.db.execute("SELECT events_dropped FROM runs").fetchone()
    assert row[0] == 8
    store.close()


def test_one_event_is_bounded() -> None:
    text = encode({"kind": "message", "task_id": "t", "text": "x" * (3 * MAX_EVENT_CHARS)})
    assert len(text) <= MAX_EVENT_CHARS
    assert json.loads(text)["clipped_from"] > MAX_EVENT_CHARS


def queued(run_id: str, lane: str) -> RunRecord:
    return RunRecord(
        id=run_id, entry="bash", agent=None, task="", cwd="", status="queued", lane=lane,
        group=None, created_at=0, started_at=None, ended_at=None, supervisor=None,
        session_id=None, transcript=None, summary="", error_code=None, tokens=0, cost=0,
        max_tokens=None, max_cost=None, stop_requested=None, events_count=0, seq=0, env_key="",
    )  # fmt: skip


def test_lanes_admit_in_order_within_their_limits() -> None:
    a1, a2, b1, c1 = queued("a1", "a"), queued("a2", "a"), queued("b1", "b"), queued("c1", "c")
    ids = lambda runs: [r.id for r in runs]  # noqa: E731
    # No limits: everyone starts.
    assert ids(lanes.admissible([a1, a2, b1], {}, {})) == ["a1", "a2", "b1"]
    # A lane limit: only the head of its lane, and only while there is room.
    assert ids(lanes.admissible([a1, a2, b1], {}, {"a": 2})) == ["a1", "b1"]
    assert ids(lanes.admissible([a1, a2, b1], {"a": 2}, {"a": 2})) == ["b1"]
    # A global limit: older lane heads first; nobody passes a head waiting for a global slot.
    assert ids(lanes.admissible([a1, b1, c1], {"x": 1}, {"*": 2})) == ["a1"]
    # A head blocked by its own lane's limit does not hold up other lanes.
    assert ids(lanes.admissible([a1, b1, c1], {"a": 1}, {"*": 3, "a": 1})) == ["b1", "c1"]
    assert ids(lanes.admissible([a1, b1, c1], {"a": 1}, {"*": 2, "a": 1})) == ["b1"]


def test_budget_figures_and_group_totals() -> None:
    assert usage_figures({"total_tokens": 7}) == (7, None)
    assert usage_figures({"input_tokens": 3, "output_tokens": 2}) == (5, None)
    assert usage_figures({"context_used": 9, "cost": {"amount": 0.25}}) == (9, 0.25)
    guard = BudgetGuard(Budget(max_tokens=10))
    assert guard.observe({"context_used": 10}) is None
    assert "max_tokens is 10" in (guard.observe({"context_used": 11}) or "")
    group = BudgetGuard(
        Budget(), group="g", group_budget=Budget(max_cost=1.0), spent_by_others=lambda: (0, 0.75)
    )
    assert group.spent_before_start() is None
    assert "group 'g' budget exceeded" in (group.observe({"cost": {"amount": 0.5}}) or "")
    with pytest.raises(ConfigError):
        Budget(max_tokens=0)


def test_a_relative_store_path_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = Store("here/runs.db")
    assert store.path == tmp_path / "here" / "runs.db"
    monkeypatch.chdir("/")
    assert store.logs_dir == tmp_path / "here" / "run-logs"
    store.close()


def test_limits_and_group_budgets_can_be_changed_without_a_run(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    store.set_limit("agent:demo", 2)
    store.set_limit(lanes.GLOBAL, 8)
    assert store.limits() == {"agent:demo": 2, "*": 8}
    store.set_limit("agent:demo", None)
    assert store.limits() == {"*": 8}
    store.set_group_budget("g", 100, None)
    assert store.group_budget("g") == (100, None)
    assert store.group_budget("nobody") == (None, None)
    store.close()


def test_sqlite_errors_are_run_store_errors(tmp_path: Path) -> None:
    garbage = tmp_path / "runs.db"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(RunStoreError, match=r"runs\.db"):
        Store(garbage)
    store = Store(tmp_path / "good" / "runs.db")
    with pytest.raises(RunStoreError, match="no such column"):
        store.db.execute("SELECT missing FROM runs")
    store.close()


def test_foreground_runs_never_take_a_lane_slot(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    me = proc.own_identity()
    store.set_limit(lanes.GLOBAL, 1)
    store.create(new_run("sub_0000000000f1"), me, detached=False)  # running, in the caller
    store.create(new_run("sub_0000000000d1"), me)  # queued
    assert store.get("sub_0000000000f1").status == "running"  # type: ignore[union-attr]
    assert lanes.heads(store) == ["sub_0000000000d1"]
    store.close()


def test_the_config_is_written_into_the_store_as_limits_and_settings(tmp_path: Path) -> None:
    path = tmp_path / "acp-bridge.yaml"
    path.write_text(
        "runs: {max_concurrent: 3, retention: {days: 2.5, keep: 9}, max_events: 50}\n"
        "acp: {agents: [{name: demo, max_concurrent: 2}]}\n"
    )
    loaded = load_config(path, search=False)
    assert rules.lane_limits(loaded, "agent:demo", "demo") == {"*": 3, "agent:demo": 2}
    assert rules.lane_limits(loaded, "entry:bash", None) == {"*": 3}
    store = Store(tmp_path / "runs.db")
    store.create(new_run("sub_0000000000c1"), proc.own_identity(),
                 settings=rules.store_settings(loaded.config.runs))  # fmt: skip
    assert retention.retention(store) == (2.5, 9)
    assert store.setting("max_events") == "50"
    store.close()


@pytest.mark.parametrize(
    "yaml",
    ["runs: {max_concurrent: 0}", "runs: {max_concurrent: 5000}", "runs: {retention: {days: -1}}",
     "acp: {agents: [{name: demo, max_concurrent: 2000}]}"],
)  # fmt: skip
def test_run_limits_have_documented_bounds(tmp_path: Path, yaml: str) -> None:
    path = tmp_path / "acp-bridge.yaml"
    path.write_text(yaml + "\n")
    with pytest.raises(ConfigError):
        loaded = load_config(path, search=False)
        loaded.profiles.get("demo")


@pytest.mark.parametrize("text", ["x" * 3_000_000, 'é"\\\n\x00😀' * 500_000, "a" * (1 << 20)])
def test_a_long_answer_is_stored_in_pieces_and_read_back_whole(tmp_path: Path, text: str) -> None:
    from acp_bridge._runs.unfinished import outcome
    from acp_bridge.envelope import done

    store = Store(tmp_path / "runs.db")
    store.create(new_run("sub_000000000009"), proc.own_identity())
    result = done(text, task_id="sub_000000000009")
    with store.write() as db:
        assert store.finish(db, "sub_000000000009", outcome(result))
    stored = store.get("sub_000000000009")
    assert stored is not None and stored.envelope == result.to_dict()
    store.close()


def test_listings_as_json_data_are_the_records_as_json_data(tmp_path: Path) -> None:
    """``ps --json`` makes its rows straight from the store; they must say what the records
    say (queued with a supervisor, ended, a foreground run without one, in a group)."""
    store = Store(tmp_path / "runs.db")
    me = proc.own_identity()
    store.create(new_run("sub_000000000001"), me)
    store.create(new_run("sub_000000000002", group="g"), me)
    end(store, "sub_000000000002")
    store.create(new_run("sub_000000000003"), me, detached=False)
    for active_only in (False, True):
        records = store.runs(active_only=active_only)
        assert store.run_dicts(active_only=active_only) == [r.to_dict() for r in records]
    assert len(store.run_dicts()) == 3 and len(store.run_dicts(limit=1)) == 1
    store.close()


def test_the_looks_at_active_runs_read_an_index_not_every_run_kept(tmp_path: Path) -> None:
    """Each run's end, each claim, ``ps`` and the liveness check look at the active runs: in
    a store that keeps thousands of ended runs (envelopes and all) none of these statements
    may scan the whole table."""
    store = Store(tmp_path / "runs.db")
    me = proc.own_identity()
    for n in range(3):
        store.create(new_run(f"sub_00000000000{n}"), me)
    end(store, "sub_000000000000")
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    lanes.heads(store)
    lanes.claim_mine(store, me)
    liveness.reap(store)
    supervisors.queued_for(store.db, me)
    supervisors.retire(store, me)
    store.db.set_trace_callback(None)
    selects = {s for s in statements if s.lstrip().upper().startswith("SELECT")}
    assert len(selects) >= 5, selects
    for statement in selects:
        plan = [row[3] for row in store.db.execute(f"EXPLAIN QUERY PLAN {statement}")]
        assert "SCAN runs" not in plan, (statement, plan)  # a scan without an index
    store.close()
