"""Follow-up turns (``send``, ``run --session``) on real supervisors and real agents: the
demo agent remembers what it was told in a session, so a follow-up's answer shows whether it
really continued the session — on the held agent, or through session/resume after the hold."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acp_bridge import EntryRequest, RunHandle, RunOptions, start_run_sync
from acp_bridge._os.limits import MAX_TASK_BYTES
from acp_bridge._os.process import proc
from acp_bridge._runs.caller import send as send_module
from acp_bridge._runs.caller import start as start_module
from acp_bridge._runs.store import retention
from acp_bridge.cli import main
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ConfigError
from tests.helpers import demo_profile
from tests.runs.conftest import RunsEnv
from tests.spy import Spy

GRACES = {"shutdown_grace": 1, "cancel_grace": 1}


def ended(handle: RunHandle) -> SubtaskResult:
    result = handle.wait_sync(timeout=30)
    assert result is not None, f"{handle.id} did not end"
    return result


def released(handle: RunHandle, limit: float = 10.0) -> bool:
    """Whether ``handle``'s agent is no longer held within ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while handle.record().held_until is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    return handle.record().held_until is None


def test_a_follow_up_is_served_by_the_held_agent(runs: RunsEnv) -> None:
    runs.config({"demo": {"timeouts": {**GRACES, "idle": 60}}})
    first = runs.demo("remember PINEAPPLE")
    told = ended(first)
    assert told.status == "done" and told.output == "Remembered: PINEAPPLE", told
    assert first.record().held_until is not None  # its envelope is out, its agent kept

    second = first.send_sync("recall")
    answer = ended(second)
    assert answer.status == "done" and answer.output == "PINEAPPLE", answer
    assert answer.task_id == second.id != first.id
    # The same agent process, the same session: nothing was started, resumed or loaded.
    assert answer.meta.session_method == "session/new"
    assert answer.meta.session_id == told.meta.session_id
    assert answer.meta.transcript == told.meta.transcript  # one connection, one transcript
    record = second.record()
    assert record.follows == first.id and record.supervisor == first.record().supervisor
    phases = [e.event.data.get("phase") for e in second.events_sync() if e.event.kind == "status"]
    assert phases[:3] == ["running", "session", "prompting"], phases  # no starting, initialized
    assert {e.event.task_id for e in second.events_sync()} == {second.id}

    assert second.stop_sync() == "done"  # lets the held agent go (its run stays done)
    assert released(second)


def test_after_the_hold_a_follow_up_resumes_the_session(runs: RunsEnv) -> None:
    runs.config({"demo": {"timeouts": {**GRACES, "idle": 0.5}}})
    first = runs.demo("remember MANGO")
    told = ended(first)
    assert told.status == "done", told
    assert released(first)  # the idle time passed: the agent is gone

    second = first.send_sync("recall")
    answer = ended(second)
    assert answer.status == "done" and answer.output == "MANGO", answer
    assert answer.meta.session_method == "session/resume"
    assert answer.meta.session_id == told.meta.session_id
    assert answer.meta.transcript != told.meta.transcript  # a new agent process, connection
    # A second send to the first run follows the session's latest turn.
    third = first.send_sync("recall")
    assert third.record().follows == second.id
    assert ended(third).output == "MANGO"
    third.stop_sync()


def test_two_sends_that_saw_the_same_latest_turn_still_run_one_after_the_other(
    runs: RunsEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes sending at the same moment both look up the session's latest turn
    before either queues its own: the second must still come after the first (it follows
    it), never beside it in a second agent of the same session."""
    runs.config({"demo": {"timeouts": {**GRACES, "idle": 60}}})
    first = runs.demo("remember PEAR")
    assert ended(first).status == "done"
    head = send_module.chain_tail
    monkeypatch.setattr(send_module, "chain_tail", lambda db, run_id: run_id)  # stale
    slow = first.send_sync("sleep 0.5")
    quick = first.send_sync("recall")
    monkeypatch.setattr(send_module, "chain_tail", head)
    assert quick.record().follows == slow.id  # decided when it was queued, not before
    done_slow, done_quick = ended(slow), ended(quick)
    assert done_slow.status == done_quick.status == "done", (done_slow, done_quick)
    assert done_quick.output == "PEAR"
    assert quick.record().started_at >= slow.record().ended_at  # never two turns at once
    assert quick.record().supervisor == first.record().supervisor  # the held agent, both
    quick.stop_sync()
    assert released(quick)


def test_two_first_runs_of_a_new_session_name_open_one_session(
    runs: RunsEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both looked up the name before either queued: the second continues the first."""
    runs.config({"other": {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]}})
    monkeypatch.setattr(start_module, "follows_for_name", lambda *a, **k: None)  # both saw none
    opener = runs.demo("remember PLUM", session="orchard")
    with pytest.raises(ConfigError, match="session 'orchard' belongs to agent 'demo'"):
        runs.start("acp_spawn", "recall", "other", session="orchard")
    second = runs.demo("recall", session="orchard")
    assert second.record().follows == opener.id
    assert ended(second).output == "PLUM"


