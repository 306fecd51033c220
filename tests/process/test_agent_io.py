"""Writing to an agent that stopped listening, transcripts that are pruned, and the public
API whatever was imported first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from acp_bridge.errors import ErrorCode
from tests.conftest import AgentHarness

FAST = {"startup": 5, "session": 5, "run": 5, "cancel_grace": 0.5, "shutdown_grace": 0.5}


def test_an_agent_that_closed_its_stdin_ends_the_run_cleanly(harness: AgentHarness) -> None:
    # Without the sandbox: its launcher keeps a copy of the agent's stdin open, so there an
    # agent that closed its stdin is one that stopped reading, and the run's timeout ends it.
    config = harness.fault("close-stdin", timeouts=FAST, sandbox={"mode": "off"})
    result = harness.run("fault", "go", config)
    assert result.meta.error_code == ErrorCode.AGENT_EXITED
    assert "closed its stdin" in result.error
    assert result.meta.session_id == "fault_session_1"  # what was gathered is kept


def test_old_transcripts_are_pruned_to_the_newest(harness: AgentHarness) -> None:
    directory = harness.root / "transcripts"
    config = harness.fault("ok", timeouts=FAST)
    keep_two = config.config.model_copy(
        update={"transcripts": config.config.transcripts.model_copy(update={"keep": 2})}
    )
    config.config = keep_two
    paths = [harness.run("fault", "go", config).meta.transcript for _ in range(4)]
    assert sorted(p.name for p in directory.glob("*.jsonl")) == sorted(
        Path(p or "").name for p in paths[-2:]
    )


PUBLIC_API_CHECK = """
import importlib, json, pkgutil, random, sys, types
import acp_bridge
order = sys.argv[1]
names = list(acp_bridge.__all__)
modules = [m.name for m in pkgutil.walk_packages(acp_bridge.__path__, "acp_bridge.")
           if not m.name.endswith("__main__")]
random.Random(int(sys.argv[2])).shuffle(modules)
if order == "exports-first":
    values = {n: getattr(acp_bridge, n) for n in names}
for name in modules:
    importlib.import_module(name)
values = {n: getattr(acp_bridge, n) for n in names}
print(json.dumps({
    "modules_as_exports": [n for n, v in values.items() if isinstance(v, types.ModuleType)],
    # Only a direct submodule can shadow an export (importing it sets an attribute of the
    # package); acp_bridge._entries.bash may share the name of the function it holds.
    "shadowing": [m for m in modules if m.count(".") == 1 and m.rsplit(".", 1)[1] in names],
    "callables": {n: callable(values[n]) for n in ("acp_spawn", "bash", "spawn", "ask")},
}))
"""


# Slow: each order imports every module of the package, Ray, pydantic-ai and the MCP SDK
# included (~5 s of CPU each). The default suite's check that no direct submodule is named
# like an export reads names only (tests/unit/test_package_layout.py).
@pytest.mark.slow
def test_the_public_api_is_the_same_whatever_was_imported_first() -> None:
    for order, seed in (("modules-first", "1"), ("exports-first", "2")):
        out = subprocess.run(
            [sys.executable, "-c", PUBLIC_API_CHECK, order, seed],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        report = json.loads(out.stdout)
        assert report["modules_as_exports"] == [] and report["shadowing"] == [], report
        assert all(report["callables"].values()), report
