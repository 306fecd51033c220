"""The CLI on a real Ray cluster: smoke verdicts as locally, a resumed batch, an interrupt,
a broken runtime environment, and ``acp-bridge worker`` joining the cluster."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import processes_with
from tests.ray.conftest import RayTestCluster

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240)]

SUITE = """
name: matrix
defaults: {agents: [demo, demo-frozen], timeout: 30}
cases:
  - name: replies
    task: Reply with exactly OK
    expect: {status: done, output: OK}
  - name: wrong
    task: Reply with exactly YES
    expect: {output: NO}
  - name: writes a file
    task: "write out.txt: hello"
    expect: {status: done, files: {out.txt: {contains: hello}, in.txt: {contains: seed}}}
    files: {in.txt: seed data}
  - name: misses a file
    task: Reply with exactly OK
    expect: {files: {never.txt: {exists: true}}}
  - name: bash
    entry: bash
    command: cat in.txt
    files: {in.txt: from the suite}
    expect: {envelope: {output: {stdout: from the suite}}}
"""


def cli(cluster: RayTestCluster, *args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", *args],
        cwd=cwd,
        env=cluster.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def demo_agents(marker: str, agent: list[bytes] | None = None) -> list[int]:
    """The demo agents (or those whose argv goes on with ``agent``) carrying ``marker``: not
    bwrap's own processes (their command lines name the agent too) nor a shell on the way
    to it."""
    wanted = agent or [b"-m", b"acp_bridge._demo.agent"]
    found = []
    for pid in processes_with(marker):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1 : 1 + len(wanted)] == wanted:
            found.append(pid)
    return found


def _ignores_sigterm(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGTERM (its ``SigIgn`` mask in ``/proc``)."""
    with contextlib.suppress(OSError, StopIteration, ValueError):
        status = Path(f"/proc/{pid}/status").read_text()
        ignored = next(line for line in status.splitlines() if line.startswith("SigIgn:"))
        return bool(int(ignored.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


def verdicts(junit: Path) -> dict[str, str]:
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        found[case.get("name", "")] = kinds[0] if kinds else "passed"
    return found


def test_a_smoke_matrix_gives_the_same_verdicts_on_the_cluster(
    ray_cluster: RayTestCluster, tmp_path: Path
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    # demo-frozen is offered by no node of this test: add one that offers it
    extra = ray_cluster.add_worker({"agent:demo-frozen": 4})
    try:
        reports = {}
        for executor in ("local", "ray"):
            junit, report = tmp_path / f"{executor}.xml", tmp_path / f"{executor}.json"
            extra_args = ["--address", ray_cluster.address] if executor == "ray" else []
            process = cli(
                ray_cluster, "smoke", str(suite), "--parallel", "4", "--executor", executor,
                *extra_args, "--junit", str(junit), "--json", str(report), cwd=tmp_path,
            )  # fmt: skip
            _, err = process.communicate(timeout=180)
            assert process.returncode == 1, err  # two cases fail by design, per agent
            reports[executor] = (verdicts(junit), json.loads(report.read_text()))
    finally:
        ray_cluster.remove(extra)
    local, remote = reports["local"], reports["ray"]
    assert local[0] == remote[0]
    assert sorted(local[0].values()).count("failure") == 4
    assert [c["failures"] for c in local[1]["cases"]] == [c["failures"] for c in remote[1]["cases"]]
    workers = {ray_cluster.node_id(n) for n in [*ray_cluster.workers, extra]}
    nodes = {c["envelope"]["meta"]["node"] for c in remote[1]["cases"]}
    assert nodes <= workers


def test_a_resumed_batch_runs_only_the_missing_keys(
    ray_cluster: RayTestCluster, tmp_path: Path
) -> None:
    tasks = [
        {"key": f"k{i}", "entry": "acp_spawn", "agent": "demo", "task": f"Reply with exactly {i}"}
        for i in range(8)
    ]
    path = tmp_path / "tasks.jsonl"
    out = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks[:5]))
    address = ["--executor", "ray", "--address", ray_cluster.address]
    process = cli(ray_cluster, "batch", str(path), "--out", str(out), *address, cwd=tmp_path)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    before = {json.loads(x)["meta"]["batch"]["key"]: x for x in out.read_text().splitlines()}
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    process = cli(ray_cluster, "batch", str(path), "--out", str(out), *address, cwd=tmp_path)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "3 tasks ran: 3 done, 0 failed; 5 already in the results file" in err
    after = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["meta"]["batch"]["key"] for e in after] == [f"k{i}" for i in range(8)]
    assert [e["output"] for e in after] == [str(i) for i in range(8)]
    kept = {e["meta"]["batch"]["key"]: json.dumps(e) for e in after[:5]}
    assert {k: json.loads(v) for k, v in kept.items()} == {
        k: json.loads(v) for k, v in before.items()
    }


