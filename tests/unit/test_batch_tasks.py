"""Tasks of a batch: from JSON, keys, refusals."""

from __future__ import annotations

import pytest

from acp_bridge._batch.tasks import keyed, task_from_json
from acp_bridge._entries.request import EntryRequest
from acp_bridge.errors import ConfigError


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
        ({"entry": "bash", "task": "ls", "colour": 1}, "colour"),
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


def test_explicit_task_ids_must_be_unique() -> None:
    tasks = keyed(
        [{"entry": "bash", "task": "a", "task_id": "one"}, {"entry": "bash", "task": "x"}]
    )
    assert [t.task.request.task_id for t in tasks] == ["one", None]
    with pytest.raises(ConfigError, match="task 2: task_id 'one' is also task 0's"):
        keyed([
            {"entry": "bash", "task": "a", "task_id": "one"},
            {"entry": "bash", "task": "b", "task_id": "two"},
            {"entry": "bash", "task": "c", "task_id": "one"},
        ])  # fmt: skip
