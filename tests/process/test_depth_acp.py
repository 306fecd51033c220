"""Depth across the ACP entry: an ACP agent that runs ``acp-bridge run`` in a terminal the
bridge serves gets ``depth_limit`` from that inner bridge."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from acp_bridge._entries.acp_spawn.entry import acp_spawn
from acp_bridge.config import load_config
from acp_bridge.envelope import is_envelope
from tests.helpers import run_bounded

AGENT = Path(__file__).parents[1] / "agents" / "nested_bridge_agent.py"


def last_envelope(output: str) -> dict[str, object]:
    """The last envelope in a terminal's output (stdout and stderr come merged there)."""
    decoder = json.JSONDecoder()
    found = []
    for start in (i for i, ch in enumerate(output) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(output, start)
        except json.JSONDecodeError:
            continue
        if is_envelope(value):
            found.append(value)
    assert found, f"no envelope in the terminal output: {output!r}"
    return found[-1]  # type: ignore[no-any-return]


def test_an_acp_agent_running_acp_bridge_run_in_its_terminal_gets_depth_limit(
    tmp_path: Path,
) -> None:

    inner = [sys.executable, "-m", "acp_bridge", "run", "nester", "say hi"]
    (tmp_path / "acp-bridge.yaml").write_text(
        json.dumps(  # JSON is YAML; the inner bridge finds this file in its cwd
            {
                "subtasks": {"max_depth": 1},
                "acp": {
                    "agents": [
                        {
                            "name": "nester",
                            "description": "runs a nested acp-bridge in its terminal",
                            "command": sys.executable,
                            "args": [str(AGENT), "--", *inner],
                            "cwd": str(tmp_path),
                            # It runs a command without asking first: allowed only by a rule.
                            "permissions": {"rules": [{"kind": "execute", "decision": "allow"}]},
                        }
                    ]
                },
            }
        )
    )
    config = load_config(tmp_path / "acp-bridge.yaml", environ={})

    result = run_bounded(acp_spawn, "nester", "go", cwd=tmp_path, config=config, limit=60)

    assert result.ok, result.error
    assert result.meta.depth == 1
    nested = last_envelope(str(result.output))  # the inner bridge's, from the terminal
    assert nested["status"] == "failed"
    assert nested["meta"]["error_code"] == "depth_limit" and nested["meta"]["depth"] == 2
