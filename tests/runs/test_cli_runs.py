"""The run commands of the CLI: run --detach, wait, ps, show, logs, stop, prune (in process:
the real parser and handlers; the runs themselves in real supervisor processes)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acp_bridge.cli import main
from tests.runs.conftest import RunsEnv

Capture = pytest.CaptureFixture[str]


def cli(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def detach(capsys: Capture, *argv: str) -> str:
    code, out, _ = cli(capsys, *argv)
    assert code == 0
    started: dict[str, Any] = json.loads(out)
    assert started["status"] == "queued"
    return str(started["task_id"])


def test_detach_ps_logs_wait_show(runs: RunsEnv, capsys: Capture) -> None:
    run_id = detach(capsys, "run", "--detach", "demo", "Reply with exactly HELLO")
    code, out, _ = cli(capsys, "ps")
    assert code == 0 and run_id in out and "acp_spawn" in out and "demo" in out

    code, out, _ = cli(capsys, "logs", "-f", run_id)  # replayed, then followed to the end
    assert code == 0
    assert "· running" in out and "· prompting" in out and "HELLO" in out

    code, out, _ = cli(capsys, "wait", run_id)
    envelope = json.loads(out)
    assert code == 0 and envelope["task_id"] == run_id and envelope["output"] == "HELLO"

    code, out, _ = cli(capsys, "show", run_id)
    shown = json.loads(out)
    assert shown["status"] == "done" and shown["envelope"] == envelope

    code, out, _ = cli(capsys, "ps", "--all", "--json")
    assert [(row["task_id"], row["status"]) for row in json.loads(out)] == [(run_id, "done")]
    code, out, _ = cli(capsys, "logs", "--json", run_id)
    assert [json.loads(line)["seq"] for line in out.splitlines()][:2] == [1, 2]


def test_wait_exit_codes_follow_the_envelopes(runs: RunsEnv, capsys: Capture) -> None:
    failing = detach(capsys, "bash", "--detach", "--", "exit 3")
    sleeping = detach(capsys, "bash", "--detach", "--", f"sleep {runs.sleeper(20)}")
    code, out, _ = cli(capsys, "wait", "--timeout", "0.5", sleeping)
    assert code == 124 and json.loads(out)["status"] in ("queued", "running")

    code, out, _ = cli(capsys, "stop", sleeping)
    assert code == 0 and json.loads(out)["task_id"] == sleeping
    code, out, _ = cli(capsys, "wait", failing, sleeping)  # in the order given
    first, second = (json.loads(line) for line in out.splitlines())
    assert first["error"] == "bash exited with code 3"
    assert second["meta"]["error_code"] == "cancelled"
    assert code == 1  # the first run that did not end done decides
    assert cli(capsys, "wait", sleeping)[0] == 130  # cancelled, as for an interrupted run


def test_budget_options_run_through_the_store_and_are_followed(
    runs: RunsEnv, capsys: Capture
) -> None:
    code, out, err = cli(capsys, "run", "--max-tokens", "4", "demo", "Reply with exactly OK")
    envelope = json.loads(out)
    assert code == 1 and envelope["meta"]["error_code"] == "budget"
    assert "· prompting" in err  # followed: its events as live progress


def test_nothing_starts_for_an_unknown_agent_or_a_prompt_answer(
    runs: RunsEnv, capsys: Capture
) -> None:
    # Refused as every command refuses: the envelope on stdout, the reason on stderr.
    code, out, err = cli(capsys, "run", "--detach", "nobody", "hello")
    envelope = json.loads(out)
    assert code == 2 and envelope["meta"]["error_code"] == "config_error"
    assert err.startswith("error: no agent profile named 'nobody'")
    code, out, err = cli(capsys, "run", "--detach", "--yes", "demo", "hello")
    assert code == 2 and "--yes" in json.loads(out)["error"] and "--yes" in err
    assert cli(capsys, "ps", "--all", "--json")[1].strip() == "[]"
    code, out, err = cli(capsys, "wait", "sub_000000000000")
    assert code == 2 and "no run" in err
    assert json.loads(out) == {
        "task_id": "sub_000000000000",
        "status": "refused",
        "error": json.loads(out)["error"],
    }


def test_prune_keeps_the_newest(runs: RunsEnv, capsys: Capture) -> None:
    runs.config(record=True, retention={"keep": 1})
    for word in ("one", "two"):
        assert cli(capsys, "bash", "-q", "--", f"echo {word}")[0] == 0  # foreground, recorded
    code, out, _ = cli(capsys, "prune")
    assert code == 0 and json.loads(out)["pruned"] == 1
    rows = json.loads(cli(capsys, "ps", "--all", "--json")[1])
    assert [row["summary"] for row in rows] == ["two"]


def test_a_detached_run_continues_an_agents_session(runs: RunsEnv, capsys: Capture) -> None:
    # Every option of the request travels to the supervisor: here --resume, so a follow-up
    # turn can already run detached (the demo agent keeps its sessions for session/resume).
    first = detach(capsys, "run", "--detach", "demo", "remember PINEAPPLE")
    session = json.loads(cli(capsys, "wait", first)[1])["meta"]["session_id"]
    second = detach(capsys, "run", "--detach", "--resume", session, "demo", "recall")
    code, out, _ = cli(capsys, "wait", second)
    assert code == 0 and "PINEAPPLE" in json.loads(out)["output"]
