"""Batches on a real Ray cluster: order, placement, lost and frozen nodes, retries, records.

Each test drives the cluster of ``conftest.py`` through the same API a host uses
(:func:`run_batch` / ``batch``) or through the CLI, and checks the envelopes: one per task,
in input order, each saying where it ran and how it ended.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_bridge._batch.batch_run import run_batch
from acp_bridge._batch.executor import LocalExecutor
from acp_bridge._batch.ray.ray_executor import RayExecutor
from acp_bridge._batch.tasks import Keyed, keyed
from acp_bridge._runs.caller.handle import open_run
from acp_bridge.envelope import SubtaskResult
from tests.conftest import processes_with
from tests.ray.conftest import RayTestCluster

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240)]


def demo_tasks(count: int, **extra: Any) -> list[dict[str, Any]]:
    return [
        {"key": f"t{i}", "entry": "acp_spawn", "agent": "demo", "task": f"Reply with exactly R{i}"}
        | extra
        for i in range(count)
    ]


def run(tasks: list[Keyed], executor: Any, limit: float = 120, **options: Any) -> list[Any]:
    async def main() -> list[Any]:
        with anyio.fail_after(limit):
            return await run_batch(tasks, executor=executor, **options)

    return anyio.run(main)


def envelopes(outcomes: list[Any]) -> list[SubtaskResult]:
    return [outcome.envelope for outcome in outcomes]


def test_forty_demo_tasks_come_back_in_order_like_a_local_batch(
    ray_cluster: RayTestCluster,
) -> None:
    tasks = keyed(demo_tasks(40))
    remote = envelopes(run(tasks, RayExecutor(ray_cluster.address)))
    local = envelopes(run(keyed(demo_tasks(40)), LocalExecutor()))

    def shape(results: list[SubtaskResult]) -> list[tuple[Any, ...]]:
        return [(r.status, r.output, r.meta.batch["key"], r.meta.batch["index"]) for r in results]

    assert shape(remote) == shape(local) == [("done", f"R{i}", f"t{i}", i) for i in range(40)]
    workers = {ray_cluster.node_id(node) for node in ray_cluster.workers}
    used = {r.meta.node for r in remote}
    assert used == workers, "SPREAD puts tasks on both workers, none on the head"
    assert all(r.meta.batch["attempts"] == 1 for r in remote)
    # recorded on this machine, with where they ran
    record = open_run(remote[7].task_id).record()
    assert record.status == "done"
    assert record.envelope is not None
    assert record.envelope["meta"]["node"] == remote[7].meta.node


def test_a_task_for_an_agent_no_node_offers_fails_at_once(ray_cluster: RayTestCluster) -> None:
    nobody = {"key": "x", "entry": "acp_spawn", "agent": "nobody-offers-this", "task": "hi"}
    tasks = keyed([nobody, *demo_tasks(1)])
    started = time.monotonic()
    refused, fine = envelopes(run(tasks, RayExecutor(ray_cluster.address)))
    assert refused.status == "failed"
    assert refused.meta.error_code == "executor_error"
    assert "'nobody-offers-this'" in refused.error
    for node in ray_cluster.workers:  # the nodes seen are named
        assert ray_cluster.node_id(node)[:8] in refused.error
    assert fine.status == "done"
    assert time.monotonic() - started < 30  # no waiting in Ray's queue for a node


def _remove_when(
    cluster: RayTestCluster, node: Any, *, finished: int, running: int
) -> tuple[Any, threading.Event, dict[str, Any]]:
    """A progress hook that removes ``node`` once ``finished`` tasks ended there and
    ``running`` long ones (``sleep``) run there; and what it saw then."""
    node_id = cluster.node_id(node)
    seen: dict[str, Any] = {"running": set(), "ended": set(), "removed": False}
    removed = threading.Event()

    def progress(what: str, task: Keyed, where: str | None, envelope: Any) -> None:
        if what == "started" and where == node_id:
            seen["running"].add(task.key)
            if task.task.request.task.startswith("sleep"):
                seen.setdefault("long", set()).add(task.key)
        elif what in ("ended", "retrying") and task.key in seen["running"]:
            seen["running"].discard(task.key)
            if what == "ended" and not seen["removed"]:
                seen["ended"].add(task.key)
            elif what == "ended" and not removed.is_set():  # in the removal's seconds
                seen.setdefault("ended_while_removing", set()).add(task.key)
        if (
            not seen["removed"]
            and len(seen["ended"]) >= finished
            and len(seen.get("long", set()) & seen["running"]) >= running
        ):
            seen["removed"] = True
            seen["running_then"] = set(seen["running"])
            threading.Thread(target=lambda: (cluster.remove(node), removed.set())).start()

    return progress, removed, seen


def _mixed_tasks(count: int) -> list[dict[str, Any]]:
    """Short and long demo tasks, alternating. Long: 12 s, so that one running when a
    node is removed cannot end before the node is gone, even slowed by a loaded machine
    (the removal is triggered seconds after the first ones start)."""
    return [
        {
            "key": f"m{i}",
            "entry": "acp_spawn",
            "agent": "demo",
            "task": "sleep 12" if i % 2 else f"Reply with exactly M{i}",
        }
        for i in range(count)
    ]


@pytest.mark.parametrize("retries", [0, 1])
def test_a_worker_removed_mid_batch(ray_cluster: RayTestCluster, retries: int) -> None:
    extra = ray_cluster.add_worker()
    lost_id = ray_cluster.node_id(extra)
    progress, removed, seen = _remove_when(ray_cluster, extra, finished=1, running=1)
    tasks = keyed(_mixed_tasks(24))
    results = envelopes(
        run(tasks, RayExecutor(ray_cluster.address), retries=retries, progress=progress)
    )
    assert removed.wait(30)
    assert [r.meta.batch["key"] for r in results] == [f"m{i}" for i in range(24)]
    finished_there = seen["ended"]
    running_then = seen["running_then"]
    by_key = {r.meta.batch["key"]: r for r in results}
    for key in finished_there:  # ended before the node went: kept as they were
        assert by_key[key].status == "done"
        assert by_key[key].meta.node == lost_id
        assert by_key[key].meta.batch["attempts"] == 1
    # A long task running there when the node went cannot have ended on it — unless it
    # ended while the node was being removed (seconds, on a loaded machine).
    ended_while_removing = seen.get("ended_while_removing", set())
    long_then = {key for key in running_then if int(key[1:]) % 2} - ended_while_removing
    assert long_then
    # Lost: what ran there when it went (tasks dispatched to it meanwhile may be lost too).
    assert not finished_there & {k for k, r in by_key.items() if r.meta.error_code}
    if retries == 0:
        lost = {k for k, r in by_key.items() if r.meta.error_code == "node_lost"}
        assert long_then <= lost
        for key in lost:
            assert by_key[key].status == "failed"
            assert by_key[key].meta.lost_reason == "node_died"
            assert by_key[key].meta.node == lost_id
            assert by_key[key].meta.batch["attempts"] == 1
        assert all(r.status == "done" for k, r in by_key.items() if k not in lost)
    else:
        assert all(r.status == "done" for r in results), [r.error for r in results]
        moved = {k for k, r in by_key.items() if r.meta.batch["attempts"] == 2}
        assert long_then <= moved
        for key in moved:
            assert by_key[key].meta.node != lost_id
        assert all(r.meta.batch["attempts"] == 1 for k, r in by_key.items() if k not in moved)
    assert _gone(processes_with(ray_cluster.marker)), "agents of the lost node live on"


def _gone(pids: list[int], limit: float = 10) -> bool:
    deadline = time.monotonic() + limit
    while pids and time.monotonic() < deadline:
        time.sleep(0.1)
        pids = [pid for pid in pids if os.path.exists(f"/proc/{pid}")]
    return not pids


def test_a_frozen_worker_is_lost_by_the_deadline(ray_cluster: RayTestCluster) -> None:
    frozen = ray_cluster.add_worker({"agent:demo-frozen": 1})
    frozen_id = ray_cluster.node_id(frozen)
    stopped: dict[str, Any] = {}

    def progress(what: str, task: Keyed, where: str | None, envelope: Any) -> None:
        if what == "started" and where == frozen_id and "at" not in stopped:
            stopped["pids"] = ray_cluster.node_pids(frozen)
            for pid in stopped["pids"]:
                os.kill(pid, signal.SIGSTOP)
            stopped["at"] = time.monotonic()

    # Only the frozen node offers this agent: the demo agent under another name.
    tasks = keyed([{"key": "f", "entry": "acp_spawn", "agent": "demo-frozen", "task": "sleep 60",
                    "timeout": 5}])  # fmt: skip
    executor = RayExecutor(ray_cluster.address, grace=3)
    try:
        (result,) = envelopes(run(tasks, executor, progress=progress, limit=60))
        took = time.monotonic() - stopped["at"]
    finally:
        ray_cluster.remove(frozen)
    assert result.status == "failed"
    assert result.meta.error_code == "node_lost"
    assert result.meta.lost_reason == "deadline"
    assert result.meta.node == frozen_id
    assert took <= 5 + 3 + 2, f"node_lost after {took:.1f}s"


def test_queued_tasks_are_refused_when_the_last_node_offering_their_agent_goes(
    ray_cluster: RayTestCluster,
) -> None:
    only = ray_cluster.add_worker({"agent:demo-frozen": 1})  # one slot: one runs, two wait
    only_id = ray_cluster.node_id(only)
    running: list[str] = []

    def progress(what: str, task: Keyed, where: str | None, envelope: Any) -> None:
        if what == "started" and where == only_id and not running:
            running.append(task.key)
            threading.Thread(target=ray_cluster.remove, args=(only,)).start()

    tasks = keyed(
        [
            {"key": f"q{i}", "entry": "acp_spawn", "agent": "demo-frozen", "task": "sleep 30"}
            for i in range(3)
        ]
    )
    started = time.monotonic()
    results = envelopes(run(tasks, RayExecutor(ray_cluster.address), progress=progress))
    assert time.monotonic() - started < 60  # not the 30 s sleeps, one after the other
    by_key = {r.meta.batch["key"]: r for r in results}
    (first,) = running
    assert by_key[first].meta.error_code == "node_lost"
    for key in set(by_key) - {first}:
        assert by_key[key].meta.error_code == "executor_error", by_key[key].error
        assert "no live node offers agent 'demo-frozen'" in by_key[key].error


def test_a_worker_killed_mid_batch_costs_only_its_own_tasks(
    ray_cluster: RayTestCluster, tmp_path: Path
) -> None:
    """Every run of a task appends its key to a log the test reads (the nodes share this
    machine's files): a re-run shows there even when no envelope mentions it."""
    extra = ray_cluster.add_worker()
    lost_id = ray_cluster.node_id(extra)
    count = 60
    tasks = keyed(
        [
            {
                "key": f"c{i}",
                "entry": "bash",
                "task": f"echo c{i} >> runs.log; sleep 1",
                "cwd": str(tmp_path),
            }
            for i in range(count)
        ]
    )
    starts: list[str] = []
    retried: dict[str, int] = {}  # key → how many tasks had started when it was retried
    removing = threading.Event()

    def progress(what: str, task: Keyed, where: str | None, envelope: Any) -> None:
        if what == "started":
            starts.append(task.key)
            if where == lost_id and not removing.is_set() and len(starts) > 12:
                removing.set()
                threading.Thread(target=ray_cluster.remove, args=(extra,)).start()
        elif what == "retrying":
            retried[task.key] = len(starts)

    outcomes = run(tasks, RayExecutor(ray_cluster.address), retries=1, progress=progress)
    results = envelopes(outcomes)
    assert removing.is_set()
    assert [r.meta.batch["key"] for r in results] == [f"c{i}" for i in range(count)]
    assert all(r.status == "done" for r in results), [r.error for r in results if r.error]
    attempts = {r.meta.batch["key"]: r.meta.batch["attempts"] for r in results}
    assert set(retried) == {k for k, n in attempts.items() if n == 2}
    assert retried, "no task was running on the removed node"
    runs = Counter((tmp_path / "runs.log").read_text().split())
    assert set(runs) == set(attempts)
    for key, ran in runs.items():  # no run beyond the retries asked for
        assert ran <= attempts[key], (key, ran, attempts[key])
    # A retry goes first: ahead of the tasks still waiting to enter Ray. At most the window
    # (12 slots + a margin of 3, before the node's loss shrinks it) starts before it.
    for key, then in retried.items():
        again = starts.index(key, then)  # its start after it was retried
        assert again - then <= 15, (key, then, again)
    assert _gone(processes_with(ray_cluster.marker)), "processes of the lost node live on"
