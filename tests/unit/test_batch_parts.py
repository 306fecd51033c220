"""The pure parts of batches: tasks from JSON, placement, the results file, uploads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_bridge._batch.placement import NodeView, requirements, why_not
from acp_bridge._batch.results_file import ResultsFile
from acp_bridge._batch.tasks import keyed, task_from_json
from acp_bridge._batch.workspace import pack
from acp_bridge._entries.request import EntryRequest
from acp_bridge.envelope import done, failed
from acp_bridge.errors import ConfigError, ErrorCode, LimitExceeded


def test_a_task_is_a_request_plus_key_and_workspace() -> None:
    task = task_from_json(
        {"key": "a", "entry": "bash", "task": "ls", "timeout": 5, "workspace": {"files": {}}}
    )
    assert task.key == "a"
    assert task.request == EntryRequest(entry="bash", task="ls", timeout=5)
    assert task.workspace is not None and task.workspace.files == {}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"entry": "acp_spawn", "task": "hi"}, "acp_spawn needs an agent"),
        ({"entry": "bash", "task": "ls", "colour": 1}, "colour: Extra inputs"),
        ({"entry": "bash", "task": "ls", "key": ""}, "key must be a non-empty string"),
        ({"entry": "bash", "task": "ls", "cwd": "/", "workspace": {}}, "cwd and workspace"),
        ({"entry": "bash", "task": "x", "workspace": {"files": {"../a": ""}}}, "inside the"),
        ({"entry": "bash", "task": "x", "workspace": {"upload": "a", "git": "b"}}, "give one"),
    ],
)
def test_bad_tasks_are_refused_clearly(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        task_from_json(data)


def test_keys_default_to_positions_and_must_be_unique() -> None:
    tasks = keyed([{"entry": "bash", "task": "a"}, {"key": "k", "entry": "bash", "task": "b"}])
    assert [(t.index, t.key) for t in tasks] == [(0, "0"), (1, "k")]
    with pytest.raises(ConfigError, match="task 1: key '0' is also task 0's"):
        keyed([{"entry": "bash", "task": "a"}, {"key": "0", "entry": "bash", "task": "b"}])


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


def envelope(key: str, *, interrupted: bool = False, ok: bool = True) -> dict[str, object]:
    batch = {"key": key, "index": 0, "node": "n", "attempts": 1}
    if interrupted:
        batch["interrupted"] = True
    result = done("x") if ok else failed("stop", ErrorCode.CANCELLED)
    data = result.to_dict()
    data["meta"]["batch"] = batch
    return data


def test_results_file_resumes_and_survives_a_torn_journal(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text(json.dumps(envelope("a")) + "\n")
    journal = tmp_path / "out.jsonl.journal"
    journal.write_text(
        json.dumps(envelope("b"))
        + "\n"
        + json.dumps(envelope("c", interrupted=True, ok=False))
        + "\n"
        + json.dumps(envelope("d"))[:40]  # a crash mid-line
    )
    results = ResultsFile(path)
    assert set(results.load()) == {"a", "b", "c"}
    assert results.done_keys() == {"a", "b"}  # c was ended by an interrupt: it runs again
    assert results.write(["c", "b", "a"]) == 3
    assert not journal.exists()
    keys = [json.loads(line)["meta"]["batch"]["key"] for line in path.read_text().splitlines()]
    assert keys == ["c", "b", "a"]


def test_results_file_refuses_a_file_that_is_not_results(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"entry": "bash", "task": "ls"}\n')
    with pytest.raises(ConfigError, match=r"tasks\.jsonl:1: not an envelope"):
        ResultsFile(path).load()


def test_an_upload_past_its_bound_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 200_000)
    (tmp_path / "small").write_text("s")
    assert len(pack(tmp_path, 1_000_000)) > 200_000
    with pytest.raises(LimitExceeded, match="more than 100000 bytes packed"):
        pack(tmp_path, 100_000)