def test_an_interrupted_batch_cancels_its_tasks_on_their_nodes(
    ray_cluster: RayTestCluster, tmp_path: Path
) -> None:
    tasks = [
        {"key": "quick", "entry": "acp_spawn", "agent": "demo", "task": "Reply with exactly Q"}
    ]
    tasks += [
        {"key": f"slow{i}", "entry": "acp_spawn", "agent": "demo", "task": "sleep 60"}
        for i in range(4)
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    out = tmp_path / "results.jsonl"
    address = ["--executor", "ray", "--address", ray_cluster.address]
    process = cli(ray_cluster, "batch", str(path), "--out", str(out), *address, cwd=tmp_path)
    deadline = time.monotonic() + 90
    journal = tmp_path / "results.jsonl.journal"
    # every slow task's agent runs on a node, and the quick one has ended (each agent's
    # sandbox has processes of its own with the marker: count the agents themselves)
    while len(demo_agents(ray_cluster.marker)) < 4 or not journal.exists():
        assert time.monotonic() < deadline and process.poll() is None, "tasks never started"
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    results = {
        json.loads(x)["meta"]["batch"]["key"]: json.loads(x)
        for x in out.read_text().split("\n")
        if x
    }
    assert results["quick"]["status"] == "done"
    for i in range(4):
        slow = results[f"slow{i}"]
        assert slow["meta"]["error_code"] == "cancelled", slow["error"]
        assert slow["meta"]["batch"]["interrupted"] is True
        assert slow["meta"]["node"]  # it had started there, and ended there
        # ended by the entry wrapper on its node (depth is its stamp), not force-cancelled here
        assert slow["meta"].get("depth") == 1, (slow["error"], slow["meta"])


def test_an_interrupt_that_outlasts_rays_abort_alarm_still_ends_the_batch(
    ray_cluster: RayTestCluster, tmp_path: Path
) -> None:
    # Ray's core worker meets a SIGTERM with abseil's failure handler, which aborts the
    # process 3 s later. This task's agent ignores its cancel and SIGTERM, so ending it
    # takes most of the wind-down's 4 s: the CLI died of SIGABRT (-6) before it ended.
    path = tmp_path / "tasks.jsonl"
    task = {"key": "stubborn", "entry": "acp_spawn", "agent": "demo-stubborn", "task": "go"}
    path.write_text(json.dumps(task) + "\n")
    out = tmp_path / "results.jsonl"
    address = ["--executor", "ray", "--address", ray_cluster.address]
    process = cli(ray_cluster, "batch", str(path), "--out", str(out), *address, cwd=tmp_path)
    deadline = time.monotonic() + 90
    unruly = [str(Path(__file__).parents[1] / "agents" / "unruly_agent.py").encode()]
    # Deaf from the moment it ignores SIGTERM (the first thing it does then; it never reads
    # its stdin again).
    while not any(_ignores_sigterm(pid) for pid in demo_agents(ray_cluster.marker, unruly)):
        assert time.monotonic() < deadline and process.poll() is None, "the task never started"
        time.sleep(0.05)
    interrupted = time.monotonic()
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    took = time.monotonic() - interrupted
    assert process.returncode == 130, err
    assert took > 3, f"ended in {took:.1f} s: the test did not outlast the alarm"
    [envelope] = [json.loads(line) for line in out.read_text().splitlines()]
    assert envelope["meta"]["error_code"] == "cancelled", envelope["error"]
    assert envelope["meta"]["batch"]["interrupted"] is True


def test_a_broken_runtime_environment_fails_every_task_within_seconds(
    ray_cluster: RayTestCluster, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"key": f"k{i}", "entry": "bash", "task": "true"}) + "\n"
                            for i in range(3)))  # fmt: skip
    started = time.monotonic()
    process = cli(
        ray_cluster, "batch", str(path), "--executor", "ray", "--address", ray_cluster.address,
        "--runtime-env", json.dumps({"conda": "no-such-env-anywhere"}), cwd=tmp_path,
    )  # fmt: skip
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1, err
    assert time.monotonic() - started < 45
    results = [json.loads(line) for line in out.splitlines()]
    assert len(results) == 3
    for result in results:
        assert result["meta"]["error_code"] == "executor_error"
        assert "runtime environment" in result["error"]


