"""The Ray executor's tests (``-m ray -n 0``), on a real multi-node Ray cluster on this machine.

``ray.cluster_utils.Cluster``: a 1-CPU head (not a bridge worker: it offers no slot, so no
task lands there) and two 1-CPU workers, each offering 4 slots and the ``demo`` agent.
Tests that kill or freeze a node add a node of their own and remove it; the two shared
workers stay for the whole module.

Isolation from whatever else runs on the machine:

- the nodes bind 127.0.0.2 (Ray rewrites 127.0.0.1 to the machine's address);
- Ray gets a HOME of its own (a stray ``~/.ray`` token would switch authentication on) and a
  TMPDIR of its own (its sockets, logs and the "current cluster" file, which it would
  otherwise write into the machine's ``/tmp/ray``);
- every port is picked free (GCS port 0, no dashboard);
- the cluster is ended by removing its own nodes, never ``ray stop`` (which kills every
  Ray process of the machine by name).

Every agent these tests start carries the module's marker, so what a lost node or a
cancelled task leaves behind is found.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MARKER_VAR, processes_with

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

NODE_IP = "127.0.0.2"
WORKER_SLOTS = 4


@dataclass
class RayTestCluster:
    cluster: Any
    home: Path
    config: Path
    marker: str
    workers: list[Any] = field(default_factory=list)

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def add_worker(self, resources: dict[str, float] | None = None) -> Any:
        offered = {"acp-bridge": WORKER_SLOTS, "agent:demo": WORKER_SLOTS, **(resources or {})}
        return self.cluster.add_node(num_cpus=1, node_ip_address=NODE_IP, resources=offered)

    def node_id(self, node: Any) -> str:
        return str(node.node_id)

    def node_pids(self, node: Any) -> list[int]:
        """The node's raylet and every process below it (its workers, their agents)."""
        raylet = node.all_processes["raylet"][0].process.pid
        return _descendants(raylet)

    def remove(self, node: Any) -> None:
        with contextlib.suppress(Exception):
            for pid in self.node_pids(node):
                os.kill(pid, signal.SIGCONT)  # a frozen node cannot die gracefully
        self.cluster.remove_node(node, allow_graceful=False)

    def env(self) -> dict[str, str]:
        """The environment of a CLI process that drives a batch on this cluster."""
        return {**os.environ, "ACP_BRIDGE_CONFIG": str(self.config)}


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayTestCluster]:
    # Short paths: Ray's unix sockets live under TMPDIR (108 bytes at most).
    scratch = Path(tempfile.mkdtemp(prefix="acpb-ray-"))
    home, tmp = scratch / "home", scratch / "t"
    home.mkdir()
    (tmp / "ray").mkdir(parents=True)
    marker = uuid.uuid4().hex
    config = tmp_path_factory.mktemp("ray-config") / "acp-bridge.yaml"
    common = {
        "env": {MARKER_VAR: marker},
        "timeouts": {"shutdown_grace": 1, "cancel_grace": 1},
    }
    # demo-frozen: the demo agent under a name only the node a test freezes offers
    frozen = {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]}
    # demo-stubborn: an agent deaf to its cancel and to SIGTERM: ending it takes most of
    # the wind-down's bound (END_GRACE, 4 s), its graces cut to fit
    unruly = Path(__file__).parents[1] / "agents" / "unruly_agent.py"
    stubborn = {"command": sys.executable, "args": [str(unruly), "deaf", "0"], **common}
    agents = [
        {"name": "demo", **common},
        {"name": "demo-frozen", **frozen, **common},
        {"name": "demo-stubborn", **stubborn},
    ]
    config.write_text(json.dumps({"acp": {"agents": agents}}))
    saved = {name: os.environ.get(name) for name in ("HOME", "TMPDIR", "ACP_BRIDGE_CONFIG")}
    os.environ.update(HOME=str(home), TMPDIR=str(tmp), ACP_BRIDGE_CONFIG=str(config))
    head = {"num_cpus": 1, "node_ip_address": NODE_IP, "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args={**head, "gcs_server_port": 0})
    made = RayTestCluster(cluster, home, config, marker)
    try:
        stubborn_slot = {"agent:demo-stubborn": 1}
        made.workers = [made.add_worker(stubborn_slot), made.add_worker(stubborn_slot)]
        yield made
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        left = processes_with(marker)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
        assert not left, f"agents left behind by the ray tests: {left}"
