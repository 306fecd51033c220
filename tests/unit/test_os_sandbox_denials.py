"""What a failed agent's words and the paths it was given say about its sandbox: each path
the plan refuses is named with the key that fixes it (``sandbox.state`` to write there,
``sandbox.readable`` to read a hidden one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_bridge._os.sandbox.denials import explain_denials, given_paths
from acp_bridge._os.sandbox.plan import PathPlan, plan_paths
from acp_bridge._os.sandbox.spec import SandboxSpec


@pytest.fixture
def plan(tmp_path: Path) -> PathPlan:
    """ws and state writable, home read-only with a hidden .ssh."""
    for folder in ("ws", "state", "home/.ssh", "home/frozen"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "home" / "agent.js").write_text("")
    spec = SandboxSpec(
        cwd=tmp_path / "ws",
        write=(tmp_path / "ws", tmp_path / "state"),
        home=tmp_path / "home",
        private_tmp=False,  # tmp_path is under /tmp: the host's, visible
    )
    return plan_paths(spec)


def test_a_write_to_a_read_only_path_names_sandbox_state(plan: PathPlan, tmp_path: Path) -> None:
    frozen = tmp_path / "home" / "frozen" / "trusted_folders.toml"
    note = explain_denials(f"OSError: [Errno 30] Read-only file system: '{frozen}'", plan)
    assert note == (
        f"the agent's stderr names {frozen}, which the sandbox keeps read-only: if the agent "
        "must write there, list it under sandbox.state in the profile"
    )


def test_a_hidden_path_names_both_keys_unless_it_was_a_write(
    plan: PathPlan, tmp_path: Path
) -> None:
    hidden = tmp_path / "home" / ".ssh" / "config"
    # codex: 'CODEX_HOME points to "/tmp/c", but that path does not exist': read or write?
    note = explain_denials(f'CODEX_HOME points to "{hidden}", but that path does not exist', plan)
    assert note == (
        f"the agent's stderr names {hidden}, which the sandbox hides: list it (or the folder "
        "holding it) under sandbox.readable in the profile if the agent reads it, under "
        "sandbox.state if it writes there"
    )
    note = explain_denials(f"EROFS: read-only file system, mkdir '{hidden}'", plan)
    assert note == (
        f"the agent's stderr names {hidden}, which the sandbox hides: if the agent must write "
        "there, list it under sandbox.state in the profile"
    )


def test_a_folder_the_agent_was_given_is_named_when_the_sandbox_refuses_it(
    plan: PathPlan, tmp_path: Path
) -> None:
    frozen, ssh = tmp_path / "home" / "frozen", tmp_path / "home" / ".ssh" / "agent"
    given = given_paths(
        ["--no-update-check", "acp", "--home", str(frozen), f"--data={ssh}",
         str(tmp_path / "home" / "agent.js"), f"--cwd={tmp_path / 'ws'}"],
        [("CODEX_HOME", str(tmp_path / "state")), ("VIBE_HOME", f"{frozen}/vibe/"),
         ("NODE_PATH", f"{frozen}:/x"), ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")],
    )  # fmt: skip
    assert given == [
        ("argument --home", str(frozen)),
        ("argument --data", str(ssh)),
        ("an argument", str(tmp_path / "home" / "agent.js")),
        ("argument --cwd", str(tmp_path / "ws")),
        ("CODEX_HOME", str(tmp_path / "state")),
        ("VIBE_HOME", f"{frozen}/vibe"),
    ]
    note = explain_denials("told_agent: storage write failed: Read-only file system", plan, given)
    # The writable ones and a file (the script it runs) are not named; the rest are.
    assert note.split("; ") == [
        f"the agent was given {frozen} (argument --home), which the sandbox keeps read-only: "
        "if the agent keeps its state there, list it under sandbox.state in the profile",
        f"the agent was given {ssh} (argument --data), which the sandbox hides: if the agent "
        "keeps its state there, list it under sandbox.state in the profile",
        f"the agent was given {frozen}/vibe (VIBE_HOME), which the sandbox keeps read-only: "
        "if the agent keeps its state there, list it under sandbox.state in the profile",
    ]


def test_a_write_error_that_names_nothing_says_where_the_agent_may_write(
    plan: PathPlan, tmp_path: Path
) -> None:
    said = "agent answered session/new with error -32603 Internal error: storage write failed"
    note = explain_denials("", plan, said=said)
    assert note == (
        f"the agent failed to write and names no path the sandbox refuses: it may write only "
        f"{tmp_path / 'state'}, {tmp_path / 'ws'} and its private /tmp; list the folder it "
        "keeps its state in under sandbox.state in the profile"
    )
    assert explain_denials("TypeError: x is not a function", plan) == ""
