"""The sandbox never breaks an agent's own installation (issue 20), in every mode offered here.

Agents installed under a hidden directory (this test's tree lives under /tmp, which the
sandbox replaces) are started by the path they are called by — an npm ``node_modules/.bin``
link, a virtualenv's script — and load their dependencies from beside it: the whole
installation must be visible, not only the command's own file. When an agent fails in its
own words on a path the sandbox hid or froze, the error names the path and the profile key
that fixes it; ``doctor`` then calls the profile not ready, with that reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import AgentHarness

MODES = ["bwrap", "landlock"]

# A dependency that runs the bundled demo agent (from this checkout: a venv's python does
# not see the bridge's own site-packages).
PROJECT = Path(__file__).resolve().parents[2]
DEPENDENCY = (
    f"import sys\nsys.path.append({str(PROJECT)!r})\nfrom acp_bridge._demo.agent import main\n"
)
AGENT = """import os, sys
here = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(here, {relative!r}))
import installed_dependency
raise SystemExit(installed_dependency.main())
"""


def npm_like(root: Path) -> Path:
    """prefix/node_modules/.bin/echo-agent → ../echo-agent/bin/agent.py, which imports a
    module of another package of the same node_modules: the layout npm installs."""
    modules = root / "prefix" / "node_modules"
    (modules / "echo-agent" / "bin").mkdir(parents=True)
    (modules / "dependency").mkdir()
    (modules / "dependency" / "installed_dependency.py").write_text(DEPENDENCY)
    script = modules / "echo-agent" / "bin" / "agent.py"
    script.write_text(f"#!{sys.executable}\n" + AGENT.format(relative="../../dependency"))
    script.chmod(0o755)
    (modules / ".bin").mkdir()
    link = modules / ".bin" / "echo-agent"
    link.symlink_to("../echo-agent/bin/agent.py")
    return link


def venv_like(root: Path) -> Path:
    """venv/bin/echo-agent with ``#!venv/bin/python`` (a link to the real interpreter) and
    its module in venv/lib: the layout pip installs."""
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib" / "site").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "lib" / "site" / "installed_dependency.py").write_text(DEPENDENCY)
    script = venv / "bin" / "echo-agent"
    script.write_text(f"#!{venv / 'bin' / 'python'}\n" + AGENT.format(relative="../lib/site"))
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", [npm_like, venv_like], ids=["npm", "venv"])
def test_an_agent_installed_under_a_hidden_directory_starts_and_completes(
    harness: AgentHarness, mode: str, layout: object
) -> None:
    command = layout(harness.root / "installed")  # type: ignore[operator]
    assert str(command).startswith(("/tmp/", "/var/tmp/")) or os.environ.get("TMPDIR")
    profile = {"command": str(command), "sandbox": {"mode": mode}}
    result = harness.run("installed", "Reply with exactly INSTALLED-OK", harness.config(
        {"installed": profile}))  # fmt: skip
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    assert result.output == "INSTALLED-OK" and result.meta.sandbox["mode"] == mode


READS_HIDDEN = "import os; open(os.environ['READ_ME']).read()"
WRITES_FROZEN = "import os; open(os.environ['WRITE_ME'], 'w').write('x')"


@pytest.mark.parametrize("mode", MODES)
def test_a_launch_that_fails_on_a_hidden_path_names_it_and_the_key(
    harness: AgentHarness, mode: str
) -> None:
    hidden = harness.root / "agent-data" / "settings.json"  # under /tmp: hidden inside
    hidden.parent.mkdir()
    hidden.write_text("{}")
    profile = {"command": sys.executable, "args": ["-c", READS_HIDDEN],
               "env": {"READ_ME": str(hidden)}, "sandbox": {"mode": mode}}  # fmt: skip
    result = harness.run("reader", "hi", harness.config({"reader": profile}))
    assert result.meta.error_code == "agent_exited"
    assert "during initialize" in result.error
    assert f"names {hidden}, which the sandbox hides" in result.error
    assert "sandbox.readable" in result.error


@pytest.fixture
def read_only_dir() -> Iterator[Path]:
    """A folder outside /tmp and outside every write root: visible, read-only inside."""
    path = Path(tempfile.mkdtemp(prefix="installations-", dir=Path(__file__).parent))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("mode", MODES)
def test_a_launch_that_fails_writing_a_read_only_path_names_sandbox_state(
    harness: AgentHarness, mode: str, read_only_dir: Path
) -> None:
    target = read_only_dir / "state.json"
    profile = {"command": sys.executable, "args": ["-c", WRITES_FROZEN],
               "env": {"WRITE_ME": str(target)}, "sandbox": {"mode": mode}}  # fmt: skip
    result = harness.run("writer", "hi", harness.config({"writer": profile}))
    assert result.meta.error_code == "agent_exited", result.error
    # The path comes from the agent's environment: the error says so.
    assert f"given {target} (WRITE_ME), which the sandbox keeps read-only" in result.error
    assert "list it under sandbox.state in the profile" in result.error
    assert not target.exists()
    # Named by the agent alone (here: its argument is a script), it is named as the agent said.
    script = f"import sys; open({str(target)!r}, 'w').write('x')"
    profile = {"command": sys.executable, "args": ["-c", script], "sandbox": {"mode": mode}}
    result = harness.run("writer", "hi", harness.config({"writer": profile}))
    assert f"names {target}, which the sandbox keeps read-only" in result.error, result.error


def test_doctor_calls_an_agent_that_cannot_start_in_its_sandbox_not_ready(
    tmp_path: Path,
) -> None:
    hidden = tmp_path / "agent-data" / "settings.json"
    hidden.parent.mkdir()
    hidden.write_text("{}")
    works = npm_like(tmp_path / "installed")
    profiles = [
        {"name": "reader", "command": sys.executable, "args": ["-c", READS_HIDDEN],
         "env": {"READ_ME": str(hidden)}},
        {"name": "installed", "command": str(works)},
    ]  # fmt: skip
    config = tmp_path / "acp-bridge.yaml"
    config.write_text(json.dumps({"acp": {"agents": profiles}}))
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", "--config", str(config), "doctor", "--json",
         "reader", "installed"],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    reader, installed = json.loads(done.stdout)
    assert done.returncode == 1
    assert not reader["ready"] and installed["ready"], done.stdout
    (start,) = [c for c in reader["checks"] if c["name"] == "start"]
    assert not start["ok"] and "sandbox.readable" in start["detail"]
    assert "during initialize" in start["detail"]
    (start,) = [c for c in installed["checks"] if c["name"] == "start"]
    assert start["ok"] and "answered initialize in the sandbox" in start["detail"]


TOLD = Path(__file__).parents[1] / "agents" / "told_agent.py"
SPY = Path(__file__).parents[1] / "agents" / "spy_agent.py"


@pytest.mark.parametrize("mode", MODES)
def test_a_folder_given_as_an_argument_is_named_with_sandbox_state(
    harness: AgentHarness, mode: str, read_only_dir: Path
) -> None:
    """fast-agent's ``--home DIR``: the agent says only "storage write failed" (kimi's words),
    the error names the folder, how it was given, and the key; with the key it runs."""
    home = read_only_dir / "fahome"
    profile = {"command": sys.executable, "args": [str(TOLD), "--home", str(home), "--quiet"],
               "sandbox": {"mode": mode}}  # fmt: skip
    result = harness.run("told", "[]", harness.config({"told": profile}))
    assert result.meta.error_code == "agent_exited", result.error
    assert "storage write failed" in (result.meta.stderr_tail or "")
    assert (
        f"the agent was given {home} (argument --home), which the sandbox keeps read-only: "
        "if the agent keeps its state there, list it under sandbox.state in the profile"
    ) in result.error
    profile["sandbox"] = {"mode": mode, "state": [str(home)]}
    result = harness.run("told", "[]", harness.config({"told": profile}))
    assert result.status == "done", result.error
    assert (home / "state.json").read_text() == "{}"


@pytest.mark.parametrize("mode", MODES)
def test_a_relocated_state_folder_is_shown_as_it_is_and_secrets_are_not(
    harness: AgentHarness, mode: str, read_only_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relocation such as ``CODEX_HOME`` passed through: its path is no secret — the error
    and the stderr tail show it (they said ``[REDACTED]``), with the key that fixes it —
    while a value under a secret-looking name stays hidden."""
    home = read_only_dir / "codex-home"
    token = "told-token-that-must-not-show"
    monkeypatch.setenv("TOLD_HOME", str(home))
    monkeypatch.setenv("TOLD_TOKEN", token)
    profile = {"command": sys.executable, "args": [str(TOLD)], "sandbox": {"mode": mode},
               "env_passthrough": ["TOLD_HOME", "TOLD_TOKEN"]}  # fmt: skip
    result = harness.run("told", "[]", harness.config({"told": profile}))
    assert result.meta.error_code == "agent_exited", result.error
    tail = result.meta.stderr_tail or ""
    assert f"cannot write {home}/state.json" in tail and f"TOLD_HOME={home}" in tail, tail
    assert token not in tail + result.error and "TOLD_TOKEN=[REDACTED]" in tail
    # Said once, of the folder, with how it was given: not of the file the agent named in it.
    assert result.error.endswith(
        f"during initialize; the agent was given {home} (TOLD_HOME), which the sandbox keeps "
        "read-only: if the agent keeps its state there, list it under sandbox.state in the "
        "profile"
    ), result.error