def test_a_prune_spares_the_run_a_waiting_follow_up_continues(runs: RunsEnv) -> None:
    runs.config({"demo": {"max_concurrent": 1}})
    told = runs.demo("remember PLUM")
    assert ended(told).status == "done"
    busy = runs.demo("sleep 1")  # the lane's one slot: the follow-up waits behind it
    follow_up = told.send_sync("recall")
    assert follow_up.record().status == "queued"
    assert retention.prune(runs.store(), keep=0) == []  # the follow-up needs its session
    answer = ended(follow_up)
    assert answer.status == "done" and answer.output == "PLUM", answer
    assert ended(busy).status == "done"
    assert set(retention.prune(runs.store(), keep=0)) == {told.id, busy.id, follow_up.id}


def test_a_killed_supervisor_holds_nothing_at_the_next_look(runs: RunsEnv) -> None:
    runs.config({"demo": {"timeouts": {**GRACES, "idle": 60}}})
    first = runs.demo("remember LIME")
    assert ended(first).status == "done"
    supervisor = first.record().supervisor
    assert supervisor is not None and first.record().held_until is not None
    agents = runs.store().groups(first.id)
    assert agents and all(proc.alive(agent) for agent in agents)
    os.kill(supervisor.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while proc.alive(supervisor) and time.monotonic() < deadline:
        time.sleep(0.02)
    # No ps, no waiting supervisor: the run itself, looked at, is no longer held.
    assert first.record().held_until is None
    deadline = time.monotonic() + 5
    while any(proc.alive(agent) for agent in agents) and time.monotonic() < deadline:
        time.sleep(0.02)  # SIGKILLed: gone in a moment
    assert not any(proc.alive(agent) for agent in agents)  # the held agent went with it
    follow_up = first.send_sync("recall")
    answer = ended(follow_up)
    assert answer.output == "LIME" and answer.meta.session_method == "session/resume"
    follow_up.stop_sync()  # lets its agent go


def test_a_named_run_with_other_session_settings_is_not_served_by_the_held_agent(
    runs: RunsEnv,
) -> None:
    """``run --session NAME --mode careful`` while the session's agent is held in mode
    ``default``: the held agent cannot take it as asked (silently the old mode), so it is let
    go and the run resumes the session with its own settings."""
    runs.config({"demo": {"timeouts": {**GRACES, "idle": 60}}})
    first = runs.demo("remember QUINCE", session="orchard")
    assert ended(first).meta.mode == "default"
    request = EntryRequest(entry="acp_spawn", agent="demo", task="recall", mode="careful")
    careful = start_run_sync(request, options=RunOptions(session="orchard"), config=runs.loaded)
    answer = ended(careful)
    assert answer.status == "done" and answer.output == "QUINCE", answer
    assert answer.meta.mode == "careful" and answer.meta.session_method == "session/resume"
    assert released(first)
    careful.stop_sync()


def test_an_agent_that_cannot_resume_refuses_the_follow_up(runs: RunsEnv, spy: Spy) -> None:
    runs.loaded = spy.config({"answer": "first answer"})  # advertises neither resume nor load
    first = runs.start("acp_spawn", "hello", "spy")
    assert ended(first).status == "done"

    refused = ended(first.send_sync("and then?"))
    assert refused.status == "failed" and refused.meta.error_code == "config_error"
    assert refused.error.startswith(f"follow-up of run {first.id}: no live agent holds its")
    assert "neither session/resume nor session/load" in refused.error
    assert refused.meta.session_method is None
    assert spy.methods().count("session/new") == 1  # never a silent fresh session
    assert spy.methods().count("initialize") == 2


def test_what_cannot_be_continued_is_refused_before_anything_starts(runs: RunsEnv) -> None:
    command = runs.bash("true")
    assert ended(command).status == "done"
    with pytest.raises(ConfigError, match="only acp_spawn runs have an ACP session"):
        command.send_sync("more")
    runs.config({"missing": {"command": str(runs.root / "no-such-agent")}})
    never = runs.start("acp_spawn", "hello", "missing")
    assert ended(never).meta.error_code == "config_error"  # not installed
    with pytest.raises(ConfigError, match="no session to continue"):
        never.send_sync("more")
    with pytest.raises(ConfigError, match="no run 'sub_000000000000'"):
        RunHandle("sub_000000000000").send_sync("more")


def test_text_that_is_not_utf8_is_refused_before_anything_starts(
    runs: RunsEnv, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first = runs.demo("remember FIG")
    # Bytes that are not UTF-8 on stdin (or the command line) reach Python as lone surrogates.
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO(b"recall \xff\x00"), errors="surrogateescape")
    )
    assert main(["send", "--detach", first.id, "-"]) == 2
    assert "task: not valid UTF-8 text" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="task: not valid UTF-8 text"):
        first.send_sync("recall \udcff")
    assert [run.id for run in runs.store().runs()] == [first.id]  # nothing queued
    assert ended(first).status == "done"


