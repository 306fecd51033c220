"""Modes and owners under a folder, recorded and put back: what changed on the same file
is put back (folders first, so what a folder made 0 hid is reached); a file replaced
meanwhile is someone else's and left alone; links are not followed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from acp_bridge._os.fs.modes import record_modes, restore_modes


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_changed_modes_are_put_back_and_replaced_files_left_alone(tmp_path: Path) -> None:
    top = tmp_path / "git"
    (top / "objects" / "ab").mkdir(parents=True)
    (top / "config").write_text("[core]\n")
    (top / "objects" / "ab" / "cd").write_text("object")
    (top / "index").write_text("index")
    outside = tmp_path / "outside"
    outside.write_text("x")
    outside.chmod(0o600)
    (top / "link").symlink_to(outside)
    kept = (top, top / "config", top / "objects", top / "objects/ab", top / "objects/ab/cd")
    before = {p: _mode(p) for p in kept}
    recorded = record_modes([top])
    assert recorded.complete
    (top / "config").chmod(0o666)
    (top / "objects" / "ab" / "cd").chmod(0o777)
    (top / "objects" / "ab").chmod(0)
    (top / "objects").chmod(0o777)
    replacement = tmp_path / "new-index"
    replacement.write_text("theirs")
    replacement.chmod(0o640)
    os.replace(replacement, top / "index")  # as git writes an index: a new file
    restored = restore_modes(recorded)
    assert {p: _mode(p) for p in before} == before
    assert _mode(top / "index") == 0o640  # not the file that was recorded
    assert _mode(outside) == 0o600  # never through the link
    assert len(restored) == 4
    assert restore_modes(recorded) == []  # nothing left to put back


def test_a_bound_on_entries_records_in_part(tmp_path: Path) -> None:
    for n in range(10):
        (tmp_path / f"f{n}").write_text("x")
    assert not record_modes([tmp_path], limit=5).complete
    assert record_modes([tmp_path]).complete