@pytest.mark.parametrize("mode", MODES)
def test_an_error_in_session_setup_that_names_no_path_says_where_the_agent_may_write(
    harness: AgentHarness, mode: str, read_only_dir: Path
) -> None:
    """kimi answers ``session/new`` with "storage write failed" when its state folder is
    read-only: nothing names the folder, so the error says what the agent may write, and
    names the folder its environment points at."""
    error = {"code": -32603, "message": "Internal error",
             "data": {"details": "storage write failed: unrecognized I/O error"}}  # fmt: skip
    script = harness.root / "spy.json"
    script.write_text(json.dumps({"errors": {"session/new": error}}))
    home = read_only_dir / "kimi-code"
    home.mkdir()
    profile = {"command": sys.executable, "args": [str(SPY), str(script)],
               "env": {"KIMI_CODE_HOME": str(home)}, "sandbox": {"mode": mode}}  # fmt: skip
    result = harness.run("kimi-like", "hi", harness.config({"kimi-like": profile}))
    assert result.meta.error_code == "agent_error", result.error
    assert result.error.startswith("agent answered session/new with error -32603")
    assert (
        f"the agent was given {home} (KIMI_CODE_HOME), which the sandbox keeps read-only: "
        "if the agent keeps its state there, list it under sandbox.state in the profile"
    ) in result.error
    del profile["env"]
    result = harness.run("kimi-like", "hi", harness.config({"kimi-like": profile}))
    assert (
        "the agent failed to write and names no path the sandbox refuses: it may write "
        f"only {harness.workspace}" in result.error
    ), result.error


