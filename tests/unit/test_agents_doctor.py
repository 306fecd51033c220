"""acp-bridge doctor against agents that are missing, too old, or lack their auth
variables. The agents' ``--version`` answers are faked with pytest-subprocess: only the
command's answer matters here, not a real agent."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import anyio
import pytest
from pytest_subprocess import FakeProcess

from acp_bridge._agents.doctor import diagnose, parse_version
from acp_bridge.cli import main
from acp_bridge.config import LoadedConfig, load_config


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on PATH with an executable per fake agent."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("old-agent", "new-agent", "odd-agent"):  # each one the demo agent, really
        path = folder / name
        path.write_text(f"#!/bin/sh\nexec {sys.executable} -m acp_bridge._demo.agent\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("FAKE_AGENT_KEY", raising=False)
    return folder


def config(tmp_path: Path) -> LoadedConfig:
    agents = [
        {"name": "missing", "command": "no-such-agent", "install": "npm i -g no-such-agent"},
        {"name": "old", "command": "old-agent", "min_version": "2.0.0"},
        {"name": "new", "command": "new-agent", "min_version": "2.0.0",
         "auth": {"env": ["FAKE_AGENT_KEY"]}},
        {"name": "odd", "command": "odd-agent", "version_args": ["version"]},
    ]  # fmt: skip
    path = tmp_path / "acp-bridge.yaml"
    path.write_text(json.dumps({"acp": {"agents": agents}}))
    return load_config(path, search=False)


def register(fp: FakeProcess, tools: Path) -> None:
    fp.allow_unregistered(True)  # the sandbox probes run for real
    fp.register([str(tools / "old-agent"), "--version"], stdout="old-agent 1.9.3\n")
    fp.register([str(tools / "new-agent"), "--version"], stdout="v2.1.0 (build 7)\n")
    fp.register([str(tools / "odd-agent"), "version"], stdout="", returncode=2)


def test_each_problem_is_found_with_its_fix(tmp_path: Path, tools: Path, fp: FakeProcess) -> None:
    register(fp, tools)
    reports = {
        r.profile: r
        for r in anyio.run(diagnose, config(tmp_path), ["missing", "old", "new", "odd"])
    }
    missing = {c.name: c for c in reports["missing"].checks}
    assert not missing["command"].ok and missing["command"].fix == "npm i -g no-such-agent"
    old = {c.name: c for c in reports["old"].checks}
    assert not old["version"].ok and "1.9.3 is older than 2.0.0" in old["version"].detail
    new = {c.name: c for c in reports["new"].checks}
    assert new["version"].ok and new["version"].detail == "2.1.0"
    # No key is a warning, not "not ready": the agent starts and answers without one.
    assert new["auth"].warning and new["auth"].fix.startswith("export FAKE_AGENT_KEY=")
    assert reports["new"].ready and new["start"].ok
    assert "answered initialize in the sandbox" in new["start"].detail
    odd = {c.name: c for c in reports["odd"].checks}
    assert odd["version"].ok and odd["version"].detail.startswith("unknown")
    assert [c.name for c in reports["odd"].checks][-2:] == ["sandbox", "start"]
    assert "start" not in old  # not ready already: not started


def test_auth_set_makes_it_ready_and_the_cli_says_so(
    tmp_path: Path,
    tools: Path,
    fp: FakeProcess,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    register(fp, tools)
    monkeypatch.setenv("FAKE_AGENT_KEY", "k")
    (tmp_path / "acp-bridge.yaml").parent.mkdir(exist_ok=True)
    config(tmp_path)
    assert main(["--config", str(tmp_path / "acp-bridge.yaml"), "doctor", "new", "--json"]) == 0
    [report] = json.loads(capsys.readouterr().out)
    names = [c["name"] for c in report["checks"]]
    assert report["ready"] and names[:4] == ["command", "version", "auth", "sandbox"]
    assert names[-1] == "start" and report["checks"][-1]["ok"]
    assert main(["--config", str(tmp_path / "acp-bridge.yaml"), "doctor", "old", "nobody"]) == 1
    out = capsys.readouterr().out
    assert "old: NOT READY" in out and "nobody: NOT READY" in out and "fix: upgrade" in out


@pytest.mark.parametrize(
    ("text", "version"),
    [("0.61.0", (0, 61, 0)), ("codex-acp 0.16.0\n", (0, 16, 0)), ("v2.1", (2, 1)), ("none", None)],
)
def test_versions_are_read_from_what_commands_print(
    text: str, version: tuple[int, ...] | None
) -> None:
    assert parse_version(text) == version
