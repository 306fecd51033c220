"""Permission requests and commands in the shapes real agents send them (issue 33), through a
real agent process (tests/agents/told_agent.py) under the default policy, in each sandbox
mode and with the sandbox off:

- pydantic-acp's approved tool ``update_note(name, content)`` asks with kind ``edit`` and no
  location, then writes in its own process: allowed where the OS sandbox holds that write
  to the write roots (and the write outside them fails there anyway), refused without one;
- kimi's ``Write`` asks with no kind (its ``tool_call`` update said ``edit``) and no path,
  then writes through ``fs/write_text_file``, which is judged by its path;
- kimi runs every command as ``bash -c "cd '<cwd>' && CMD"``: a rule for CMD matches it; a
  ``cd`` anywhere else keeps the line compound.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_bridge.config import LoadedConfig
from tests.conftest import AgentHarness

TOLD = Path(__file__).parents[1] / "agents" / "told_agent.py"
MODES = ["bwrap", "landlock"]


def told(harness: AgentHarness, mode: str, **profile: Any) -> LoadedConfig:
    agent = {"command": sys.executable, "args": [str(TOLD)], "sandbox": {"mode": mode}}
    return harness.config({"told": {**agent, **profile}})


def answers(harness: AgentHarness, mode: str, steps: list[dict[str, Any]], **profile: Any) -> Any:
    result = harness.run("told", json.dumps(steps), told(harness, mode, **profile))
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    return result, json.loads(result.output)


@pytest.fixture
def elsewhere() -> Iterator[Path]:
    """A folder outside /tmp (whose writes would land in the run's private /tmp) and
    outside every write root: read-only inside the sandbox."""
    path = Path(tempfile.mkdtemp(prefix="shapes-", dir=Path(__file__).parent))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("mode", [*MODES, "off"])
def test_an_edit_that_names_no_path_passes_only_in_a_sandbox(
    harness: AgentHarness, mode: str, elsewhere: Path
) -> None:
    note = harness.workspace / "notes" / "todo.md"
    note.parent.mkdir()
    outside = elsewhere / "outside.md"
    ask: dict[str, Any] = {"ask": {"title": "update_note", "kind": "edit",
                   "rawInput": {"name": "todo", "content": "buy milk"}}}  # fmt: skip
    steps = [ask, {"write": str(note), "content": "buy milk"},
             ask, {"write": str(outside), "content": "buy milk"}]  # fmt: skip
    result, done = answers(harness, mode, steps)
    reasons = [r.reason for r in result.meta.permissions or []]
    if mode == "off":
        assert done == ["rejected", "not allowed", "rejected", "not allowed"]
        assert "with the sandbox off nothing holds the agent's own writes" in reasons[0]
        assert not note.exists()
        return
    assert done[:3] == ["allowed", "wrote", "allowed"]
    assert done[3].startswith("error:")  # the sandbox, not the policy, stops this one
    assert f"allowed because the {mode} sandbox keeps" in reasons[0]
    assert note.read_text() == "buy milk" and not outside.exists()
    assert result.meta.files_changed == [str(note)]


@pytest.mark.parametrize("mode", MODES)
def test_a_write_request_without_a_path_leaves_the_served_write_to_its_path(
    harness: AgentHarness, mode: str, tmp_path: Path
) -> None:
    inside, outside = harness.workspace / "new.txt", tmp_path / "outside.txt"
    said = [{"type": "content", "content": {"type": "text", "text": "Requesting approval"}}]
    steps: list[dict[str, Any]] = []
    for call, path in (("w1", inside), ("w2", outside)):
        arguments = json.dumps({"path": str(path), "content": "new"})  # as text, not rawInput
        text = [{"type": "content", "content": {"type": "text", "text": arguments}}]
        steps += [
            {"announce": {"toolCallId": call, "title": "Write", "kind": "edit", "content": text}},
            {"ask": {"toolCallId": call, "title": "Write", "content": said}},  # no kind, no path
            {"fs_write": str(path), "content": "new"},
        ]
    result, done = answers(harness, mode, steps)
    assert done[:5] == ["announced", "allowed", "wrote", "announced", "allowed"]
    assert "outside the write roots" in done[5] and "refused by the permission policy" in done[5]
    assert [r.kind for r in result.meta.permissions or []] == ["edit", "edit"]
    assert inside.read_text() == "new" and not outside.exists()
    assert [r.method for r in result.meta.refusals or []] == ["fs/write_text_file"]


@pytest.mark.parametrize("mode", MODES)
def test_a_command_wrapped_in_a_cd_to_its_cwd_is_judged_by_what_it_runs(
    harness: AgentHarness, mode: str
) -> None:
    ws = harness.workspace
    rules = [{"kind": "execute", "command": "echo", "decision": "allow"}]
    steps = [
        {"terminal": "/bin/bash", "args": ["-c", f"cd '{ws}' && echo ran"]},  # kimi's shape
        {"terminal": "/bin/bash", "args": ["-c", "cd /tmp && echo ran"]},
        {"terminal": "/bin/bash", "args": ["-c", f"cd '{ws}' && echo ran; id"]},
    ]
    result, done = answers(harness, mode, steps, permissions={"rules": rules})
    assert done[0] == "ran\n"
    assert all("refused by the permission policy" in d for d in done[1:]), done
    assert [r.decision for r in result.meta.permissions or []] == []  # nothing was asked
    assert len(result.meta.refusals or []) == 2
