"""The compatibility matrix: every built-in profile, as root and as an unprivileged account,
through ``acp-bridge`` as users run it, under the default sandbox and the default policy,
against the fake model endpoint on 127.0.0.1 (``tests/fake_models.py``).

``pytest -m compat -n 3 --dist loadgroup tests/compat`` (README). Each test is one scenario
of one row (an agent as an account) and records its outcome for ``docs/generate_compatibility.py``.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

import pytest

from tests.compat.agents import NEW_LINE, OLD_LINE
from tests.compat.matrix import Bridge, Cell, Done, summary_of
from tests.fake_models import REPLY, TOOL_DONE, FakeModels

pytestmark = [pytest.mark.compat, pytest.mark.timeout(900)]

READY_WITHIN = 180.0  # seconds for a turn to get under way (start-up on a loaded machine)


def assert_done(done: Done) -> dict[str, Any]:
    envelope = done.envelope
    assert envelope["status"] == "done", summary_of(done)
    return envelope


def model_saw(models: FakeModels, text: str) -> bool:
    """Some model request carried ``text`` (a tool's result, an earlier turn)."""
    return any(text in request.text() for request in models.model_requests())


def permissions(done: Done) -> list[dict[str, Any]]:
    return list(done.meta.get("permissions") or [])


def used_terminal(done: Done) -> bool:
    return bool(done.meta.get("terminals"))


def test_plain(bridge: Bridge, cell: Cell) -> None:
    """A plain answer; the row's "start" cell too: the agent started in the sandbox and
    answered initialize (auggie gets no further offline)."""
    start = Cell(bridge, "start", cell.version)
    with start.running():
        done = bridge.run("Say hi")
        start.saw(done)
        cell.saw(done)
        meta = done.meta
        assert meta.get("protocol_version") is not None, f"no initialize: {summary_of(done)}"
        if "plain" in bridge.agent.impossible:
            assert meta.get("error_code") == "auth_required", summary_of(done)
    with cell.running():
        envelope = assert_done(done)
        answer = envelope["output"].strip()
        if bridge.agent.uses_model:
            assert answer == REPLY, f"answer {answer[:80]!r}"
        else:  # an echo of the prompt
            assert "Say hi" in answer, f"answer {answer[:80]!r}"
        assert meta.get("stop_reason") == "end_turn", f"stop reason {meta.get('stop_reason')}"


def test_doctor(bridge: Bridge, cell: Cell) -> None:
    """``acp-bridge doctor`` in the row's setup says "ready" exactly when a run then finishes
    a plain task (issue 33: a doctor that never says ready falsely, nor not ready wrongly)."""
    with cell.running():
        checked = bridge("doctor", bridge.agent.profile, "--json")
        assert checked.out.strip(), f"doctor printed nothing (exit {checked.code}): {checked.err}"
        (report,) = json.loads(checked.out)
        ready = bool(report["ready"])
        assert checked.code == (0 if ready else 1), f"doctor exit {checked.code}, ready {ready}"
        done = bridge.run("Say hi")
        cell.saw(done)
        finished = done.envelope["status"] == "done"
        if not ready:
            problem = next(check for check in report["checks"] if not check["ok"])
            cell.notes.append(cell.stable(f"not ready: {problem['name']}: {problem['detail']}"))
        verdict = "ready" if ready else "not ready"
        assert ready == finished, f"doctor says {verdict}, but the run ended {summary_of(done)}"


def test_read(bridge: Bridge, cell: Cell, models: FakeModels) -> None:
    ws = bridge.workspace
    with cell.running():
        done = bridge.run(bridge.agent.read(ws))
        cell.saw(done)
        envelope = assert_done(done)
        if bridge.agent.uses_model:
            assert model_saw(models, ws.token), "the file's text never reached the model"
            assert envelope["output"].strip() == TOOL_DONE, f"answer {envelope['output'][:80]!r}"
        else:
            assert ws.token in envelope["output"], f"answer {envelope['output'][:80]!r}"
        assert not done.meta.get("files_changed"), f"files changed: {done.meta['files_changed']}"


def test_edit(bridge: Bridge, cell: Cell) -> None:
    ws = bridge.workspace
    with cell.running():
        done = bridge.run(bridge.agent.edit(ws))
        cell.saw(done)
        assert_done(done)
        text = ws.notes.read_text()
        assert NEW_LINE in text and OLD_LINE not in text, f"notes.txt not edited: {text!r}"
        changed = [str(ws.root / path) for path in done.meta.get("files_changed") or []]
        assert changed == [str(ws.notes)], f"files_changed {changed} (expected notes.txt alone)"
        refused = [p for p in permissions(done) if p.get("decision") != "allowed"]
        assert not refused, f"a permission refused: {refused[0].get('reason')}"
        warnings = done.meta.get("warnings") or []
        about_changes = [w for w in warnings if "changes" in w or "files changed" in w]
        assert not about_changes, f"warning: {about_changes[0][:120]}"


def test_terminal(bridge: Bridge, cell: Cell, models: FakeModels) -> None:
    ws = bridge.workspace
    if bridge.agent.terminal_rules:  # else its profile allows the command already
        bridge.configure(permissions={"rules": bridge.agent.terminal_rules})
    with cell.running():
        done = bridge.run(bridge.agent.terminal(ws))
        cell.saw(done)
        envelope = assert_done(done)
        refused = [p for p in permissions(done) if p.get("decision") != "allowed"]
        assert not refused, f"a permission refused: {refused[0].get('reason')}"
        refusals = done.meta.get("refusals") or []
        assert not refusals, f"refused: {refusals[0].get('reason') or refusals[0]}"
        if bridge.agent.uses_model:
            assert model_saw(models, ws.printed), "the command's output never reached the model"
        else:
            assert ws.printed in envelope["output"], f"answer {envelope['output'][:80]!r}"
        if used_terminal(done):
            cell.notes = [n for n in cell.notes if not n.startswith("in-process")]


def test_refused(bridge: Bridge, cell: Cell) -> None:
    ws = bridge.workspace
    with cell.running():
        done = bridge.run(bridge.agent.refused(ws))
        cell.saw(done)
        envelope, meta = done.envelope, done.meta
        refused = [p for p in permissions(done) if p.get("decision") == "rejected"]
        refused += meta.get("refusals") or []
        assert refused, f"nothing refused: {summary_of(done)}"
        assert not (ws.root / "refused.txt").exists(), "refused.txt was made"
        assert not (ws.root.parent / "refused.txt").exists(), "../refused.txt was made"
        # The agent may go on (done) or end its turn (cancelled): its choice, said here.
        if envelope["status"] != "done":
            assert meta.get("stop_reason") == "cancelled", summary_of(done)
            cell.notes.append("the agent ends its turn on a refusal (stopReason cancelled)")


def test_cancel(bridge: Bridge, cell: Cell, models: FakeModels) -> None:
    """Ctrl-C mid-turn: the turn is cancelled (session/cancel) and the command ends."""
    ws = bridge.workspace
    task = bridge.agent.cancel(ws)

    def under_way(process: Any) -> bool:
        if bridge.agent.uses_model:  # the slow model request has arrived
            deadline = time.monotonic() + READY_WITHIN
            while process.poll() is None and time.monotonic() < deadline:
                if models.wait_for(lambda r: "SLOW" in r.text(), 1.0) is not None:
                    return True
            return False
        deadline = time.monotonic() + READY_WITHIN
        while time.monotonic() < deadline and (line := process.stderr.readline()):
            if json.loads(line).get("kind") == "tool_call":  # its sleep has started
                return True
        return False

    with cell.running():
        done, after = bridge.interrupt_when(under_way, task)
        cell.saw(done)
        envelope, meta = done.envelope, done.meta
        assert done.code == 130, f"exit code {done.code}: {summary_of(done)}"
        assert meta.get("error_code") == "cancelled", summary_of(done)
        if meta.get("stop_reason") != "cancelled":
            cell.notes.append(
                "the agent did not confirm the cancel within cancel_grace: the bridge ended it"
            )
        assert envelope["status"] == "failed"
        # A bucket, not the seconds: the table is compared with each run's (CI).
        cell.notes.append("ended 10 s or more after Ctrl-C" if after >= 10 else "")
        cell.notes = [n for n in cell.notes if n]


def test_follow_up(bridge: Bridge, cell: Cell, models: FakeModels) -> None:
    """A second turn in the live session: ``run --detach``, then ``send`` while the agent is
    kept (``timeouts.idle``, which the row's config adds as a user would)."""
    ws = bridge.workspace
    bridge.configure(timeouts={"idle": 120})
    with cell.running():
        first = bridge(
            "run", "--detach", bridge.agent.profile, bridge.agent.remember(ws),
            "--timeout", "120", "--events", "none", kept=True,
        )  # fmt: skip
        latest = first.envelope["task_id"]
        try:
            waited = bridge("wait", latest, kept=True)
            cell.saw(waited)
            assert_done(waited)
            second = bridge("send", latest, bridge.agent.recall(ws), "--events", "none", kept=True)
            envelope = second.envelope
            latest = envelope.get("task_id", latest)
        finally:  # the kept agent may go now, whatever happened
            released = bridge("stop", latest)
        assert released.code == 0, released.err[-300:]
        assert_done(second)
        assert second.meta.get("session_id") == waited.meta.get("session_id"), "another session"
        if bridge.agent.uses_model:
            last = [r for r in models.model_requests() if bridge.agent.recall(ws) in r.text()]
            # Some agents send side requests with the new prompt alone (claude: a title):
            # the turn's own request is one of them, not always the last.
            carried = any(ws.token in request.text() for request in last)
            assert carried, "the first turn was not in the second's"
            assert envelope["output"].strip() == REPLY, f"answer {envelope['output'][:80]!r}"
        elif bridge.agent.profile == "demo":
            assert ws.token in envelope["output"], f"answer {envelope['output'][:80]!r}"


def test_resume(bridge: Bridge, cell: Cell, models: FakeModels) -> None:
    """A new process continues the session (``run --resume``: session/resume, else
    session/load)."""
    ws = bridge.workspace
    with cell.running():
        first = bridge.run(bridge.agent.remember(ws))
        cell.saw(first)
        session = assert_done(first)["meta"]["session_id"]
        if bridge.agent.load_after_a_minute:
            now = datetime.now()
            time.sleep(60.5 - now.second - now.microsecond / 1e6)
            cell.notes.append(f"resumed in a later minute: {bridge.agent.load_after_a_minute}")
        second = bridge.run(bridge.agent.recall(ws), "--resume", session)
        envelope = second.envelope
        if envelope["status"] != "done" and "neither" in (envelope.get("error") or ""):
            cell.not_offered("the agent offers neither session/resume nor session/load")
        assert_done(second)
        method = second.meta.get("session_method")
        assert method in ("session/resume", "session/load"), f"session_method {method}"
        cell.notes.insert(0, method)
        if bridge.agent.uses_model:
            last = [r for r in models.model_requests() if bridge.agent.recall(ws) in r.text()]
            # Some agents send side requests with the new prompt alone (claude: a title):
            # the turn's own request is one of them, not always the last.
            carried = any(ws.token in request.text() for request in last)
            assert carried, "the first turn was not in the second's"
        elif bridge.agent.profile == "demo":
            assert ws.token in envelope["output"], f"answer {envelope['output'][:80]!r}"
