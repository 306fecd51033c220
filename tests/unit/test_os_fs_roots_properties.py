"""Property-based tests of confined path resolution: on a tree full of symlinks pointing in
and out, no spelling of a path is ever resolved to a place outside the roots, and what is
resolved is where the kernel would go."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_bridge._os.fs.roots import Roots
from acp_bridge.errors import SandboxViolation

# Names in the tree below; a path is spelled from these, "." and "..".
NAMES = ["a", "b", "f.txt", "in_rel", "in_abs", "out_rel", "out_abs", "loop", "up", "missing"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    """root/ (the only root) with nested dirs and every kind of symlink; outside/ beside it."""
    base = tmp_path_factory.mktemp("props").resolve()
    root, outside = base / "root", base / "outside"
    for directory in (root / "a" / "b", outside / "a"):
        directory.mkdir(parents=True)
    for directory in (root, root / "a", root / "a" / "b", outside, outside / "a"):
        (directory / "f.txt").write_text("x")
    (root / "a" / "in_rel").symlink_to("b")
    (root / "a" / "in_abs").symlink_to(root / "a" / "b")
    (root / "a" / "out_rel").symlink_to("../../outside/a")
    (root / "a" / "out_abs").symlink_to(outside)
    (root / "a" / "loop").symlink_to("loop")
    (root / "a" / "b" / "up").symlink_to("../..")  # back up to root: inside
    (root / "out_rel").symlink_to("../outside")
    yield root, outside, base


SPELLING = st.lists(st.sampled_from([*NAMES, ".", ".."]), min_size=0, max_size=7)
# Directory steps that stay inside the root, from each directory (relative to the root):
# following them always leads to an existing directory, so each spelling names a real file.
STEPS = {
    "": ["a", ".", "a/in_rel/up", "a/in_abs"],
    "a": ["b", "in_rel", "in_abs", ".", ".."],
    "a/b": ["up", ".", ".."],
}
_WHERE = {"": "", "a": "a", "a/b": "a/b"}


@st.composite
def inside_spellings(draw: st.DrawFn) -> list[str]:
    here, parts = "", []
    for _ in range(draw(st.integers(0, 6))):
        step = draw(st.sampled_from(STEPS[here]))
        parts.append(step)
        here = os.path.normpath(os.path.join(here, _physical(here, step))).lstrip(".")
        here = "" if here in ("", ".") else here
    return [*parts, "f.txt"]


def _physical(here: str, step: str) -> str:
    """Where a step leads, by the tree's links (they are fixed: see the fixture)."""
    links = {("a", "in_rel"): "b", ("a", "in_abs"): "b", ("a/b", "up"): "../..",
             ("", "a/in_rel/up"): "", ("", "a/in_abs"): "a/b"}  # fmt: skip
    return links.get((here, step), step)


def inside(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(str(root) + "/")


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(SPELLING, st.booleans(), st.sampled_from(["root", "outside", "base"]))
def test_no_spelling_resolves_outside_the_roots(
    tree: tuple[Path, Path, Path], parts: list[str], follow_last: bool, start: str
) -> None:
    root, outside, base = tree
    origin = {"root": root, "outside": outside, "base": base}[start]
    raw = "/".join([str(origin), *parts])
    roots = Roots.for_session(root, [root], [root])
    try:
        resolved = roots.resolve(raw, write=False, follow_last=follow_last)
    except (SandboxViolation, FileNotFoundError, NotADirectoryError):
        return
    with resolved:
        # The open parent directory really is inside the root (asked of the kernel, by fd).
        real_parent = os.readlink(f"/proc/self/fd/{resolved.dir_fd}")
        assert inside(real_parent, root), (raw, real_parent)
        assert inside(str(resolved.path), root), (raw, resolved.path)
        if follow_last and resolved.name and os.path.exists(raw):
            # Where it went is where the kernel goes for the same spelling.
            assert os.path.realpath(raw) == str(resolved.path), raw


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(inside_spellings())
def test_what_stays_inside_is_found(tree: tuple[Path, Path, Path], parts: list[str]) -> None:
    """A spelling whose every step stays inside the root (checked with the kernel's own
    resolution of each prefix) and that names an existing file is never refused."""
    root, _, _ = tree
    raw = "/".join([str(root), *parts])
    prefixes = ["/".join([str(root), *parts[:n]]) for n in range(len(parts) + 1)]
    assert os.path.isfile(raw), raw  # the strategy only spells existing files
    assert all(inside(os.path.realpath(p), root) for p in prefixes)
    roots = Roots.for_session(root, [root], [root])
    with roots.resolve(raw, write=False, follow_last=True) as resolved:
        assert str(resolved.path) == os.path.realpath(raw)
