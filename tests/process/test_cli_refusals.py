"""One rule for refusals, through the real CLI (issue 20): whatever refuses (a bad agent,
config or option; an agent not installed), stdout carries what a machine reads and stderr one
readable line per problem; plus the rough edges a first day found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acp_bridge._version import __version__

BROKEN_PROFILE = """\
name: broken
command: 12
args: notalist
timeouts: {run: ten}
permissions: {mode: yolo}
bogus: 1
"""


@dataclass
class Cli:
    root: Path

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ["PATH"],
            "HOME": str(self.root),
            "XDG_STATE_HOME": str(self.root / "state"),
            "XDG_DATA_HOME": str(self.root / "data"),
            "ACP_BRIDGE_DEMO_STATE": os.environ["ACP_BRIDGE_DEMO_STATE"],
            **{k: v for k, v in os.environ.items() if k == "ACP_BRIDGE_SANDBOX"},
        }

    def __call__(self, *argv: str, timeout: float = 60) -> tuple[int, str, str]:
        done = subprocess.run(
            [sys.executable, "-m", "acp_bridge", *argv],
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        return done.returncode, done.stdout, done.stderr

    def config(self, data: dict[str, Any]) -> None:
        (self.root / "acp-bridge.yaml").write_text(json.dumps(data))  # JSON is YAML


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def test_an_unknown_agent_is_refused_alike_in_the_foreground_and_detached(cli: Cli) -> None:
    for detach in ([], ["--detach"]):
        code, out, err = cli("run", *detach, "nosuch", "hi")
        envelope = json.loads(out)
        assert code == 2 and envelope["status"] == "failed", (detach, out, err)
        assert envelope["meta"]["error_code"] == "config_error"
        assert err.splitlines() == [f"error: {envelope['error']}"]
        assert "known profiles: " in err and "demo" in err


def test_a_broken_profile_prints_each_problem_on_its_own_line(cli: Cli) -> None:
    (cli.root / "profiles").mkdir()
    (cli.root / "profiles" / "broken.yaml").write_text(BROKEN_PROFILE)
    (cli.root / "profiles" / "garbled.yaml").write_bytes(b"\x00\xff not text")
    cli.config({"profiles_dirs": ["profiles"]})
    code, out, err = cli("run", "broken", "hi")
    envelope = json.loads(out)
    problems = envelope["meta"]["problems"]
    assert code == 2 and len(problems) == 5
    assert err.splitlines() == [f"error: {p}" for p in problems]
    assert any("timeouts.run: must be a number" in p for p in problems)
    assert all(p.startswith("profiles/broken.yaml:") for p in problems)

    code, out, err = cli("profiles", "list")
    lines = out.splitlines()
    broken = next(i for i, line in enumerate(lines) if line.startswith("broken "))
    assert "ERROR" in lines[broken] and "command: must be a string" in lines[broken]
    assert "args: must be a list" in lines[broken + 1]  # the next problem, under the first
    garbled = [line for line in lines if line.startswith("profiles/garbled.yaml")]
    assert len(garbled) == 1 and "ERROR" in garbled[0] and "cannot read file" in garbled[0]
    rows = json.loads(cli("profiles", "list", "--json")[1])
    (row,) = [r for r in rows if r.get("file") == "profiles/garbled.yaml"]
    assert row["name"] is None and "cannot read file" in row["error"]


def test_an_agent_not_installed_fails_before_starting_with_the_install_command(cli: Cli) -> None:
    cli.config({"acp": {"agents": [{"name": "absent", "command": "no-such-agent-acp",
                                    "install": "npm install -g no-such-agent-acp"}]}})  # fmt: skip
    code, out, err = cli("run", "absent", "hi")
    envelope = json.loads(out)
    assert code == 1 and envelope["meta"]["error_code"] == "spawn_failed"
    assert "starting" not in err  # it never got that far
    assert err.startswith("error: command not found: no-such-agent-acp")
    assert "install it with: npm install -g no-such-agent-acp" in err.splitlines()[-1]
    assert "sandbox" not in envelope["meta"]  # nothing was set up for it


def test_control_commands_refuse_with_task_id_and_status(cli: Cli) -> None:
    for command in ("wait", "stop", "show", "logs"):
        code, out, err = cli(command, "sub_000000000000")
        assert code == 2, command
        answer = json.loads(out)
        assert answer["task_id"] == "sub_000000000000" and answer["status"] == "refused"
        assert err.startswith("error: no run 'sub_000000000000'"), (command, err)
    code, out, err = cli("send", "sub_000000000000", "more")  # starts a run: an envelope
    assert code == 2 and json.loads(out)["meta"]["error_code"] == "config_error"
    assert err.startswith("error: no run 'sub_000000000000'")


def test_a_bad_option_of_an_entry_command_says_it_once_on_stderr(cli: Cli) -> None:
    code, out, err = cli("run", "demo", "hi", "--timeout", "soon")
    assert code == 2 and json.loads(out)["meta"]["error_code"] == "config_error"
    assert err.count("--timeout") == 1 + err.count("[--timeout")  # the usage line, then why


def test_smoke_with_an_agent_no_case_runs_is_an_error(cli: Cli) -> None:
    suite = Path(__file__).resolve().parents[2] / "examples" / "smoke" / "demo.yaml"
    code, out, err = cli("smoke", str(suite), "--agents", "nosuch")
    assert code == 2 and out == ""
    assert err.strip() == "error: --agents: no case runs agent(s) nosuch; the suites' agents: demo"


def test_tools_offers_only_agents_that_are_ready(cli: Cli) -> None:
    cli.config({"tools": {"acp_spawn": {"enabled": True}}})
    code, out, _ = cli("tools", "--tools", "acp_spawn")
    (spec,) = json.loads(out)
    enum = spec["function"]["parameters"]["properties"]["agent"]["enum"]
    assert code == 0 and "demo" in enum
    assert "codex" not in enum or _installed("codex-acp")


def _installed(command: str) -> bool:
    import shutil

    return shutil.which(command) is not None


def test_doctor_shows_the_demo_agents_own_version(cli: Cli) -> None:
    _, out, _ = cli("doctor", "demo", "--json")
    (report,) = json.loads(out)
    (version,) = [c for c in report["checks"] if c["name"] == "version"]
    assert version["detail"] == f"{__version__} (asked in its sandbox)"
    assert sys.version.split()[0] != __version__


def test_a_kept_worktree_is_named_on_stderr(cli: Cli) -> None:
    repo = cli.root / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=a@a", "-c", "user.name=a"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True, timeout=30)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "0"], check=True, timeout=30)
    code, out, err = cli("run", "demo", "write made.txt: hi", "--isolation", "worktree",
                         "--cwd", str(repo), "-q")  # fmt: skip
    worktree = json.loads(out)["meta"]["worktree"]
    assert code == 0 and worktree["kept"], out
    assert f"worktree kept: {worktree['worktree']} on branch {worktree['branch']}" in err
