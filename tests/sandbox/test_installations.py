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
    assert f"names {target}, which the sandbox keeps read-only" in result.error
    assert "list it under sandbox.state in the profile" in result.error
    assert not target.exists()


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