def test_worker_joins_the_cluster_offering_its_ready_agents(
    ray_cluster: RayTestCluster, tmp_path: Path
) -> None:
    import ray

    process = cli(
        ray_cluster, "worker", "--address", ray_cluster.address, "--agents", "demo",
        "--slots", "2", "--", "--num-cpus", "1", "--node-ip-address", "127.0.0.2",
        cwd=tmp_path,
    )  # fmt: skip
    try:
        ray.init(address=ray_cluster.address, logging_level="ERROR", log_to_driver=False)
        joined: list[dict[str, Any]] = []
        deadline = time.monotonic() + 60
        while not joined:
            assert time.monotonic() < deadline, process.stderr.read() if process.stderr else ""
            joined = [
                n for n in ray.nodes()
                if n["Alive"] and n["Resources"].get("acp-bridge") == 2.0
            ]  # fmt: skip
            time.sleep(0.2)
        assert joined[0]["Resources"]["agent:demo"] == 2.0
        assert not any(k.startswith("agent:") and k != "agent:demo" for k in joined[0]["Resources"])
    finally:
        ray.shutdown()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert "demo: ready" in err


def test_a_second_driver_on_the_same_results_file_is_refused(
    ray_cluster: RayTestCluster, tmp_path: Path
) -> None:
    # The task waits for a file the test makes (the nodes share this machine's files).
    wait = "touch started; while [ ! -e go ]; do sleep 0.05; done; echo ran"
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"key": "k", "entry": "bash", "task": wait, "cwd": str(tmp_path)}))
    out = tmp_path / "results.jsonl"
    address = ["--executor", "ray", "--address", ray_cluster.address]
    first = cli(ray_cluster, "batch", str(path), "--out", str(out), *address, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 90
        while not (tmp_path / "started").exists():
            assert time.monotonic() < deadline and first.poll() is None, "the task never started"
            time.sleep(0.05)
        second = cli(ray_cluster, "batch", str(path), "--out", str(out), *address, cwd=tmp_path)
        second_out, second_err = second.communicate(timeout=60)
        assert second.returncode == 2, second_err
        assert f"{out}: another batch is writing it (pid {first.pid} on " in second_err
        assert second_out == ""
    finally:
        (tmp_path / "go").touch()
    _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    [result] = [json.loads(line) for line in out.read_text().splitlines()]
    assert result["output"]["stdout"] == "ran\n"


def test_a_task_without_cwd_runs_in_a_fresh_workspace_on_its_node(
    ray_cluster: RayTestCluster, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.jsonl"
    task = {"key": "k", "entry": "bash", "task": "pwd; ls -A; echo new > made.txt"}
    path.write_text(json.dumps(task) + "\n")
    process = cli(
        ray_cluster, "batch", str(path), "--executor", "ray", "--address", ray_cluster.address,
        cwd=tmp_path,
    )  # fmt: skip
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    [result] = [json.loads(line) for line in out.splitlines()]
    where, *listed = result["output"]["stdout"].splitlines()
    assert listed == []  # empty, not the directory the node's processes started in
    assert f"acp-bridge-{result['task_id']}-" in where
    assert result["meta"]["files_changed"] == ["made.txt"]
    assert result["meta"]["batch"]["cwd"] == where
    workers = [ray_cluster.node_id(node) for node in ray_cluster.workers]
    assert result["meta"]["node"] in workers


def test_tasks_no_node_can_run_end_in_rows_that_agree_with_their_envelopes(
    ray_cluster: RayTestCluster, tmp_path: Path
) -> None:
    """2 000 tasks naming an agent no node offers all end at once, refused: every task's row
    in the run store ends with its envelope's status (at 100 000, 11 642 rows were ``lost``)."""
    import sqlite3

    task = {"entry": "acp_spawn", "agent": "no-such-agent", "task": "hi"}
    path = tmp_path / "tasks.jsonl"
    path.write_text((json.dumps(task) + "\n") * 2000)
    out, store = tmp_path / "results.jsonl", tmp_path / "runs.db"
    address = ["--executor", "ray", "--address", ray_cluster.address]
    process = subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "batch", str(path), "--out", str(out), *address],
        cwd=tmp_path,
        env={**ray_cluster.env(), "ACP_BRIDGE_RUNS_DB": str(store)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, err = process.communicate(timeout=200)
    assert process.returncode == 1, err[-2000:]
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(written) == 2000
    assert {e["meta"]["error_code"] for e in written} == {"executor_error"}
    rows = dict(sqlite3.connect(store).execute("SELECT id, status FROM runs").fetchall())
    assert rows == {e["task_id"]: e["status"] for e in written}
