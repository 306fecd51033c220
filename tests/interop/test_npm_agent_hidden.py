"""An npm-installed agent under a hidden directory starts and completes under the default
sandbox (issue 20, "Done when"). Our TypeScript test agent (tests/agents/ts_v2: the official
SDK and its dependencies from its lockfile) is installed by ``npm ci`` into a prefix under
/tmp — a directory the sandbox replaces with its own — and run as ``node PREFIX/agent.mjs``:
the sandbox must bring the whole package folder (its ``node_modules``), not only the file
named on the command line. Needs npm and the npm registry."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.interop.harness import run

pytestmark = pytest.mark.interop

SOURCE = Path(__file__).resolve().parent.parent / "agents" / "ts_v2"
RUN_RULE = {"kind": "execute", "name": "run_command", "decision": "allow"}


@pytest.mark.timeout(600)
def test_an_npm_agent_installed_under_tmp_completes_a_turn_in_the_default_sandbox(
    tmp_path: Path,
) -> None:
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        pytest.skip("npm and node are needed")
    prefix = tmp_path / "prefix"  # under /tmp: hidden inside the sandbox
    prefix.mkdir()
    for name in ("package.json", "package-lock.json", "agent.mjs"):
        shutil.copy(SOURCE / name, prefix / name)
    subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=prefix, check=True, timeout=500, capture_output=True,
    )  # fmt: skip
    assert (prefix / "node_modules" / "@agentclientprotocol" / "sdk").is_dir()
    work = tmp_path / "work"
    work.mkdir()
    profile = {
        "command": node,
        "args": [str(prefix / "agent.mjs")],
        "timeouts": {"startup": 30, "session": 30, "run": 60},
        "permissions": {"mode": "workspace-write", "rules": [RUN_RULE]},
    }  # no sandbox key: the default, auto
    result = run("hidden-npm-agent", profile, "write and run", work).result
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    assert result.meta.sandbox["mode"] in ("bwrap", "landlock")
    assert (work / "from-ts-agent.txt").read_text() == "written through the bridge's MCP tools\n"
