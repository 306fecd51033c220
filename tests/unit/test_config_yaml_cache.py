"""The YAML parse cache: same result as parsing, never stale, never in the way."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_bridge.config._yaml import located as yamlsource
from acp_bridge.config._yaml.located import load_yaml
from acp_bridge.errors import ConfigError


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder


def no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: str, path: Path) -> None:
        raise AssertionError("parsed although cached")

    monkeypatch.setattr(yamlsource, "parse_yaml", refuse)


def test_a_second_load_is_served_from_the_cache(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("# comment\nname: x\nargs: [a, 2, true, null, 1.5]\nenv: {K: v}\n")
    first = load_yaml(path)
    assert list(cache.rglob("*.json"))
    no_parsing(monkeypatch)
    second = load_yaml(path)
    assert (
        second.data
        == first.data
        == {"name": "x", "args": ["a", 2, True, None, 1.5], "env": {"K": "v"}}
    )
    assert second.values == first.values and second.keys == first.keys
    assert str(second.locate(("args", 1))) == str(first.locate(("args", 1))) == f"{path}:3:11"


def test_a_changed_file_is_parsed_again_even_with_the_same_size(
    tmp_path: Path, cache: Path
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: aaa\n")
    assert load_yaml(path).data == {"name": "aaa"}
    path.write_text("name: bbb\n")  # same size, likely the same mtime tick
    assert load_yaml(path).data == {"name": "bbb"}


def test_errors_are_not_cached(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("a: [1,\n")
    for _ in range(2):
        with pytest.raises(ConfigError, match="invalid YAML"):
            load_yaml(path)


def test_non_json_data_and_an_unusable_cache_still_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    path = tmp_path / "p.yaml"
    path.write_text("when: 2026-01-01\n")
    assert str(load_yaml(path).data["when"]) == "2026-01-01"
    assert str(load_yaml(path).data["when"]) == "2026-01-01"
