"""Constructed environments and roots (the escape attempts are in tests/security)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.process.environment import DEPTH_ENV, constructed_env, host_environ

HOST = {
    "PATH": "/usr/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm",
    "USER": "u",
    "SHELL": "/bin/sh",
    "TMPDIR": "/tmp",
    "AWS_SECRET_ACCESS_KEY": "secret",
    "LD_PRELOAD": "/tmp/x.so",
    "HTTPS_PROXY": "http://proxy",
    DEPTH_ENV: "0",
}


def test_constructed_env_is_the_base_list_plus_what_the_profile_names() -> None:
    env = constructed_env(
        depth=2,
        extra={"OPENAI_API_KEY": "k", "PATH": "/opt/bin"},
        passthrough=["HTTPS_PROXY", "NOT_SET"],
        environ=HOST,
    )
    assert env == {
        "PATH": "/opt/bin",  # the profile's env wins over the base list
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "xterm",
        "USER": "u",
        "SHELL": "/bin/sh",
        "TMPDIR": "/tmp",
        "HTTPS_PROXY": "http://proxy",
        "OPENAI_API_KEY": "k",
        DEPTH_ENV: "2",  # always ours, whatever the host or the profile say
    }
    assert constructed_env(depth=1, extra={DEPTH_ENV: "0"}, environ=HOST)[DEPTH_ENV] == "1"


def test_the_host_environment_is_the_process_environment_as_it_is_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Decoded once while it stays the same, and every change seen by the next call:
    set, changed, removed — also back to an earlier value."""
    assert dict(host_environ()) == dict(os.environ)
    monkeypatch.setenv("LC_BRIDGE_TEST", "one")
    assert host_environ()["LC_BRIDGE_TEST"] == "one"
    assert constructed_env(depth=1)["LC_BRIDGE_TEST"] == "one"  # a base-list prefix
    os.environ["LC_BRIDGE_TEST"] = "two"
    assert constructed_env(depth=1)["LC_BRIDGE_TEST"] == "two"
    monkeypatch.setenv("LC_BRIDGE_TEST", "one")
    assert host_environ()["LC_BRIDGE_TEST"] == "one"
    monkeypatch.delenv("LC_BRIDGE_TEST")
    assert "LC_BRIDGE_TEST" not in host_environ()
    assert "LC_BRIDGE_TEST" not in constructed_env(depth=1)
    assert dict(host_environ()) == dict(os.environ)
    with pytest.raises(TypeError):  # shared: read-only
        host_environ()["X"] = "y"  # type: ignore[index]


def test_roots_default_to_the_cwd_and_writable_implies_readable(tmp_path: Path) -> None:
    (tmp_path / "ref").mkdir()
    (tmp_path / "out").mkdir()
    assert Roots.for_session(tmp_path).read == Roots.for_session(tmp_path).write == (tmp_path,)
    roots = Roots.for_session(tmp_path, [tmp_path / "ref"], [tmp_path / "out"])
    assert roots.read == (tmp_path / "ref", tmp_path / "out")
    assert roots.write == (tmp_path / "out",)
    assert set(roots.identity) == {tmp_path / "ref", tmp_path / "out"}


def test_a_path_through_dot_dot_between_roots_lands_in_the_other_root(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    (tmp_path / "b" / "f.txt").write_text("b\n")
    roots = Roots.for_session(tmp_path / "a", [tmp_path / "a", tmp_path / "b"], [])
    with roots.resolve(f"{tmp_path}/a/../b/f.txt", write=False, follow_last=True) as where:
        assert where.path == tmp_path / "b" / "f.txt" and where.name == "f.txt"
