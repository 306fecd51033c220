"""A tree a run's processes filled is removed whatever they did to it — folders without
write or search permission, links out — and nothing a link leads to is touched."""

from __future__ import annotations

from pathlib import Path

from acp_bridge._os.fs.removal import remove_tree


def test_a_locked_tree_with_links_out_is_removed_and_nothing_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "file.txt").write_text("mine")
    tree = tmp_path / "tree"
    (tree / "locked" / "deeper").mkdir(parents=True)
    (tree / "locked" / "deeper" / "file.txt").write_text("x")
    (tree / "locked" / "to-outside").symlink_to(outside, target_is_directory=True)
    (tree / "file-link").symlink_to(outside / "keep" / "file.txt")
    (tree / "locked" / "deeper").chmod(0)
    (tree / "locked").chmod(0o500)
    assert remove_tree(tree)
    assert not tree.exists() and (outside / "keep" / "file.txt").read_text() == "mine"


def test_a_link_a_file_or_nothing_at_the_path(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "file").write_text("kept")
    (tmp_path / "link").symlink_to(target, target_is_directory=True)
    (tmp_path / "file").write_text("x")
    for name in ("link", "file", "missing"):
        assert remove_tree(tmp_path / name), name
        assert not (tmp_path / name).is_symlink() and not (tmp_path / name).exists()
    assert (target / "file").read_text() == "kept"