class Endless:
    """stdin that never ends (``< /dev/zero``)."""

    def read(self, size: int = -1) -> str:
        assert size >= 0, "an unbounded read of an endless stdin"
        return "x" * size


def test_an_endless_or_oversized_text_is_refused_before_anything_starts(
    runs: RunsEnv, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first = runs.demo("remember FIG")
    monkeypatch.setattr(sys, "stdin", Endless())
    assert main(["send", "--detach", first.id, "-"]) == 2
    assert f"longer than {MAX_TASK_BYTES} bytes" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=f"task: longer than {MAX_TASK_BYTES} bytes"):
        first.send_sync("é" * (MAX_TASK_BYTES // 2 + 1))  # counted in UTF-8 bytes
    assert [run.id for run in runs.store().runs()] == [first.id]  # nothing queued
    assert ended(first).status == "done"


def test_a_huge_id_or_session_name_is_refused_with_a_bounded_message(
    runs: RunsEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = "x" * 200_000
    assert main(["send", huge, "recall"]) == 2
    assert main(["run", "--detach", "--session", huge, "demo", "hi"]) == 2
    errors = capsys.readouterr().err
    assert "no run 'xxxx" in errors and "session must be" in errors
    assert len(errors) < 2000, len(errors)


Capture = pytest.CaptureFixture[str]


def cli(capsys: Capture, *argv: str) -> tuple[int, Any]:
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def test_named_sessions_and_send_from_the_command_line(runs: RunsEnv, capsys: Capture) -> None:
    demo = {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]}
    runs.config({"other": demo})
    code, first = cli(capsys, "run", "-q", "--session", "fruit", "demo", "remember KIWI")
    assert code == 0 and first["output"] == "Remembered: KIWI", first
    code, second = cli(capsys, "run", "-q", "--session", "fruit", "demo", "remember LIME")
    assert code == 0 and second["meta"]["session_id"] == first["meta"]["session_id"], second
    assert second["meta"]["session_method"] == "session/resume"
    code, _ = cli(capsys, "run", "-q", "--session", "fruit", "other", "recall")
    assert code == 2  # a session goes on with the agent that opened it

    code, started = cli(capsys, "send", "--detach", first["task_id"], "recall")
    assert code == 0 and started["status"] == "queued"
    code, waited = cli(capsys, "wait", started["task_id"])
    assert code == 0 and waited["output"] == "KIWI, LIME"  # after the session's latest turn
    code, answer = cli(capsys, "send", "-q", started["task_id"], "recall")
    assert code == 0 and answer["output"] == "KIWI, LIME"


def test_a_follow_up_keeps_the_config_its_session_started_with(
    runs: RunsEnv, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A profile defined only in the project's config: sent from elsewhere, the follow-up
    # must still find it (the run's own config), not fail on "unknown profile".
    runs.config({"project-agent": demo_profile()})
    code, first = cli(capsys, "run", "-q", "project-agent", "remember FIG")
    assert code == 0 and first["output"] == "Remembered: FIG", first
    elsewhere = runs.root / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, answer = cli(capsys, "send", "-q", first["task_id"], "recall")
    assert code == 0 and answer["output"] == "FIG", answer


def test_a_resumed_follow_up_goes_on_in_the_worktree_its_session_kept(runs: RunsEnv) -> None:
    repo = runs.root / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "0"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True
        )
    request = EntryRequest(
        entry="acp_spawn", agent="demo", task="write one.txt: ONE", cwd=str(repo),
        isolation="worktree",
    )  # fmt: skip
    first = ended(start_run_sync(request))
    kept = (first.meta.worktree or {}).get("worktree")
    assert first.status == "done" and kept, first

    answer = ended(RunHandle(first.task_id).send_sync("write two.txt: TWO"))
    assert answer.status == "done", answer
    assert answer.meta.session_method == "session/resume"
    assert (answer.meta.worktree or {}).get("worktree") == kept  # not a fresh one from HEAD
    assert answer.meta.files_changed == [str(Path(str(kept)) / "two.txt")]  # this turn's
    assert (Path(str(kept)) / "one.txt").read_text() == "ONE\n"
