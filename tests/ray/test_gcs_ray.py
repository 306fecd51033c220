"""A Ray cluster whose control store (GCS) dies under a batch: a module of its own, since
the test ends its cluster."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.ray.conftest import RayTestCluster
from tests.ray.test_cli_ray import cli

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240)]


def test_a_lost_gcs_ends_the_batch_with_every_ended_task_written(
    ray_cluster: RayTestCluster, tmp_path: Path
) -> None:
    tasks = [{"key": f"q{i}", "entry": "bash", "task": f"echo {i}"} for i in range(3)]
    tasks += [{"key": f"s{i}", "entry": "bash", "task": "sleep 60"} for i in range(4)]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    out = tmp_path / "results.jsonl"
    address = ["--executor", "ray", "--address", ray_cluster.address]
    process = cli(ray_cluster, "batch", str(path), "--out", str(out), *address, cwd=tmp_path)
    journal = tmp_path / "results.jsonl.journal"
    deadline = time.monotonic() + 90
    while not (journal.exists() and journal.read_text().count("\n") >= 3):
        assert time.monotonic() < deadline and process.poll() is None, "the quick ones never ended"
        time.sleep(0.05)
    ray_cluster.cluster.head_node.all_processes["gcs_server"][0].process.kill()
    # Ray itself would end the driver 60 s later (exit 1), the results file not written.
    _, err = process.communicate(timeout=120)
    assert process.returncode == 1, err
    results = {
        envelope["meta"]["batch"]["key"]: envelope
        for envelope in (json.loads(line) for line in out.read_text().splitlines())
    }
    assert sorted(results) == sorted(task["key"] for task in tasks)
    for i in range(3):
        assert results[f"q{i}"]["status"] == "done"
        assert results[f"q{i}"]["output"]["stdout"] == f"{i}\n"
    for i in range(4):
        slow = results[f"s{i}"]
        assert slow["meta"]["error_code"] == "executor_error", slow["error"]
        assert "lost the Ray cluster: its control store (GCS)" in slow["error"]
    assert "executor_error 4" in err
