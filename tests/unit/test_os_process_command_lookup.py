"""Commands looked up before the spawn as ``exec`` would look them up."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_bridge._os.process.command_lookup import resolve_command


def test_commands_are_looked_up_as_exec_would(tmp_path: Path) -> None:
    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    (tmp_path / "bin" / "folder").mkdir()
    (tmp_path / "bin" / "plain").write_text("")
    path = f"/nowhere:{tmp_path}//bin/:{tmp_path}/bin"
    assert resolve_command("tool", path, None) == str(tool)
    assert resolve_command("./bin/tool", "", tmp_path) == str(tool)
    assert resolve_command(f"{tmp_path}//bin/tool", "", None) == str(tool)
    assert resolve_command("tool", "bin", tmp_path) == str(tool)  # a relative PATH entry
    with pytest.raises(IsADirectoryError):
        resolve_command("folder", path, None)
    with pytest.raises(PermissionError):
        resolve_command("plain", path, None)
    with pytest.raises(FileNotFoundError):
        resolve_command("missing", path, None)
