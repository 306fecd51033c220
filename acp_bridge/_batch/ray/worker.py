"""Joining a Ray cluster as a bridge worker: the node offers what it can run.

``acp-bridge worker --address HEAD:PORT`` runs the doctor's checks on the profiles (is the
command there, the sandbox, its version, and the proof: the agent started in its sandbox
through ``initialize`` and ``session/new`` without asking for a key) and starts a Ray node
that offers :data:`~.placement.SLOT` (its task slots) and ``agent:<profile>`` for each
profile that is ready — so a batch's ``acp_spawn`` tasks land only where their agent can
start and open a session. The node
inherits this process's environment, with ``ACP_BRIDGE_CONFIG`` pointing at the config the
checks read, so its tasks use the same profiles.

The node is Ray's own ``ray start --block``: this process becomes it (``exec``), so stopping
it (Ctrl-C, SIGTERM, a service manager) stops the node and everything it runs. Never
``ray stop``: it kills every Ray process of the machine by name, other users' too.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from acp_bridge._agents.doctor import Report, diagnose
from acp_bridge._batch.ray.placement import SLOT, agent_resource
from acp_bridge.config import LoadedConfig
from acp_bridge.errors import ConfigError


@dataclass(frozen=True)
class WorkerPlan:
    """What the node will offer, and the command that starts it."""

    ready: list[str]
    reports: list[Report]
    resources: dict[str, float]
    argv: list[str]
    env: dict[str, str]


async def plan_worker(
    loaded: LoadedConfig,
    address: str,
    *,
    profiles: Sequence[str] = (),
    slots: int | None = None,
    ray_args: Sequence[str] = (),
) -> WorkerPlan:
    """Check the profiles (all, or ``profiles``) and plan the node; :class:`ConfigError`
    when no profile is ready (a node that offers nothing would only take slots)."""
    reports = await diagnose(loaded, list(profiles))
    ready = [report.profile for report in reports if report.ready]
    if not ready:
        raise ConfigError(
            "no profile is ready here (see acp-bridge doctor): this node would offer no agent"
        )
    slots = slots or os.cpu_count() or 1
    resources = {SLOT: float(slots), **{agent_resource(name): float(slots) for name in ready}}
    argv = [
        *_ray_command(),
        "start",
        "--address",
        address,
        "--resources",
        json.dumps(resources),
        "--block",
        *ray_args,
    ]
    env = dict(os.environ)
    if loaded.path is not None:
        env["ACP_BRIDGE_CONFIG"] = str(loaded.path.absolute())
    return WorkerPlan(ready, reports, resources, argv, env)


def _ray_command() -> list[str]:
    """Ray's command line tool: beside this interpreter (a virtualenv), else on PATH."""
    here = os.path.dirname(sys.executable)  # noqa: PTH120
    found = shutil.which("ray", path=os.pathsep.join([here, os.environ.get("PATH", "")]))
    if found is None:
        raise ConfigError("ray is not installed: pip install 'acp-bridge[ray]'")
    return [found]


def start_worker(plan: WorkerPlan) -> None:
    """Become the Ray node (never returns)."""
    os.execve(plan.argv[0], plan.argv, plan.env)
