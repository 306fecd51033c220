"""The table of entries: each row names a function that exists, and every face reads the
table (what the MCP face offers, the default timeout a batch keeps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_bridge._batch.node_run import effective_timeout
from acp_bridge._entries.entry_table import ENTRY_TABLE, entries_offered
from acp_bridge._entries.request import EntryRequest
from acp_bridge._mcp.arguments import START_ENTRIES
from acp_bridge._mcp.tool_catalog import ENTRY_TOOLS
from acp_bridge.config import load_config


def test_each_row_names_its_entry_function() -> None:
    for name, kind in ENTRY_TABLE.items():
        assert kind.name == name
        assert kind.function().__name__ == name


def test_the_mcp_face_offers_what_the_table_says() -> None:
    assert START_ENTRIES == entries_offered("start") == ("acp_spawn", "bash", "spawn")
    assert entries_offered("mcp") == ENTRY_TOOLS
    assert "ask" not in entries_offered("tool")


@pytest.mark.parametrize(
    ("request_data", "expected"),
    [
        ({"entry": "acp_spawn", "agent": "slow", "task": "t"}, 77.0),
        ({"entry": "bash", "task": "true"}, 33.0),
        ({"entry": "spawn", "task": "t", "tools": ["bash"]}, 55.0),
        ({"entry": "ask", "task": "t"}, 55.0),
        ({"entry": "bash", "task": "true", "timeout": 2}, 2.0),
    ],
)
def test_a_batch_keeps_the_default_timeout_the_entry_applies(
    tmp_path: Path, request_data: dict[str, object], expected: float
) -> None:
    config = tmp_path / "acp-bridge.yaml"
    config.write_text(
        "tools:\n  bash: {timeout: 33}\n  spawn: {timeout: 55}\n"
        "acp:\n  agents:\n    - {name: slow, command: /bin/true, timeouts: {run: 77}}\n"
    )
    loaded = load_config(config, search=False)
    request = EntryRequest.model_validate(request_data)
    assert effective_timeout(request, loaded) == expected
