"""A caller's ``task_id`` names the run, on every entry path, and is checked first."""

from __future__ import annotations

from pathlib import Path

from acp_bridge._entries.bash import bash_sync
from acp_bridge._entries.request import EntryRequest, run_entry
from tests.helpers import default_config, run_bounded


def test_the_callers_task_id_is_the_envelopes() -> None:
    assert bash_sync("true", task_id="lint-fix.2", config=default_config()).task_id == "lint-fix.2"
    request = EntryRequest(entry="bash", task="true", task_id="via-the-table")
    result = run_bounded(run_entry, request, config=default_config())
    assert result.task_id == "via-the-table" and result.status == "done"


def test_a_task_id_that_could_name_a_path_is_refused(tmp_path: Path) -> None:
    result = bash_sync("touch ran", task_id="../escape", cwd=tmp_path, config=default_config())
    assert result.status == "failed" and result.meta.error_code == "config_error"
    assert "task_id" in result.error and result.task_id.startswith("sub_")
    assert result.meta.entry == "bash"
    assert not (tmp_path / "ran").exists()  # refused before anything ran
