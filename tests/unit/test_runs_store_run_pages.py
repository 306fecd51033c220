"""A page of runs (run_pages.py): keyset pages that cover every run once, each filter, the
envelope's figures, and the change mark that tells a live list to look again; a batch's
runs, counted by status and node, its failed and retried ones, and its own mark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_bridge._os.process import proc
from acp_bridge._runs.store.run_pages import (
    ACTIVE_FILTER,
    RunFilter,
    agents,
    batch_counts,
    batch_mark,
    batch_runs,
    change_mark,
    comparison,
    record_comparison,
    run_page,
)
from acp_bridge._runs.store.run_records import NewRun, Outcome
from acp_bridge._runs.store.run_store import Store


def new_run(n: int, *, agent: str = "demo", task: str = "", group: str | None = None) -> NewRun:
    return NewRun(
        id=f"sub_{n:012x}", entry="acp_spawn", agent=agent, task=task or f"task {n}",
        cwd="/tmp", caller_cwd="/", request={"entry": "acp_spawn"}, config_path=None,
        lane=f"agent:{agent}", group=group, env_key="k",
    )  # fmt: skip


def end(store: Store, n: int, status: str = "done", envelope: dict[str, Any] | None = None) -> None:
    outcome = Outcome(status, envelope or {"status": status}, f"summary {n}", None)  # type: ignore[arg-type]
    with store.write() as db:
        assert store.finish(db, f"sub_{n:012x}", outcome)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.db")


def test_pages_by_keyset_cover_every_run_once_newest_first(store: Store) -> None:
    me = proc.own_identity()
    for n in range(23):
        store.create(new_run(n), me, detached=False)
    seen: list[str] = []
    before = None
    while page := run_page(store.db, before=before, limit=10):
        assert len(page) <= 10
        seen += [row.run.id for row in page]
        before = page[-1].run.seq
    assert seen == [f"sub_{n:012x}" for n in reversed(range(23))]


def test_each_filter_keeps_only_its_runs(store: Store) -> None:
    me = proc.own_identity()
    store.create(new_run(1, agent="a", group="g1", task="fix 100% of the_bugs"), me, detached=False)
    store.create(new_run(2, agent="b", task="fix 1000 of thexbugs"), me, detached=False)
    store.create(new_run(3, agent="a", group="g1"), me, detached=False)
    end(store, 1, "failed")
    end(store, 2)

    def ids(**given: str) -> list[int]:
        return [int(row.run.id[4:], 16) for row in run_page(store.db, RunFilter(**given))]

    assert ids(status="failed") == [1]
    assert ids(status=ACTIVE_FILTER) == [3]
    assert ids(agent="a") == [3, 1]
    assert ids(group="g1", status="failed") == [1]
    # LIKE's wildcards in the text are matched literally
    assert ids(text="100%") == [1]
    assert ids(text="the_bugs") == [1]
    assert ids(text="SUMMARY 2") == [2]  # the summary, in any case
    assert ids(text=f"sub_{3:012x}") == [3]
    assert ids(status="done", agent="a") == []
    assert agents(store.db) == ["a", "b"]


def test_a_page_reads_files_changed_and_the_batch_placement_from_the_envelope(
    store: Store,
) -> None:
    me = proc.own_identity()
    for n in range(3):
        store.create(new_run(n), me, detached=False)
    meta = {"files_changed": ["a", "b"], "batch": {"key": "k1", "attempts": 2}, "node": "n7"}
    end(store, 0, envelope={"status": "done", "meta": meta, "output": "x" * 300_000})
    end(store, 1, envelope={"status": "done", "meta": {}})
    rows = {row.run.id: row for row in run_page(store.db)}
    first = rows[f"sub_{0:012x}"]
    assert first.files_changed == 2 and first.node == "n7"
    assert first.batch is not None and '"attempts":2' in first.batch
    assert rows[f"sub_{1:012x}"].files_changed is None
    assert rows[f"sub_{2:012x}"].files_changed is None  # still running: no envelope


def test_the_change_mark_moves_when_a_run_starts_progresses_or_ends(store: Store) -> None:
    me = proc.own_identity()
    marks = [change_mark(store.db)]
    store.create(new_run(1), me, detached=False)
    marks.append(change_mark(store.db))
    store.add_events(f"sub_{1:012x}", ['{"kind": "message", "text": "hi"}'], 0, tokens=5)
    marks.append(change_mark(store.db))
    end(store, 1)
    marks.append(change_mark(store.db))
    assert len(set(marks)) == len(marks)
    assert change_mark(store.db) == marks[-1]  # nothing changed: the same mark


def task_envelope(status: str, node: str, attempts: int, error: str = "") -> dict[str, Any]:
    batch = {"id": "batch_1", "key": "k", "index": 0, "node": node, "attempts": attempts}
    return {"status": status, "error": error or None, "meta": {"node": node, "batch": batch}}


def test_a_batchs_runs_counted_by_status_and_node_and_its_problems(store: Store) -> None:
    me = proc.own_identity()
    for n in range(6):
        store.create(new_run(n)._replace(batch_id="batch_1"), me, detached=False)
    store.create(new_run(9)._replace(batch_id="batch_2"), me, detached=False)
    store.create(new_run(10), me, detached=False)  # in no batch
    end(store, 0, "done", task_envelope("done", "n1", 1))
    end(store, 1, "done", task_envelope("done", "n2", 2))  # its first node was lost
    end(store, 2, "failed", task_envelope("failed", "n1", 1, "exit 3 <b>"))
    end(store, 3, "failed", task_envelope("failed", "n2", 3, "node n2 lost"))
    mark = batch_mark(store.db, "batch_1")
    end(store, 4, "cancelled", task_envelope("cancelled", "n1", 1))
    assert batch_mark(store.db, "batch_1") != mark  # a run of the batch ended
    counts = batch_counts(store.db, "batch_1")
    assert counts.by_status == {"done": 2, "failed": 2, "cancelled": 1, "running": 1}
    assert counts.total == 6 and counts.retried == 2
    assert counts.by_node == {
        "n1": {"done": 1, "failed": 1, "cancelled": 1},
        "n2": {"done": 1, "failed": 1},
        "": {"running": 1},  # not ended: its node is in no envelope yet
    }
    problems = batch_runs(store.db, "batch_1", problems_only=True)
    assert [row.run.id for row in problems] == [f"sub_{n:012x}" for n in (1, 2, 3, 4)]
    assert [row.error for row in problems] == [None, "exit 3 <b>", "node n2 lost", None]
    assert {row.batch_id for row in problems} == {"batch_1"}
    every = batch_runs(store.db, "batch_1")
    assert [row.run.id for row in every] == [f"sub_{n:012x}" for n in range(6)]  # as begun
    assert len(batch_runs(store.db, "batch_1", limit=2)) == 2
    assert batch_runs(store.db, "batch_3") == [] and batch_counts(store.db, "batch_3").total == 0
    mark = batch_mark(store.db, "batch_2")
    assert comparison(store.db, "batch_2") is None
    record_comparison(store, "batch_2", '{"winner": null}')
    assert comparison(store.db, "batch_2") == '{"winner": null}'
    assert batch_mark(store.db, "batch_2") != mark  # its decision was recorded
