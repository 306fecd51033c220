"""Configuration that cannot be used, each shape through ``acp-bridge run``: control
characters in the YAML, NUL in a command, argument, variable or path, a ``cwd`` or root that
is a symlink loop, a ``command`` that is a directory. Each is a ``config_error`` envelope
whose error names FILE:LINE, exit 2, and no traceback.

Every shape runs the CLI's ``main`` in this process (an exception out of it fails the test,
as a traceback would); the shapes in ``REAL_PROCESS`` run again as the real ``python -m
acp_bridge`` process, whose start-up (~0.5 s of CPU) is the cost of one such test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp_bridge.cli import main

AGENT = "acp:\n  agents:\n    - name: a\n"
# name: (the profile's lines after "- name: a", or a whole file; the line the error names)
SHAPES: dict[str, tuple[str, int]] = {
    "raw-escape": ("      command: echo\x1b[2J\n", 4),
    "raw-c1": ("      command: echo\n      description: x\u009by\n", 5),
    "raw-bell-in-comment": ("      command: echo  # ring\x07\n", 4),
    "raw-nul": ("      command: echo\n      args: [a\x00b]\n", 5),
    "raw-del": ("      command: echo\x7f\n", 4),
    "nul-in-command": ('      command: "ec\\0ho"\n', 4),
    "nul-in-argument": ('      command: echo\n      args: ["x", "a\\0b"]\n', 5),
    "nul-in-variable": ('      command: echo\n      env: {A: "a\\0b"}\n', 5),
    "nul-in-variable-name": ('      command: echo\n      env: {"A\\0B": "x"}\n', 5),
    "nul-in-cwd": ('      command: echo\n      cwd: "a\\0b"\n', 5),
    "nul-in-root": ('      command: echo\n      read_roots: ["\\0"]\n', 5),
    "nul-in-mcp-server": (
        '      command: echo\n      mcp_servers: [{name: m, command: "m\\0"}]\n',
        5,
    ),
    "cwd-symlink-loop": ("      command: echo\n      cwd: loop1\n", 5),
    "cwd-inside-a-loop": ("      command: echo\n      cwd: loop1/deeper\n", 5),
    "write-root-loop": ("      command: echo\n      write_roots: [loop2]\n", 5),
    "command-is-a-directory": ("      command: {root}/folder\n", 4),
    "command-home-directory": ("      command: ~/folder\n", 4),
    "command-on-path-is-a-directory": ("      command: folder\n", 4),
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    (tmp_path / "folder").mkdir()
    (tmp_path / "work").mkdir()
    return tmp_path


REAL_PROCESS = (
    "raw-escape",
    "nul-in-command",
    "cwd-symlink-loop",
    "command-on-path-is-a-directory",
)
"""A control character, a NUL, a symlink loop and a directory found on PATH, each once more
through the real process: its exit code, stdout and stderr as a caller sees them."""


def _argv(root: Path, config: Path) -> list[str]:
    return ["--config", str(config), "run", "a", "hi", "--cwd", str(root / "work")]


def _run(root: Path, config: Path) -> tuple[int, dict[str, object], str]:
    """The real ``python -m acp_bridge`` process, started in ``root``."""
    env = {**os.environ, "HOME": str(root), "PATH": f"{root}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", *_argv(root, config)],
        capture_output=True, cwd=root, env=env, timeout=60, check=False,
    )  # fmt: skip
    err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    return done.returncode, json.loads(done.stdout), err


def _run_in_process(
    root: Path, config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, object], str]:
    """The CLI's ``main`` here, with the real process's cwd, HOME and PATH."""
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(root))
    monkeypatch.setenv("PATH", f"{root}{os.pathsep}{os.environ['PATH']}")
    code = main(_argv(root, config))
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, json.loads(out), err


@pytest.mark.parametrize(
    ("shape", "process"),
    [(shape, False) for shape in SHAPES] + [(shape, True) for shape in REAL_PROCESS],
    ids=[*SHAPES, *(f"{shape}-process" for shape in REAL_PROCESS)],
)
def test_unusable_config_is_a_located_config_error(
    root: Path,
    shape: str,
    process: bool,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines, line = SHAPES[shape]
    config = root / "acp-bridge.yaml"
    config.write_bytes((AGENT + lines.replace("{root}", str(root))).encode())
    if process:
        code, envelope, err = _run(root, config)
    else:
        code, envelope, err = _run_in_process(root, config, monkeypatch, capsys)
    assert code == 2, (envelope, err)
    meta = envelope["meta"]
    assert isinstance(meta, dict) and meta["error_code"] == "config_error", envelope
    assert f"acp-bridge.yaml:{line}:" in str(envelope["error"]), envelope["error"]


def test_a_config_file_that_is_a_symlink_loop(root: Path) -> None:
    code, envelope, _ = _run(root, root / "loop1")
    assert code == 2 and "loop1:1:1: cannot read file" in str(envelope["error"]), envelope