@pytest.mark.parametrize("mode", MODES)
def test_a_state_path_follows_the_agents_own_relocation(
    harness: AgentHarness, mode: str, read_only_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``state: ["${TOLD_HOME:-~/.told}"]`` (as ``${CODEX_HOME:-~/.codex}``): where the agent's
    environment puts it — the profile's ``env``, or the host's through ``env_passthrough``."""
    monkeypatch.delenv("TOLD_HOME", raising=False)
    state = {"mode": mode, "state": ["${TOLD_HOME:-~/.told}"]}
    by_profile = read_only_dir / "by-profile"
    profile = {"command": sys.executable, "args": [str(TOLD)], "sandbox": state,
               "env": {"TOLD_HOME": str(by_profile)}}  # fmt: skip
    result = harness.run("told", "[]", harness.config({"told": profile}))
    assert result.status == "done", result.error
    assert (by_profile / "state.json").read_text() == "{}"
    passed = read_only_dir / "passed"
    monkeypatch.setenv("TOLD_HOME", str(passed))
    profile = {"command": sys.executable, "args": [str(TOLD)], "sandbox": state,
               "env_passthrough": ["TOLD_HOME"]}  # fmt: skip
    result = harness.run("told", "[]", harness.config({"told": profile}))
    assert result.status == "done", result.error
    assert (passed / "state.json").read_text() == "{}"
