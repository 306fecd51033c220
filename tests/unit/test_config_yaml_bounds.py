"""Config input is held to bounds: only regular files (never blocking on a FIFO), a size, a
depth, an alias expansion budget, known tags; numbers with documented maxima; nested
``${A:-${B:-z}}`` defaults. Every refusal is a located ConfigError, never a traceback.
(The one-line-each cases are broken fixtures: tests/fixtures/broken/.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp_bridge.config import load_config, validate_files
from acp_bridge.config._yaml.bounds import MAX_YAML_BYTES
from acp_bridge.errors import ConfigError


def problems_of(path: Path) -> list[str]:
    return [str(p) for p in validate_files([path], environ={})[path]]


def test_a_fifo_as_the_config_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "acp-bridge.yaml"
    os.mkfifo(fifo)
    # In a child process with a deadline: a regression would block it forever.
    run = subprocess.run(
        [sys.executable, "-m", "acp_bridge", "--config", str(fifo), "run", "demo", "hi"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 2
    assert "not a regular file: it is a FIFO (named pipe)" in run.stderr
    assert '"error_code": "config_error"' in run.stdout


@pytest.mark.parametrize(
    ("path", "kind"), [("/dev/zero", "a character device"), ("/tmp", "a directory")]
)
def test_devices_and_directories_are_not_config_files(path: str, kind: str) -> None:
    with pytest.raises(ConfigError, match=f"not a regular file: it is {kind}"):
        load_config(Path(path), environ={}, search=False)


def test_a_config_file_has_a_size_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * MAX_YAML_BYTES + "\n")
    [problem] = problems_of(big)
    assert f"a YAML file is read up to {MAX_YAML_BYTES} bytes (4 MiB)" in problem


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("args: " + "[" * 20_000 + "]" * 20_000, "more than 64 nested [ or { brackets"),
        ("args:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 1500)), "far too deeply"),
        ("args: [1" + "0" * 5000 + "]", "invalid YAML: Exceeds the limit"),
    ],
    ids=["20000 deep", "1500 indents deep", "5000-digit integer"],
)
def test_pathological_yaml_is_a_located_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(f"name: p\ncommand: agent\n{text}\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}:1:1: ") and message in problem


def test_merged_keys_and_core_tags_in_a_profile_file(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "merged.yaml").write_text(
        "name: merged\n"
        "timeouts: &t {run: !!float 30, startup: 5}\n"
        "command: agent\n"
        "description: !!str 2026-11-22\n"
        "args: [--acp]\n"
        "env: {<<: {A: one}, B: two}\n"
    )
    config = tmp_path / "acp-bridge.yaml"
    config.write_text(f"profiles_dirs: [{profiles}]\n")
    profile = load_config(config, environ={}, search=False).profiles.get("merged").profile
    assert profile.description == "2026-11-22"
    assert profile.timeouts.run == 30 and profile.env == {"A": "one", "B": "two"}


def test_nested_defaults_expand_like_a_shell(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: p\ncommand: agent\n"
        'env: {A: "${UNSET_A:-${SET_B:-z}}", B: "${UNSET_A:-${UNSET_C:-z}}", '
        'C: "${SET_B:-${UNSET_C}}"}\n'
    )
    config = tmp_path / "acp-bridge.yaml"
    config.write_text(f"profiles_dirs: [{tmp_path}]\n")
    loaded = load_config(config, environ={"SET_B": "bee"}, search=False)
    # C: SET_B is set, so the default (an unset variable) is never looked at.
    assert loaded.profiles.get("p").profile.env == {"A": "bee", "B": "z", "C": "bee"}
