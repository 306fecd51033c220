"""Durable-runs benchmark (docs/explanation/performance.md): detach, wait, ps.

    python benchmarks/runs.py [--rounds 15] [--records 1000] [--json OUT]

Everything runs against a fresh run store in a temporary folder, with real supervisors and
the real command line (``acp-bridge …`` as a new process, the way a host agent calls it):

- ``detach (in process)``: ``start_run_sync(EntryRequest(entry="bash", task="true"))``: the
  config read, the queue write, and the shell that forks the supervisor and exits;
- ``detach (cold CLI)``: ``acp-bridge bash --detach -- true`` and ``acp-bridge run --detach
  demo …`` as new processes, until they print ``{"task_id", "status": "queued"}`` and exit.
  Both quiet (the previous run ended first) and back to back (earlier supervisors still busy
  on the same cores), each next to ``python -c pass`` timed the same way (the floor any
  Python CLI pays under that load), and to a foreground ``acp-bridge run demo …`` (quiet);
- ``wait after end``: runs of ``sleep 0.5``; a waiter started before the end returns; the
  latency is the waiter's return time minus the ``ended_at`` the supervisor committed (both
  ``time.time()`` on this host). Measured for a waiter in this process and for a cold
  ``acp-bridge wait ID`` (its exit time, taken by this process as it reaps it);
- ``record``: a foreground ``acp-bridge bash -q -- true`` with ``runs.record`` true and false,
  taking turns: the record's cost is the paired difference (wall and CPU); and inside cold
  demo-agent runs, where that cost goes: the worker thread's insert (beside the run), how
  long the run waited for it, and the envelope's commit (on the critical path);
- ``ps``: the store holds N ended runs (1 KB envelopes, 20 events each) and 4 running ones
  (so the liveness check has work to do); ``list_runs()`` in this process, and a cold
  ``acp-bridge ps --all --json`` that lists and prints them all.

Targets: detach ≤ 0.3 s, wait ≤ 0.1 s after the end, ps ≤ 0.3 s with 1000 records.
Medians (and the worst round) are printed, with the cold processes' median CPU time: on a
shared machine their wall time grows with other people's load, their CPU time does not.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from acp_bridge import EntryRequest, load_config
from acp_bridge import __file__ as acp_bridge_file
from acp_bridge._os.process import proc
from acp_bridge._runs import unfinished
from acp_bridge._runs.caller.handle import list_runs, stop_run, wait_all_sync
from acp_bridge._runs.caller.start import start_run_sync
from acp_bridge._runs.store.run_records import NewRun
from acp_bridge._runs.store.run_store import Store, close_stores
from acp_bridge.errors import ErrorCode

TARGETS = {"detach": 0.3, "wait": 0.1, "ps": 0.3}
RUN_TIMEOUT = 60.0
CLI = str(Path(sys.executable).with_name("acp-bridge"))
DEMO_TASK = "Reply with exactly OK"


CPU: dict[str, list[float]] = {}
"""user+sys CPU seconds of the cold processes, by measure: unlike wall time, not inflated by
other work on a shared machine (the kernel's accounting, from ``wait4``)."""


def cold(argv: list[str], measure: str) -> tuple[float, str]:
    """Wall time of a fresh process running ``argv``, and what it printed; its CPU time goes
    to :data:`CPU` under ``measure``. (As in ``cold_start.py``: a blocking ``wait4`` for the
    child's own rusage, a timer that kills a hung child. The supervisor it starts is not
    counted: the backgrounding shell hands it over to init.)"""
    with tempfile.TemporaryFile() as out:
        began = time.monotonic()
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
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
        raise SystemExit(f"benchmark child failed with exit {code_}: {' '.join(argv)[:80]}…")
    CPU.setdefault(measure, []).append(usage.ru_utime + usage.ru_stime)
    return took, printed


def bench_detach(rounds: int) -> dict[str, list[float]]:
    """Quiet: each start once the previous run ended (one ``--detach`` now and then).
    Back to back: starts in a row while earlier supervisors still import the entry code on
    the same cores (a shell loop fanning out)."""
    config = load_config()
    floor_pass = [sys.executable, "-c", "pass"]
    detaches = {
        "detach bash (cold CLI)": [CLI, "bash", "--detach", "--", "true"],
        "detach run demo (cold CLI)": [CLI, "run", "--detach", "demo", DEMO_TASK],
    }
    results: dict[str, list[float]] = {}
    for mode in ("quiet", "back to back"):
        warm: list[float] = []
        ids: list[str] = []
        for _ in range(rounds):
            results.setdefault(f"  floor: python -c pass, {mode}", []).append(
                cold(floor_pass, f"  floor: python -c pass, {mode}")[0]
            )
            began = time.monotonic()
            ids.append(start_run_sync(EntryRequest(entry="bash", task="true"), config=config).id)
            warm.append(time.monotonic() - began)
            if mode == "quiet":
                wait_all_sync(ids[-1:], timeout=RUN_TIMEOUT)
            for name, argv in detaches.items():
                took, out = cold(argv, f"{name}, {mode}")
                results.setdefault(f"{name}, {mode}", []).append(took)
                started = json.loads(out)
                assert started["status"] == "queued", started
                ids.append(started["task_id"])
                if mode == "quiet":
                    wait_all_sync(ids[-1:], timeout=RUN_TIMEOUT)
            if mode == "quiet":
                name = "  reference: foreground run demo (cold CLI)"
                results.setdefault(name, []).append(cold([CLI, "run", "demo", DEMO_TASK], name)[0])
        ended = wait_all_sync(ids, timeout=RUN_TIMEOUT)
        assert all(run.status == "done" for run in ended), [run.summary for run in ended]
        results[f"detach, {mode} (in process)"] = warm
    return results


def bench_wait(rounds: int) -> dict[str, list[float]]:
    in_process, cold_waiter = [], []
    for _ in range(rounds):
        handle = start_run_sync(EntryRequest(entry="bash", task="sleep 0.5"))
        child = subprocess.Popen([CLI, "wait", handle.id], stdout=subprocess.PIPE, text=True)
        result = handle.wait_sync(timeout=RUN_TIMEOUT)
        returned = time.time()
        run = handle.record()
        assert result is not None and result.status == "done" and run.ended_at is not None
        in_process.append(returned - run.ended_at)
        out, _ = child.communicate(timeout=RUN_TIMEOUT)
        cold_return = time.time()  # the waiter printed and exited: communicate() saw EOF
        assert json.loads(out)["status"] == "done" and child.returncode == 0
        cold_waiter.append(cold_return - run.ended_at)
    return {
        "wait after end (in process)": in_process,
        "wait after end (cold acp-bridge wait)": cold_waiter,
    }


def bench_record(rounds: int, folder: Path) -> dict[str, list[float]]:
    """A foreground run recorded or not (``runs.record``), taking turns: the record's cost
    to a cold run is the difference of the paired rounds (``cold_start.py`` measures it on a
    demo-agent run too, where the record's thread overlaps the agent's start-up)."""
    configs = {}
    for name, record in (("recorded", "true"), ("not recorded", "false")):
        configs[name] = folder / f"{name.replace(' ', '-')}.yaml"
        configs[name].write_text(f"runs: {{record: {record}}}\n")
    labels = {name: f"  foreground bash -- true, {name} (cold CLI)" for name in configs}
    results: dict[str, list[float]] = {label: [] for label in labels.values()}
    for _ in range(rounds):
        for name, path in configs.items():
            took, _ = cold([CLI, "--config", str(path), "bash", "-q", "--", "true"], labels[name])
            results[labels[name]].append(took)
    with_record, without = labels["recorded"], labels["not recorded"]
    cost = "  record's cost (paired difference)"
    results[cost] = [a - b for a, b in zip(results[with_record], results[without], strict=True)]
    CPU[cost] = [a - b for a, b in zip(CPU[with_record], CPU[without], strict=True)]
    return results


CRITICAL_PATH = """
import json, sys, time
from acp_bridge._entries import enveloped
from acp_bridge._runs import foreground
spent = {}
begin, ended, recorded = foreground._Record.begin, foreground._Record.ended, enveloped._recorded

def timed_begin(self, config):
    began = time.perf_counter()
    begin(self, config)
    spent["begin"], spent["begun_at"] = time.perf_counter() - began, time.perf_counter()

def timed_ended(self, result, **kw):
    began = time.perf_counter()
    ended(self, result, **kw)
    spent["ended"] = time.perf_counter() - began

async def timed_recorded(record, body, ctx):
    async def timed_body(ctx):
        result = await body(ctx)
        spent["body_done_at"] = time.perf_counter()
        return result
    return await recorded(record, timed_body, ctx)

foreground._Record.begin, foreground._Record.ended = timed_begin, timed_ended
enveloped._recorded = timed_recorded
import acp_bridge
assert acp_bridge.acp_spawn_sync("demo", "Reply with exactly OK").status == "done"
waited = max(0.0, spent["begun_at"] - spent["body_done_at"])
print(json.dumps({"begin": spent["begin"], "waited": waited, "ended": spent["ended"]}))
"""


def bench_critical_path(rounds: int) -> dict[str, list[float]]:
    """Where a foreground record's cost goes in a cold demo-agent run (timed inside it): the
    worker thread's ``begin`` (beside the run), how long the run then waited for it, and
    ``ended`` (the envelope's commit, before the caller gets it)."""
    names = {
        "begin": "  record: begin, in its worker thread",
        "waited": "  record: the run waited for begin",
        "ended": "  record: ended, on the critical path",
    }
    results: dict[str, list[float]] = {name: [] for name in names.values()}
    for _ in range(rounds):
        _, out = cold([sys.executable, "-c", CRITICAL_PATH], "critical path (not reported)")
        for key, value in json.loads(out).items():
            results[names[key]].append(value)
    del CPU["critical path (not reported)"]
    return results


def fill(store: Store, records: int) -> None:
    me = proc.own_identity()
    output = "x" * 700
    for n in range(records):
        run = NewRun(
            id=f"sub_{n:012x}", entry="acp_spawn", agent="demo", task=f"task {n}", cwd="/tmp",
            caller_cwd="/tmp", request={"entry": "acp_spawn", "agent": "demo", "task": "t"},
            config_path=None, lane="agent:demo", group=None, env_key="bench",
        )  # fmt: skip
        store.create(run, me)
        current = store.get(run.id)
        assert current is not None
        result = unfinished.run_failed(current, "benchmark record", ErrorCode.AGENT_ERROR)
        outcome = unfinished.outcome(result.model_copy(update={"output": output}))
        event = json.dumps({"kind": "message", "task_id": run.id, "elapsed": 0.1, "text": "hi"})
        store.add_events(run.id, [event] * 20, 0)
        with store.write() as db:
            store.finish(db, run.id, outcome)


def bench_ps(rounds: int, records: int, store: Store) -> dict[str, list[float]]:
    fill(store, records)
    busy = [start_run_sync(EntryRequest(entry="bash", task="sleep 60")) for _ in range(4)]
    warm, cold_times = [], []
    try:
        for _ in range(rounds):
            began = time.monotonic()
            listed = list_runs()
            warm.append(time.monotonic() - began)
            assert len(listed) == records + 4
            took, out = cold([CLI, "ps", "--all", "--json"], f"ps, {records} records (cold CLI)")
            assert len(json.loads(out)) == records + 4
            cold_times.append(took)
    finally:
        for handle in busy:
            stop_run(handle.id)
        wait_all_sync([h.id for h in busy], timeout=RUN_TIMEOUT)
    return {
        f"ps, {records} records (in process)": warm,
        f"ps, {records} records (cold CLI)": cold_times,
    }


def report(results: dict[str, list[float]]) -> None:
    print(f"{'measure':52} {'median':>9} {'worst':>9} {'CPU':>8} {'target':>8}")
    for name, times in results.items():
        key = name.split(" ")[0].split(",")[0]
        target = TARGETS.get(key)
        mark = "" if target is None else f"≤ {target:g} s"
        median, worst = statistics.median(times), max(times)
        cpu = f"{statistics.median(CPU[name]) * 1000:6.1f}ms" if name in CPU else ""
        print(f"{name:52} {median * 1000:7.1f}ms {worst * 1000:7.1f}ms {cpu:>8} {mark:>8}")


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
    # As cold_start.py: an editable install under PYTHONDONTWRITEBYTECODE has no bytecode,
    # and every cold command would then time compiling the package too.
    compileall.compile_dir(Path(acp_bridge_file).parent, quiet=1)
    with tempfile.TemporaryDirectory(prefix="acp-bridge-runs-bench-") as name:
        folder = Path(name)
        os.chdir(folder)
        # No config file, transcripts and state in a scratch place: the defaults, isolated.
        for variable in [v for v in os.environ if v.startswith("ACP_BRIDGE_")]:
            del os.environ[variable]
        os.environ.update(XDG_CONFIG_HOME=str(folder / "config"), XDG_STATE_HOME=name)
        results: dict[str, list[float]] = {}
        for phase, bench in (("detach", bench_detach), ("wait", bench_wait)):
            fresh_store(folder, phase).close()
            results.update(bench(args.rounds))
        fresh_store(folder, "record").close()
        results.update(bench_record(args.rounds, folder))
        results.update(bench_critical_path(args.rounds))
        store = fresh_store(folder, "ps")
        results.update(bench_ps(args.rounds, args.records, store))
        store.close()
        close_stores()
    report(results)
    if args.json:
        args.json.write_text(json.dumps({"wall": results, "cpu": CPU}, indent=1))


if __name__ == "__main__":
    main()
