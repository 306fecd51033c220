"""compare on a real Ray cluster: the attempts run on the nodes (each in its worktree of a
repository the nodes reach at the same path), their diffs come back with their envelopes,
and the verifier and apply work on those diffs here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acp_bridge._batch.ray.ray_executor import RayExecutor
from acp_bridge._compare.compare_result import CompareResult
from acp_bridge._compare.comparison import compare
from acp_bridge._os.fs.locations import state_dir
from acp_bridge.config import load_config
from tests.helpers import git, new_repo
from tests.ray.conftest import RayTestCluster

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240)]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return new_repo(tmp_path / "repo")


def test_the_attempts_run_on_the_nodes_and_their_diffs_come_back(
    ray_cluster: RayTestCluster, repo: Path
) -> None:
    loaded = load_config(ray_cluster.config, search=False, environ=dict(os.environ))
    executor = RayExecutor(ray_cluster.address)

    async def main() -> CompareResult:
        with anyio.fail_after(180):
            return await compare(
                "demo", "write expected.txt: made on a node", n=2, verify="test -f expected.txt",
                apply=True, cwd=repo, config=loaded, executor=executor,
            )  # fmt: skip

    result = anyio.run(main)
    workers = {ray_cluster.node_id(node) for node in ray_cluster.workers}
    assert len(result.attempts) == 2
    for attempt in result.attempts:
        assert attempt.envelope.meta.node in workers  # ran on a worker node, not here
        assert attempt.verifier is not None and attempt.verifier.passed
        assert attempt.diff is not None  # brought back, kept under this machine's state
        assert Path(attempt.diff).is_relative_to(state_dir() / "batches" / attempt.task_id)
        assert (attempt.files, attempt.added, attempt.removed) == (1, 1, 0)
    assert result.winner in {a.task_id for a in result.attempts}
    assert result.apply is not None and result.apply.applied
    assert (repo / "expected.txt").read_text().strip() == "made on a node"
    assert git(repo, "worktree", "list").count("\n") == 1
    assert git(repo, "branch", "--list", "acp-bridge/*") == ""


def test_the_cli_runs_compare_on_the_cluster(ray_cluster: RayTestCluster, repo: Path) -> None:
    command = [sys.executable, "-m", "acp_bridge", "compare", "demo", "Reply with exactly HI",
               "--n", "2", "--executor", "ray", "--address", ray_cluster.address,
               "--json"]  # fmt: skip
    done = subprocess.run(
        command, cwd=repo, env=ray_cluster.env(), capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    workers = {ray_cluster.node_id(node) for node in ray_cluster.workers}
    assert {a["envelope"]["meta"]["node"] for a in document["attempts"]} <= workers
    assert document["reason"].startswith("fastest of the 2 attempt(s) that ended done")
    assert git(repo, "branch", "--list", "acp-bridge/*") == ""
