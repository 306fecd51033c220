"""Children's exits read from pidfds on the loop: the same exit statuses, no thread per
child (Python 3.11; later versions do this themselves); commands looked up as before."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path

import anyio
import pytest

from acp_bridge._os.child_exits import PidfdExits, watch_exits_by_pidfd
from acp_bridge._os.command_lookup import resolve_command
from acp_bridge._os.procgroup import ProcessGroup

SCRIPTS = {"exit 0": 0, "exit 3": 3, "kill -TERM $$": -15, "kill -KILL $$": -9}


def test_exit_statuses_and_no_waitpid_threads() -> None:
    async def main() -> list[int | None]:
        codes = []
        for script in SCRIPTS:
            group = await ProcessGroup.start(["/bin/sh", "-c", script], env=dict(os.environ))
            await group.process.wait()
            codes.append(group.returncode)
            await group.aclose()
        return codes

    assert anyio.run(main) == list(SCRIPTS.values())
    waiting = [t for t in threading.enumerate() if t.name.startswith("asyncio-waitpid")]
    if sys.version_info < (3, 12) and hasattr(os, "pidfd_open"):
        assert isinstance(asyncio.get_child_watcher(), PidfdExits)
        assert not waiting


def test_a_loop_in_another_thread_sees_its_own_children() -> None:
    watch_exits_by_pidfd()
    found: list[int | None] = []

    async def one() -> None:
        group = await ProcessGroup.start(["/bin/sh", "-c", "exit 7"], env=dict(os.environ))
        await group.process.wait()
        found.append(group.returncode)
        await group.aclose()

    threads = [threading.Thread(target=anyio.run, args=(one,)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert found == [7, 7, 7]


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
