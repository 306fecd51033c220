"""``acp-bridge doctor`` against real agent processes: ready only when the agent starts in its
sandbox, answers ``initialize`` and opens a session without asking for a key; each
not-ready line with its fix; its version from the install record, else asked in the sandbox;
nothing left running, nothing written outside the sandbox; and the two that rely on it:
``smoke --skip-missing`` and the Ray worker's offer."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_bridge._agents.doctor import Check, Report, diagnose
from acp_bridge.config import LoadedConfig
from tests.conftest import AGENTS, AgentHarness

DEMO = {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"],
        "version_args": ["-m", "acp_bridge._demo.agent", "--version"]}  # fmt: skip


def fault(mode: str, **profile: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(AGENTS / "fault_agent.py"), mode], **profile}


def checks(report: Report) -> dict[str, Check]:
    return {check.name: check for check in report.checks}


def diagnosed(config: LoadedConfig, *names: str) -> dict[str, Report]:
    return {r.profile: r for r in anyio.run(lambda: diagnose(config, names, concurrency=2))}


def script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_demo_agent_is_ready_its_session_opened_and_closed(harness: AgentHarness) -> None:
    config = harness.config({"demo": DEMO})
    report = diagnosed(config, "demo")["demo"]
    found = checks(report)
    assert report.ready, report.to_dict()
    assert [c.name for c in report.checks] == [
        "command", "sandbox", "version", "start", "session", "auth"
    ]  # fmt: skip
    assert found["version"].detail.endswith("(asked in its sandbox)")
    assert "answered initialize in the sandbox" in found["start"].detail
    assert found["session"].detail.endswith("closed again by session/close")
    # The probe's transcript: a session was created and closed, and no prompt was sent.
    said = [
        json.loads(line)
        for t in (harness.root / "transcripts").glob("*.jsonl")
        for line in t.open()
    ]
    methods = [entry.get("msg", {}).get("method") for entry in said]
    assert "session/new" in methods and "session/close" in methods
    assert "session/prompt" not in methods


def test_not_ready_agents_each_say_why_and_the_fix(
    harness: AgentHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAKE_AGENT_KEY", raising=False)
    config = harness.config({
        "terminal-login": fault("auth-terminal"),
        "key-login": fault("auth-env"),
        "no-methods": fault("auth-none", auth={"env": ["FAKE_AGENT_KEY"]}),
        "not-logged-in": fault("login-status", auth={"env": ["FAKE_AGENT_KEY"]}),
        "crashes": fault("crash-before-initialize"),
        "crashes-later": fault("crash-at-session"),
        "missing": {"command": "no-such-agent-anywhere", "install": "npm i -g no-such-agent"},
    })  # fmt: skip
    names = ["terminal-login", "key-login", "no-methods", "not-logged-in", "crashes"]
    reports = diagnosed(config, *names, "crashes-later", "missing")
    assert not any(r.ready for r in reports.values())
    terminal = checks(reports["terminal-login"])
    assert terminal["start"].ok and not terminal["auth"].ok
    assert "-32000" not in terminal["auth"].detail  # said in words, with the way out:
    assert "needs an interactive login" in terminal["auth"].detail
    assert terminal["auth"].fix == f"log in with `{sys.executable} --login` in a terminal"
    key = checks(reports["key-login"])["auth"]
    assert not key.ok and key.fix.startswith("export FAKE_AGENT_KEY=…")
    assert "list FAKE_AGENT_KEY under env_passthrough" in key.fix  # else it never arrives
    none = checks(reports["no-methods"])["auth"]
    assert not none.ok and "offers no auth methods" in none.detail
    status = checks(reports["not-logged-in"])
    assert status["session"].ok and not status["auth"].ok
    assert status["auth"].detail == "the agent reports: Not logged in"
    assert status["auth"].fix.startswith("export FAKE_AGENT_KEY=…")
    crash = checks(reports["crashes"])["start"]
    assert (
        not crash.ok and "boom: cannot start" in crash.detail and "--observe verbose" in crash.fix
    )
    later = checks(reports["crashes-later"])
    assert later["start"].ok and not later["session"].ok
    assert "cannot open a session here" in later["session"].detail
    missing = checks(reports["missing"])["command"]
    assert not missing.ok and missing.fix == "npm i -g no-such-agent"
    assert [c.name for c in reports["missing"].checks] == ["command"]  # nothing else ran


def test_a_key_the_agent_takes_makes_it_ready(
    harness: AgentHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_AGENT_KEY", "k-1")
    passed = {"env_passthrough": ["FAKE_AGENT_KEY"], "auth": {"env": ["FAKE_AGENT_KEY"]}}
    config = harness.config(
        {"key-login": fault("auth-env", **passed), "logged-in": fault("login-status", **passed)}
    )
    reports = diagnosed(config, "key-login", "logged-in")
    assert reports["key-login"].ready, reports["key-login"].to_dict()
    assert checks(reports["key-login"])["auth"].detail.startswith("FAKE_AGENT_KEY is set")
    assert reports["logged-in"].ready, reports["logged-in"].to_dict()
    said = checks(reports["logged-in"])["auth"].detail
    assert said == "the agent reports: Fake API key (FAKE_AGENT_KEY)"


def test_an_agent_that_opens_sessions_without_a_model_is_ready_only_with_one(
    harness: AgentHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """opencode's case (issue 33): session/new works with no provider, a prompt then never
    ends. Its profile says so (``auth.checked_by_session: false``): ready only with one of
    ``auth.env`` set or one of ``auth.files`` there, and a run agrees with the doctor."""
    monkeypatch.delenv("FAKE_AGENT_KEY", raising=False)
    login = harness.root / "login" / "auth.json"
    login.parent.mkdir()
    agent = {
        "env": {"FAULT_AGENT_LOGIN": str(login)},
        "env_passthrough": ["FAKE_AGENT_KEY"],
        "sandbox": {"readable": [str(login.parent)]},  # under /tmp: kept visible
    }
    auth = {"env": ["FAKE_AGENT_KEY"], "files": ["${FAULT_AGENT_LOGIN}"]}

    def configured() -> LoadedConfig:
        return harness.config({
            "no-model": fault("no-model", **agent, auth={**auth, "checked_by_session": False}),
            "trusted": fault("no-model", **agent, auth=auth),
        })  # fmt: skip

    config = configured()
    reports = diagnosed(config, "no-model", "trusted")
    found = checks(reports["no-model"])
    assert found["session"].ok and not found["auth"].ok and not reports["no-model"].ready
    assert found["auth"].detail == (
        f"none of FAKE_AGENT_KEY is set and none of {login} exists; the agent opens sessions "
        "without them, but a prompt gets no answer"
    )
    assert found["auth"].fix == (
        f"export FAKE_AGENT_KEY=…; or write {login} (its own login or model config)"
    )
    # Where the profile says the agent checks at session/new, an opened session stays
    # ready, with the same words as a warning.
    trusted = checks(reports["trusted"])["auth"]
    assert (
        reports["trusted"].ready and trusted.warning and "a prompt may still ask" in trusted.detail
    )
    # The doctor's word is what a run does: no answer.
    result = harness.run("no-model", "hi", config, timeout=3)
    assert result.status == "failed" and result.meta.error_code == "timeout", result.error

    login.write_text("{}")  # its own login, written
    report = diagnosed(config, "no-model")["no-model"]
    assert report.ready, report.to_dict()
    assert checks(report)["auth"].detail == f"{login} exists; session/new answered"
    result = harness.run("no-model", "hi", config, timeout=20)
    assert result.status == "done" and result.output == "ANSWER", result.error

    login.unlink()
    monkeypatch.setenv("FAKE_AGENT_KEY", "k-1")  # a key instead
    report = diagnosed(configured(), "no-model")["no-model"]
    assert report.ready and checks(report)["auth"].detail.startswith("FAKE_AGENT_KEY is set")


def test_an_agent_too_slow_is_not_ready_within_its_own_limits(harness: AgentHarness) -> None:
    config = harness.config({
        "slow-start": fault("hang-at-initialize", timeouts={"startup": 2}),
        "slow-session": fault("hang-at-session", timeouts={"session": 2}),
    })  # fmt: skip
    started = time.monotonic()
    reports = diagnosed(config, "slow-start", "slow-session")
    assert time.monotonic() - started < 30
    start = checks(reports["slow-start"])["start"]
    assert not start.ok and "within 2s" in start.detail
    assert start.fix.startswith("raise timeouts.startup")
    session = checks(reports["slow-session"])["session"]
    assert not session.ok and "longer than 2s" in session.detail
    assert session.fix.startswith("raise timeouts.session")


def test_the_version_is_asked_in_the_sandbox_never_outside(
    harness: AgentHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent whose --version writes its state (as codex's did into ~/.codex): the doctor
    still learns the version, and the home folder stays untouched."""
    home = harness.root / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    state = home / ".writer-agent"
    writer = script(
        harness.root / "bin" / "writer-agent",
        f"""#!/bin/sh
if [ "$1" = --version ]; then
  mkdir -p "$HOME/.writer-agent" 2>/dev/null && echo login > "$HOME/.writer-agent/auth" 2>/dev/null
  echo "writer-agent 3.4.5"
  exit 0
fi
exec {sys.executable} -m acp_bridge._demo.agent
""",
    )
    config = harness.config({"writer": {"command": str(writer)}})
    report = diagnosed(config, "writer")["writer"]
    assert report.ready, report.to_dict()
    assert checks(report)["version"].detail == "3.4.5 (asked in its sandbox)"
    assert not state.exists() and not list(home.iterdir())
    subprocess.run([writer, "--version"], check=True, capture_output=True)  # outside: it writes
    assert (state / "auth").exists()


