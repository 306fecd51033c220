"""Placement: which live node may run a task, and what a refusal says."""

from __future__ import annotations

from acp_bridge._batch.ray.placement import NodeView, requirements, why_not
from acp_bridge._entries.request import EntryRequest


def node(name: str, *agents: str, alive: bool = True, worker: bool = True) -> NodeView:
    resources = {f"agent:{a}": 4.0 for a in agents} | ({"acp-bridge": 4.0} if worker else {})
    return NodeView(name * 8, "10.0.0.1", alive, resources)


def test_placement_needs_a_live_node_offering_the_agent() -> None:
    demo = EntryRequest(entry="acp_spawn", agent="demo", task="hi")
    shell = EntryRequest(entry="bash", task="ls")
    assert requirements(demo) == {"acp-bridge": 1.0, "agent:demo": 1.0}
    assert requirements(shell) == {"acp-bridge": 1.0}
    nodes = [node("a", "codex"), node("b", "demo", alive=False), node("h", worker=False)]
    why = why_not(demo, nodes)
    assert why is not None
    assert why.startswith("no live node offers agent 'demo'")
    assert "aaaaaaaa (10.0.0.1): codex" in why and "not a bridge worker" in why
    assert "bbbbbbbb" not in why  # dead nodes are not offered as seen
    assert why_not(shell, nodes) is None
    assert why_not(demo, [*nodes, node("c", "demo")]) is None
