"""Which Ray node may run which task: custom resources, and the nodes seen.

A node joins a cluster as a bridge worker by offering :data:`SLOT` (how many tasks it
runs at once) and, for each agent profile it can start, ``agent:<profile>`` (how many of
that agent's tasks at once) — ``acp-bridge worker`` works these out with the doctor's
checks. A task asks for one slot, and one of its agent's when it is an ``acp_spawn``. A task
no live node could ever take is refused at once, naming what it needs and what the nodes
offer, instead of waiting in Ray's queue for a node that may never come.

Pure functions over the node list Ray reports (``ray.nodes()``): no Ray import here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acp_bridge._entries.request import EntryRequest

SLOT = "acp-bridge"
"""The resource every bridge worker offers: its task slots."""
AGENT_PREFIX = "agent:"


def agent_resource(profile: str) -> str:
    return f"{AGENT_PREFIX}{profile}"


def requirements(request: EntryRequest) -> dict[str, float]:
    """The custom resources one attempt of ``request`` holds while it runs."""
    needs = {SLOT: 1.0}
    if request.entry == "acp_spawn" and request.agent:
        needs[agent_resource(request.agent)] = 1.0
    return needs


@dataclass(frozen=True)
class NodeView:
    """A node as the batch sees it."""

    node_id: str
    address: str
    alive: bool
    resources: Mapping[str, float]

    @property
    def short(self) -> str:
        return self.node_id[:8]

    @property
    def agents(self) -> list[str]:
        return sorted(k[len(AGENT_PREFIX) :] for k in self.resources if k.startswith(AGENT_PREFIX))

    def describe(self) -> str:
        if SLOT not in self.resources:
            return f"{self.short} ({self.address}): not a bridge worker"
        agents = ", ".join(self.agents) or "no agent"
        return f"{self.short} ({self.address}): {agents}"


def nodes_from_ray(raw: Iterable[Mapping[str, Any]]) -> list[NodeView]:
    """``ray.nodes()`` as views."""
    return [
        NodeView(
            str(node.get("NodeID", "")),
            str(node.get("NodeManagerAddress", "")),
            bool(node.get("Alive")),
            dict(node.get("Resources") or {}),
        )
        for node in raw
    ]


def why_not(request: EntryRequest, nodes: Sequence[NodeView]) -> str | None:
    """Why no live node could run ``request`` (None: some node could)."""
    live = [node for node in nodes if node.alive]
    needs = requirements(request)
    if any(all(node.resources.get(k, 0) >= v for k, v in needs.items()) for node in live):
        return None
    seen = "; ".join(node.describe() for node in live) or "none"
    if request.entry == "acp_spawn" and request.agent:
        what = f"agent {request.agent!r}"
    else:
        what = f"a bridge worker for {request.entry}"
    return f"no live node offers {what} (nodes seen: {seen})"
