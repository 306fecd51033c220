"""Every envelope shape, pinned as golden JSON files taken from real runs.

Each case runs a real entry path — the fault agent in one of its modes, the demo agent, a
shell command, the local loop on the offline model, a broken config — and compares the
envelope, normalised (task id, durations, temporary paths, pids), with its golden file.
Nothing here is built by hand: a golden file is what the code really produces.

Regenerate after an intended change with ``ACP_BRIDGE_REGEN_GOLDEN=1 pytest -k golden``
and review the diff like code.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_bridge import Event, SubtaskResult, acp_spawn, bash, spawn
from acp_bridge._os.process.environment import DEPTH_ENV
from tests.conftest import AgentHarness
from tests.helpers import ECHO_SCHEMA
from tests.sandbox_modes import auto_mode

GOLDEN = Path(__file__).parent.parent / "golden" / "envelope"
FAST = {"startup": 5, "session": 5, "run": 10, "cancel_grace": 0.5, "shutdown_grace": 0.5}
DEMO = {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"], "timeouts": FAST}
MISSING_DIR = Path("/nonexistent-acp-bridge-golden/missing")
_SESSION_ID = re.compile(r"demo_[0-9a-f]{12}")


def _fault(h: AgentHarness, mode: str, task: str = "go", **kw: Any) -> SubtaskResult:
    profile = {"timeouts": {**FAST, **kw.pop("timeouts", {})}, **kw.pop("profile", {})}
    return h.run("fault", task, h.fault(mode, **profile), **kw)


def _demo(h: AgentHarness, task: str, **kw: Any) -> SubtaskResult:
    (h.root / "echo.json").write_text(json.dumps(ECHO_SCHEMA))
    config = h.config(
        {"demo": {**DEMO, **kw.pop("profile", {})}},
        schemas={"subagent.demo.echo.v1": str(h.root / "echo.json")},
    )
    return h.run("demo", task, config, **kw)


def _entry(h: AgentHarness, call: Callable[[], Any]) -> SubtaskResult:
    async def bounded() -> SubtaskResult:
        with anyio.fail_after(30):
            result: SubtaskResult = await call()
            return result

    return anyio.run(bounded)


def _cancelled(h: AgentHarness) -> SubtaskResult:
    async def cancelled_soon() -> SubtaskResult:
        cancel = anyio.Event()
        config = h.fault("cancel-aware", timeouts=FAST)

        def on_event(event: Event) -> None:  # once the turn is under way: a cancel before it
            if event.data.get("phase") == "prompting":  # is a cancelled start-up instead
                cancel.set()

        return await acp_spawn(
            "fault", "go", cwd=h.workspace, config=config, cancel=cancel, on_event=on_event
        )

    return anyio.run(cancelled_soon)


CASES: dict[str, Callable[[AgentHarness], SubtaskResult]] = {
    "acp_done": lambda h: _fault(h, "ok"),
    "acp_done_last_message": lambda h: _fault(h, "narration"),
    "acp_done_json": lambda h: _demo(
        h, 'Reply with exactly {"ok": true, "value": 42}', output_schema="subagent.demo.echo.v1"
    ),
    "acp_done_with_terminal": lambda h: _demo(h, "run echo hello"),
    "acp_done_with_refusals": lambda h: _demo(
        h, "write notes.txt: hi", profile={"permissions": {"mode": "read-only"}}
    ),
    "acp_failed_output_schema": lambda h: _fault(
        h, "ok", output_schema="subagent.demo.echo.v1", profile={"repair_turns": 0}
    ),
    "acp_failed_agent_exited": lambda h: _fault(h, "crash-mid-turn"),
    "acp_failed_timeout": lambda h: _fault(h, "hang-mid-turn", timeout=1),
    "acp_failed_refusal": lambda h: _fault(h, "refusal"),
    "acp_failed_cancelled": _cancelled,
    "acp_failed_unknown_profile": lambda h: h.run("nobody", "go", h.fault("ok")),
    "bash_done": lambda h: _entry(h, lambda: bash("printf 'one\\ntwo\\n'", cwd=h.workspace)),
    "bash_nonzero": lambda h: _entry(h, lambda: bash("echo oops >&2; exit 3", cwd=h.workspace)),
    "bash_timeout": lambda h: _entry(h, lambda: bash("sleep 30", timeout=0.5, cwd=h.workspace)),
    # A missing cwd of a fixed length: the summary is cut at 160 characters, and a path
    # under the temp directory would cut it differently for each TMPDIR.
    "bash_cannot_start": lambda h: _entry(h, lambda: bash("true", cwd=MISSING_DIR)),
    "bash_truncated": lambda h: _entry(
        h, lambda: bash("seq 1 2000", max_output_bytes=64, cwd=h.workspace)
    ),
    "spawn_done": lambda h: _entry(
        h, lambda: spawn("Reply with exactly OK", ["read_file"], cwd=h.workspace)
    ),
}


def normalise(envelope: dict[str, Any], harness: AgentHarness) -> dict[str, Any]:
    """The parts of an envelope that differ from run to run, replaced by placeholders."""
    meta = envelope["meta"]
    envelope["task_id"] = "sub_000000000000"
    if "duration_ms" in meta:
        meta["duration_ms"] = 0
    if "transcript" in meta:
        meta["transcript"] = "<transcript>"
    if "sandbox" in meta:  # the mode `auto` takes and why (a version, a path) are the machine's
        assert meta["sandbox"]["mode"] == auto_mode()
        meta["sandbox"]["mode"] = "<auto>"
        meta["sandbox"]["reason"] = "<reason>"
    text = json.dumps(envelope, ensure_ascii=False)
    text = text.replace(str(harness.root), "<tmp>").replace(sys.executable, "<python>")
    text = _SESSION_ID.sub("demo_<id>", text)
    return json.loads(text)  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", sorted(CASES))
def test_envelope_matches_golden(
    name: str, harness: AgentHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = CASES[name](harness)
    assert SubtaskResult.model_validate(result.to_dict()) == result  # it round-trips
    got = normalise(result.to_dict(), harness)
    path = GOLDEN / f"{name}.json"
    if os.environ.get("ACP_BRIDGE_REGEN_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n")
    assert path.exists(), f"missing golden file {path}; regenerate with ACP_BRIDGE_REGEN_GOLDEN=1"
    assert got == json.loads(path.read_text())


def test_depth_limit_envelope(harness: AgentHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEPTH_ENV, "1")
    got = normalise(_fault(harness, "ok").to_dict(), harness)
    path = GOLDEN / "acp_failed_depth_limit.json"
    if os.environ.get("ACP_BRIDGE_REGEN_GOLDEN"):
        path.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n")
    assert got == json.loads(path.read_text())


def test_every_golden_file_is_used() -> None:
    files = {p.stem for p in GOLDEN.glob("*.json")}
    assert files == {*CASES, "acp_failed_depth_limit"}, sorted(files ^ {*CASES})


def test_golden_files_keep_the_stable_key_order() -> None:
    stable = ["task_id", "status", "summary", "output_kind", "output_schema", "output", "error"]
    for path in GOLDEN.glob("*.json"):
        assert list(json.loads(path.read_text()))[:7] == stable, path.name
