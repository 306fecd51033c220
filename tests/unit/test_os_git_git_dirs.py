"""What the bridge reads back from a git folder an agent had: a branch's commit and object
files, as plain data — never through a link, a FIFO or a file past its bound (a table over
the ways an agent can shape that folder)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from acp_bridge._os.git.git_dirs import (
    MAX_PACKED_REFS,
    branch_tip,
    read_small,
    take_objects,
    write_git_dir,
)

TIP = "ab" * 20
BRANCH = "acp-bridge/t1"


def _agent_git(tmp_path: Path) -> Path:
    git_dir = tmp_path / "work" / ".git"
    write_git_dir(git_dir, borrow=[], object_format="sha1", head=BRANCH, commit=TIP)
    return git_dir


def _ref(git_dir: Path) -> Path:
    return git_dir / "refs" / "heads" / BRANCH


def _packed(git_dir: Path, text: str) -> None:
    _ref(git_dir).unlink()
    (git_dir / "packed-refs").write_text(text)


def _ref_link(git_dir: Path) -> None:
    elsewhere = git_dir.parent.parent / "elsewhere"
    elsewhere.write_text(TIP + "\n")
    _ref(git_dir).unlink()
    _ref(git_dir).symlink_to(elsewhere)


def _heads_link(git_dir: Path) -> None:
    moved = git_dir.parent.parent / "heads"
    (git_dir / "refs" / "heads").rename(moved)
    (git_dir / "refs" / "heads").symlink_to(moved)


def _git_dir_link(git_dir: Path) -> None:
    moved = git_dir.parent.parent / "real-git"
    git_dir.rename(moved)
    git_dir.symlink_to(moved)


def _fifo(git_dir: Path) -> None:
    _ref(git_dir).unlink()
    os.mkfifo(_ref(git_dir))


CASES: dict[str, tuple[Callable[[Path], object], str | None]] = {
    "loose ref": (lambda g: None, TIP),
    "packed ref": (lambda g: _packed(g, f"# pack-refs\n{TIP} refs/heads/{BRANCH}\n"), TIP),
    "packed, another branch": (lambda g: _packed(g, f"{TIP} refs/heads/other\n"), None),
    "packed, past its bound": (
        lambda g: _packed(g, f"{TIP} refs/heads/{BRANCH}\n" + "#" * MAX_PACKED_REFS),
        None,
    ),
    "not an id": (lambda g: _ref(g).write_text("ref: refs/heads/main\n"), None),
    "a short id": (lambda g: _ref(g).write_text(TIP[:12] + "\n"), None),
    "the ref a link": (_ref_link, None),
    "refs/heads a link": (_heads_link, None),
    ".git a link": (_git_dir_link, None),
    ".git a file": (lambda g: (shutil.rmtree(g), g.write_text("gitdir: /\n")), None),
    "the ref a FIFO": (_fifo, None),
    "the ref a folder": (lambda g: (_ref(g).unlink(), _ref(g).mkdir()), None),
    "no .git": (lambda g: shutil.rmtree(g), None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_branch_tip_is_read_as_data_or_not_at_all(tmp_path: Path, case: str) -> None:
    git_dir = _agent_git(tmp_path)
    shape, expected = CASES[case]
    shape(git_dir)
    assert branch_tip(git_dir, BRANCH, "sha1") == expected


def test_read_small_reads_regular_files_within_their_bound_only(tmp_path: Path) -> None:
    (tmp_path / "small").write_bytes(b"12345")
    (tmp_path / "link").symlink_to(tmp_path / "small")
    os.mkfifo(tmp_path / "fifo")
    assert read_small(tmp_path / "small", 5) == b"12345"
    assert read_small(tmp_path / "small", 4) is None
    for other in ("link", "fifo", "missing", "."):
        assert read_small(tmp_path / other, 100) is None, other


def test_take_objects_moves_object_files_by_name_and_nothing_else(tmp_path: Path) -> None:
    source, target = tmp_path / "agent-objects", tmp_path / "ours"
    outside = tmp_path / "outside"
    outside.write_text("not an object")
    (source / "ab").mkdir(parents=True)
    (source / "ab" / ("cd" * 19)).write_text("loose")
    (source / "ab" / ("ef" * 19)).symlink_to(outside)  # a link: left
    (source / "ab" / "not-hex").write_text("x")
    (source / "pack").mkdir()
    (source / "pack" / f"pack-{'1' * 40}.pack").write_text("pack")
    (source / "pack" / f"pack-{'1' * 40}.idx").write_text("idx")
    (source / "pack" / "evil.pack").write_text("x")
    (source / "info").mkdir()
    (source / "info" / "alternates").write_text("/\n")
    (source / "cd").symlink_to(tmp_path, target_is_directory=True)  # a folder that is a link
    assert take_objects(source, target, "sha1") == 3
    found = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert found == sorted(
        [f"ab/{'cd' * 19}", f"pack/pack-{'1' * 40}.idx", f"pack/pack-{'1' * 40}.pack"]
    )
    assert outside.read_text() == "not an object" and not (target / "info").exists()
