"""The bridge's own files (_os/fs/private_files.py): 0700 folders and 0600 files whatever the
umask, never a write through a link planted among them, and failures that name the path."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_bridge._os.fs.private_files import (
    FolderLock,
    create_private,
    private_dir,
    write_private,
)
from acp_bridge.errors import StateDirError

NAMES = st.lists(
    st.sampled_from(["transcripts", "scratch", "tmp", "a", "b.d", "run-logs"]), max_size=4
)


@contextmanager
def umask(value: int) -> Iterator[None]:
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "acp-bridge"


def _modes(root: Path) -> dict[str, int]:
    found = {str(root): stat.S_IMODE(root.lstat().st_mode)}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            found[str(path)] = stat.S_IMODE(path.lstat().st_mode)
    return found


@given(mask=st.integers(0, 0o777), parts=NAMES, data=st.binary(max_size=64))
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_folders_are_0700_and_files_0600_whatever_the_umask(
    state: Path, mask: int, parts: list[str], data: bytes
) -> None:
    folder = state.joinpath(*parts)
    with umask(mask):
        private_dir(folder)
        write_private(folder / "file.json", data)
        os.close(create_private(folder / "transcript.jsonl"))
    assert (folder / "file.json").read_bytes() == data
    for path, mode in _modes(state).items():
        expected = 0o700 if Path(path).is_dir() else 0o600
        assert mode == expected, (oct(mask), path, oct(mode))


def test_an_older_wide_folder_of_ours_is_narrowed(state: Path) -> None:
    (state / "transcripts").mkdir(parents=True, mode=0o755)
    state.chmod(0o755)
    private_dir(state / "transcripts")
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "transcripts").stat().st_mode) == 0o700


@pytest.mark.parametrize(
    "planted",
    ["transcripts", "scratch", "scratch/sub_x", "tmp", "run-logs", "worktrees", "worktrees/r-1"],
)
def test_a_folder_link_planted_in_the_state_dir_is_refused(
    state: Path, tmp_path: Path, planted: str
) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = state / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    with pytest.raises(StateDirError, match=f"{link} is a symlink"):
        private_dir(state / planted / "deeper")
    with pytest.raises(StateDirError):
        os.close(create_private(state / planted / "file"))
    assert list(target.iterdir()) == []  # nothing made through it


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "dangling"])
def test_a_file_link_planted_at_a_name_is_replaced_not_written_through(
    state: Path, tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "bashrc"
    target.write_text("the user's file\n")
    target.chmod(0o644)
    before = target.stat()
    folder = private_dir(state / "transcripts")
    name = folder / "sub_x.jsonl"
    if kind == "symlink":
        name.symlink_to(target)
    elif kind == "hardlink":
        os.link(target, name)
    else:
        name.symlink_to(tmp_path / "not-yet")
    with os.fdopen(create_private(name), "wb") as file:
        file.write(b"ours\n")
    assert target.read_text() == "the user's file\n" and target.stat() == before
    assert not (tmp_path / "not-yet").exists()
    assert name.read_bytes() == b"ours\n" and not name.is_symlink()
    assert stat.S_IMODE(name.stat().st_mode) == 0o600


def test_a_home_that_is_a_file_names_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder")
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(StateDirError, match=f"{home}/.local/state/acp-bridge.*is HOME a file"):
        private_dir(home / ".local" / "state" / "acp-bridge" / "tmp")


def test_a_folder_of_another_user_is_refused(state: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to make a folder owned by someone else")
    other = state / "scratch"
    other.mkdir(parents=True)
    os.chown(other, 65534, 65534)
    with pytest.raises(StateDirError, match="belongs to another user"):
        private_dir(other / "sub_x")


@pytest.mark.parametrize("top_is", ["file", "dangling link"])
def test_a_top_folder_that_is_a_file_or_a_link_to_nowhere_is_said_as_such(
    tmp_path: Path, state: Path, top_is: str
) -> None:
    """The state directory itself may be a link the user made; a link to nowhere is refused
    (its target never made), and a file at its name is left as it was (never chmodded)."""
    state.parent.mkdir(parents=True)
    if top_is == "file":
        state.write_text("mine\n")
        state.chmod(0o644)
        with pytest.raises(StateDirError, match=f"{state} should be a folder.*it is a file"):
            private_dir(state / "scratch")
        assert state.read_text() == "mine\n" and stat.S_IMODE(state.stat().st_mode) == 0o644
    else:
        state.symlink_to(tmp_path / "nowhere")
        with pytest.raises(StateDirError, match=f"{state} is a symlink to .*does not exist"):
            private_dir(state / "scratch")
        assert not (tmp_path / "nowhere").exists()


def test_a_user_folder_that_is_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "chosen").write_text("")
    with pytest.raises(StateDirError, match=f"{tmp_path / 'chosen'} should be a folder"):
        private_dir(tmp_path / "chosen", top=None)


HOLD = """
import sys, time
from pathlib import Path
from acp_bridge._os.fs.private_files import FolderLock
lock = FolderLock(Path(sys.argv[1]))
assert lock.try_acquire()
print("held", flush=True)
sys.stdin.read()  # until the test closes it
"""


def test_a_folder_lock_is_held_against_another_process_until_it_ends(tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "pkg@1"
    folder.parent.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        ours = FolderLock(folder)
        assert not ours.try_acquire()  # the other process has it
        assert not ours.try_acquire()  # asking again opens nothing new
    finally:
        holder.communicate(input="", timeout=30)  # it ends: its lock goes with it
    assert ours.try_acquire()
    ours.release()
    assert stat.S_IMODE(ours.path.stat().st_mode) == 0o600
    assert ours.path.name == ".pkg@1.lock" and not folder.exists()


def test_a_folder_lock_never_opens_through_a_link(tmp_path: Path) -> None:
    folder = tmp_path / "pkg@1"
    target = tmp_path / "bashrc"
    target.write_text("keep\n")
    (tmp_path / ".pkg@1.lock").symlink_to(target)
    with pytest.raises(StateDirError, match="is a symlink where the bridge keeps its lock"):
        FolderLock(folder).try_acquire()
    assert target.read_text() == "keep\n"