def test_a_managed_install_gives_its_version_from_its_record(
    harness: AgentHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """codex-acp 0.16.0 has no --version: its install record says 0.16.0."""
    data = harness.root / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    prefix = data / "acp-bridge" / "agents" / "npm" / "fake-codex-acp@0.16.0"
    script(
        prefix / "node_modules" / ".bin" / "fake-codex-acp",
        f"""#!/bin/sh
if [ "$1" = --version ]; then echo "error: unexpected argument '--version' found" >&2; exit 2; fi
exec {sys.executable} -m acp_bridge._demo.agent
""",
    )
    stamp = {"version": "0.16.0", "command": "fake-codex-acp", "manager": "npm"}
    (prefix / "acp-bridge-install.json").write_text(json.dumps(stamp))
    profile = {"command": "fake-codex-acp", "min_version": "0.16.0",
               "package": {"npm": "fake-codex-acp", "version": "0.16.0"}}  # fmt: skip
    report = diagnosed(harness.config({"codexlike": profile}), "codexlike")["codexlike"]
    assert report.ready, report.to_dict()
    assert checks(report)["version"].detail == "0.16.0 (its install record)"


def test_the_cli_exit_code_and_lines(harness: AgentHarness) -> None:
    harness.config({"demo2": DEMO, "refuses": fault("auth-terminal")})
    base = [sys.executable, "-m", "acp_bridge", "--config", str(harness.root / "acp-bridge.yaml")]
    done = subprocess.run(
        [*base, "doctor", "demo2", "refuses"], capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "demo2: ready" in done.stdout and "refuses: NOT READY" in done.stdout
    assert "!! auth" in done.stdout and "fix: log in with" in done.stdout
    done = subprocess.run(
        [*base, "doctor", "demo2", "--json"], capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0 and json.loads(done.stdout)[0]["ready"]


def test_smoke_skip_missing_skips_agents_the_doctor_finds_not_ready(
    harness: AgentHarness,
) -> None:
    harness.config({
        "demo2": DEMO,
        "refuses": fault("auth-terminal"),
        "missing": {"command": "no-such-agent-anywhere", "install": "npm i -g no-such-agent"},
    })  # fmt: skip
    suite = harness.root / "suite.yaml"
    suite.write_text("""
name: live
cases:
  - name: answers
    agents: [demo2, refuses, missing]
    task: Reply with exactly OK
    timeout: 60
    expect: {status: done, output: OK}
""")
    report = harness.root / "out.json"
    config = harness.root / "acp-bridge.yaml"
    argv = [sys.executable, "-m", "acp_bridge", "--config", str(config), "smoke", str(suite),
            "--skip-missing", "--parallel", "2", "--json", str(report)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "asking the doctor about demo2, refuses, missing" in done.stderr
    cases = {c["id"].split("::")[1]: c for c in json.loads(report.read_text())["cases"]}
    assert cases["answers [demo2]"]["verdict"] == "passed"
    refused = cases["answers [refuses]"]
    assert refused["verdict"] == "skipped"
    assert refused["failures"][0].startswith("not ready (acp-bridge doctor refuses): session/new")
    assert "fix: log in with" in refused["failures"][0]
    missing = cases["answers [missing]"]
    assert (
        missing["verdict"] == "skipped" and "fix: npm i -g no-such-agent" in missing["failures"][0]
    )
    assert "SKIPPED" in done.stderr and "not ready (acp-bridge doctor refuses)" in done.stdout


def test_the_worker_offers_only_the_agents_the_doctor_finds_ready(
    harness: AgentHarness,
) -> None:
    pytest.importorskip("ray")
    from acp_bridge._batch.ray.worker import plan_worker

    config = harness.config({"demo2": DEMO, "refuses": fault("auth-terminal")})
    plan = anyio.run(lambda: plan_worker(config, "127.0.0.1:1", profiles=["demo2", "refuses"]))
    assert plan.ready == ["demo2"]
    assert "agent:demo2" in plan.resources and "agent:refuses" not in plan.resources
