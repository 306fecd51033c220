"""Durable-runs benchmark (DESIGN §6, background runs): detach, wait, ps.

    python benchmarks/runs.py [--rounds 15] [--records 1000] [--json OUT]

Everything runs against a fresh run store in a temporary folder, with real supervisors:

- ``detach (in process)``: ``start_sync("bash", "true")``: the queue write, and the shell that
  forks the supervisor and exits;
- ``detach (cold)``: a new interpreter imports the runs API, starts a run, prints
  ``{"task_id", "status": "queued"}`` and exits: what ``acp-bridge run --detach`` costs
  before its CLI's own imports. Both quiet (the previous run ended first) and back to back
  (earlier supervisors still busy on the same cores), each next to ``python -c pass`` timed
  the same way (the floor any Python CLI pays under that load);
- ``wait after end``: runs of ``sleep 0.5``; a waiter started before the end returns; the
  latency is the waiter's return time minus the ``ended_at`` the supervisor committed (both
  ``time.time()`` on this host). Measured for a waiter in this process and for a cold
  waiter process (``acp-bridge wait``);
- ``ps``: the store holds N ended runs (1 KB envelopes, 20 events each) and 4 running ones
  (so the liveness check has work to do); ``list_runs()`` in this process, and a cold process
  that imports, lists and prints them all as JSON (``acp-bridge ps --all --json``).

Targets: detach ≤ 0.3 s, wait ≤ 0.1 s after the end, ps ≤ 0.3 s with 1000 records.
Medians (and the worst round) are printed, with the cold processes' median CPU time: on a
shared machine their wall time grows with other people's load, their CPU time does not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from acp_bridge._runs import envelopes, procs
from acp_bridge._runs.handle import RunOptions, list_runs, start_sync, stop_run, wait_all_sync
from acp_bridge._runs.records import NewRun, Outcome
from acp_bridge._runs.store import Store, close_stores

TARGETS = {"detach": 0.3, "wait": 0.1, "ps": 0.3}
RUN_TIMEOUT = 60.0


CPU: dict[str, list[float]] = {}
"""user+sys CPU seconds of the cold processes, by measure: unlike wall time, not inflated by
other work on a shared machine (the kernel's accounting, from ``wait4``)."""


def cold(code: str, measure: str) -> tuple[float, str]:
    """Wall time of a fresh interpreter running ``code``, and what it printed; its CPU time
    goes to :data:`CPU` under ``measure``. (As in ``cold_start.py``: a blocking ``wait4`` for
    the child's own rusage, a timer that kills a hung child. The supervisor it starts is not
    counted: the backgrounding shell hands it over to init.)"""
    with tempfile.TemporaryFile() as out:
        began = time.monotonic()
        child = subprocess.Popen(
            [sys.executable, "-c", code], stdout=out, stderr=subprocess.DEVNULL
        )
        watchdog = threading.Timer(RUN_TIMEOUT, child.kill)
        watchdog.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            watchdog.cancel()
        took = time.monotonic() - began
        child.returncode = code_ = os.waitstatus_to_exitcode(status)
        out.seek(0)
        printed = out.read().decode()
    if code_ != 0:
        raise SystemExit(f"benchmark child failed with exit {code_}: {code[:60]}…")
    CPU.setdefault(measure, []).append(usage.ru_utime + usage.ru_stime)
    return took, printed


def bench_detach(rounds: int) -> dict[str, list[float]]:
    """Quiet: each start once the previous run ended (one ``--detach`` now and then).
    Back to back: starts in a row while earlier supervisors still import the entry code on
    the same cores (a shell loop fanning out)."""
    code = (
        "import json\nfrom acp_bridge._runs.handle import start_sync\n"
        "print(json.dumps({'task_id': start_sync('bash', 'true').id, 'status': 'queued'}))"
    )
    results: dict[str, list[float]] = {}
    for mode in ("quiet", "back to back"):
        warm, cold_times, floor, ids = [], [], [], []
        for _ in range(rounds):
            floor.append(cold("pass", f"  floor: python -c pass, {mode}")[0])
            began = time.monotonic()
            ids.append(start_sync("bash", "true").id)
            warm.append(time.monotonic() - began)
            if mode == "quiet":
                wait_all_sync(ids[-1:], timeout=RUN_TIMEOUT)
            took, out = cold(code, f"detach, {mode} (cold)")
            cold_times.append(took)
            ids.append(json.loads(out)["task_id"])
            if mode == "quiet":
                wait_all_sync(ids[-1:], timeout=RUN_TIMEOUT)
        ended = wait_all_sync(ids, timeout=RUN_TIMEOUT)
        assert all(run.status == "done" for run in ended), [run.summary for run in ended]
        results[f"detach, {mode} (in process)"] = warm
        results[f"detach, {mode} (cold)"] = cold_times
        results[f"  floor: python -c pass, {mode}"] = floor
    return results


def bench_wait(rounds: int) -> dict[str, list[float]]:
    in_process, cold_waiter = [], []
    waiter = (
        "import sys, time\nfrom acp_bridge._runs.handle import open_run\n"
        "run = open_run(sys.argv[1]).wait_sync(timeout=60)\nprint(time.time(), run.status)"
    )
    for _ in range(rounds):
        handle = start_sync("bash", "sleep 0.5")
        child = subprocess.Popen(
            [sys.executable, "-c", waiter, handle.id], stdout=subprocess.PIPE, text=True
        )
        run = handle.wait_sync(timeout=RUN_TIMEOUT)
        returned = time.time()
        assert run.status == "done" and run.ended_at is not None
        in_process.append(returned - run.ended_at)
        out, _ = child.communicate(timeout=RUN_TIMEOUT)
        cold_return, status = out.split()
        assert status == "done"
        cold_waiter.append(float(cold_return) - run.ended_at)
    return {"wait after end (in process)": in_process, "wait after end (cold waiter)": cold_waiter}


def fill(store: Store, records: int) -> None:
    me = procs.own_identity()
    output = "x" * 700
    for n in range(records):
        run = NewRun(
            id=f"sub_{n:012x}", entry="acp_spawn", agent="demo", task=f"task {n}", cwd="/tmp",
            caller_cwd="/tmp", spec={"args": ["demo", f"task {n}"], "kwargs": {}},
            config_path=None, lane="agent:demo", group=None, env_key="bench",
        )  # fmt: skip
        store.create(run, me)
        current = store.get(run.id)
        assert current is not None
        envelope = envelopes.failed(current, "benchmark record", "agent_error")
        envelope["output"] = output
        event = json.dumps({"kind": "message", "task_id": run.id, "elapsed": 0.1, "text": "hi"})
        store.add_events(run.id, [event] * 20, 0)
        with store.write() as db:
            store.finish(db, run.id, Outcome("failed", envelope, "s", "agent_error"))


def bench_ps(rounds: int, records: int, store: Store) -> dict[str, list[float]]:
    fill(store, records)
    busy = [start_sync("bash", "sleep 60", options=RunOptions(lane="bench-busy")) for _ in range(4)]
    code = (
        "import json\nfrom acp_bridge._runs.handle import list_runs\n"
        "runs = list_runs()\nprint(json.dumps([run.to_dict() for run in runs]))"
    )
    warm, cold_times = [], []
    try:
        for _ in range(rounds):
            began = time.monotonic()
            listed = list_runs()
            warm.append(time.monotonic() - began)
            assert len(listed) == records + 4
            took, out = cold(code, f"ps, {records} records (cold)")
            assert len(json.loads(out)) == records + 4
            cold_times.append(took)
    finally:
        for handle in busy:
            stop_run(handle.id)
        wait_all_sync([h.id for h in busy], timeout=RUN_TIMEOUT)
    return {
        f"ps, {records} records (in process)": warm,
        f"ps, {records} records (cold)": cold_times,
    }


def report(results: dict[str, list[float]]) -> None:
    print(f"{'measure':44} {'median':>9} {'worst':>9} {'CPU':>8} {'target':>8}")
    for name, times in results.items():
        key = name.split(" ")[0].split(",")[0]
        target = TARGETS.get(key)
        mark = "" if target is None else f"≤ {target:g} s"
        median, worst = statistics.median(times), max(times)
        cpu = f"{statistics.median(CPU[name]) * 1000:6.1f}ms" if name in CPU else ""
        print(f"{name:44} {median * 1000:7.1f}ms {worst * 1000:7.1f}ms {cpu:>8} {mark:>8}")


def fresh_store(folder: Path, name: str) -> Store:
    """A new run store for one phase; this process and its children use it."""
    close_stores()
    path = folder / name / "runs.db"
    os.environ["ACP_BRIDGE_RUNS_DB"] = str(path)
    return Store(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="also write the raw times here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="acp-bridge-runs-bench-") as name:
        folder = Path(name)
        os.chdir(folder)
        results: dict[str, list[float]] = {}
        for phase, bench in (("detach", bench_detach), ("wait", bench_wait)):
            fresh_store(folder, phase).close()
            results.update(bench(args.rounds))
        store = fresh_store(folder, "ps")
        results.update(bench_ps(args.rounds, args.records, store))
        store.close()
        close_stores()
    report(results)
    if args.json:
        args.json.write_text(json.dumps({"wall": results, "cpu": CPU}, indent=1))


if __name__ == "__main__":
    main()
