"""Paths resolved by the kernel give pathlib's and the standard library's answers, errors
included; ``path_of`` hands out one ``Path`` per text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_bridge._os.fs.paths import kernel_real_path, path_of, real_path, resolved


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "real" / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    return tmp_path


NAMES = [
    "real",
    "real/file",
    "link",
    "link/sub",
    "link/missing",
    "link/../real/sub",
    "link/./sub",
    "link/sub/..",
    "link/sub/",
    "missing",
    "missing/deeper",
    "dangling",
    "dangling/below",
    "loop",
    "loop/below",
    "real/file/below",
]


def outcome(call: object, *args: object) -> str:
    try:
        return str(call(*args))  # type: ignore[operator]
    except (OSError, RuntimeError, ValueError) as exc:
        return type(exc).__name__


@pytest.mark.parametrize("name", NAMES)
def test_resolved_is_pathlibs_resolve(tree: Path, name: str) -> None:
    for text in (f"{tree}/{name}", f"{tree}//{name}"):
        assert outcome(resolved, text) == outcome(lambda t: Path(t).resolve(), text)


@pytest.mark.parametrize("name", NAMES)
def test_real_path_is_the_standard_librarys(tree: Path, name: str) -> None:
    text = f"{tree}/{name}"
    assert real_path(text) == os.path.realpath(text)
    found = kernel_real_path(text)
    assert found is None or found == os.path.realpath(text)


def test_relative_paths_resolve_against_the_working_directory(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree)
    for name in ("link/sub", "missing", "."):
        assert resolved(name) == Path(name).resolve()
        assert real_path(name) == os.path.realpath(name)


def test_a_nul_is_refused_as_pathlib_refuses_it(tree: Path) -> None:
    with pytest.raises(ValueError):
        resolved(f"{tree}/a\0b")


def test_path_of_is_one_path_per_text() -> None:
    first = path_of("/some/where/x")
    assert first == Path("/some/where/x")
    assert path_of("/some/where/x") is first
    assert path_of("/some/where/y") is not first
