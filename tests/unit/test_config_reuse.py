"""Config reuse within a process: the same settings and profiles while nothing they came
from changed, and every change seen by the very next load (file bytes of the same size
written at once, the environment, a symlink on a path field, a folder that must exist)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from acp_bridge import acp_spawn
from acp_bridge.config import load_config
from acp_bridge.errors import ConfigError, ProfileError

pytestmark = pytest.mark.usefixtures("isolated_config")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_an_unchanged_config_gives_the_same_settings_and_profile(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", "acp:\n  agents:\n    - {name: a, command: x}\n")
    first = load_config(config)
    second = load_config(config)
    assert first is not second  # a fresh catalog each load: callers may hold their own
    assert second.config is first.config
    assert second.profiles.get("a") is first.profiles.get("a")


def test_an_edit_of_the_same_size_at_once_is_seen(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", "acp:\n  agents:\n    - {name: a, command: x}\n")
    assert load_config(config).profiles.get("a").profile.command == "x"
    config.write_text("acp:\n  agents:\n    - {name: a, command: y}\n")  # same size, same tick
    assert load_config(config).profiles.get("a").profile.command == "y"
    config.write_text("transcripts: {keep: 7}\n")
    assert load_config(config).config.transcripts.keep == 7


def test_an_edited_profile_file_in_a_profiles_dir_is_seen(tmp_path: Path) -> None:
    folder = tmp_path / "profiles"
    profile = write(folder / "a.yaml", "command: x\n")
    config = write(tmp_path / "c.yaml", f"profiles_dirs: [{folder}]\n")
    assert load_config(config).profiles.get("a").profile.command == "x"
    profile.write_text("command: z\n")
    assert load_config(config).profiles.get("a").profile.command == "z"
    write(folder / "b.yaml", "command: w\n")
    assert load_config(config).profiles.get("b").profile.command == "w"


def test_a_changed_variable_is_seen(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", "acp:\n  agents:\n    - {name: a, command: '${CMD}'}\n")
    assert load_config(config, environ={"CMD": "one"}).profiles.get("a").profile.command == "one"
    assert load_config(config, environ={"CMD": "two"}).profiles.get("a").profile.command == "two"
    with pytest.raises(ProfileError, match="CMD is not set"):
        load_config(config, environ={}).profiles.get("a")


def test_a_variable_set_in_the_process_environment_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default environment is the process's as it is at each load (no stale copy)."""
    config = write(tmp_path / "c.yaml", "acp:\n  agents:\n    - {name: a, command: '${CMD}'}\n")
    monkeypatch.setenv("CMD", "one")
    assert load_config(config).profiles.get("a").profile.command == "one"
    monkeypatch.setenv("CMD", "two")
    assert load_config(config).profiles.get("a").profile.command == "two"
    monkeypatch.delenv("CMD")
    with pytest.raises(ProfileError, match="CMD is not set"):
        load_config(config).profiles.get("a")


def test_an_absolute_path_field_is_resolved_again_as_it_is_now(tmp_path: Path) -> None:
    """Absolute path fields (asked of the kernel on reuse): a retargeted link, and a
    folder missing at the first load that is a link when the second comes."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    link = tmp_path / "work"
    link.symlink_to(tmp_path / "one")
    later = tmp_path / "later"
    config = write(
        tmp_path / "c.yaml",
        f"acp:\n  agents:\n    - {{name: a, command: x, cwd: {link}}}\n"
        f"    - {{name: b, command: x, cwd: {later}}}\n",
    )
    loaded = load_config(config)
    assert loaded.profiles.get("a").profile.cwd == tmp_path / "one"
    with pytest.raises(ProfileError):
        loaded.profiles.get("b")  # its cwd must exist
    link.unlink()
    link.symlink_to(tmp_path / "two")
    later.symlink_to(tmp_path / "one")
    again = load_config(config)
    assert again.profiles.get("a").profile.cwd == tmp_path / "two"
    assert again.profiles.get("b").profile.cwd == tmp_path / "one"


def test_a_missing_path_field_that_appears_as_a_link_is_followed(tmp_path: Path) -> None:
    """A state path that is not there yet is fine (the agent makes it); made meanwhile as a
    link to elsewhere, the next load resolves it there."""
    (tmp_path / "elsewhere").mkdir()
    state = tmp_path / "state"
    config = write(
        tmp_path / "c.yaml",
        f"acp:\n  agents:\n    - {{name: a, command: x, sandbox: {{state: [{state}]}}}}\n",
    )
    assert load_config(config).profiles.get("a").profile.sandbox.state == [state]
    state.symlink_to(tmp_path / "elsewhere")
    again = load_config(config).profiles.get("a").profile.sandbox.state
    assert again == [tmp_path / "elsewhere"]


def test_a_retargeted_symlink_on_a_path_field_is_followed_again(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    link = tmp_path / "work"
    link.symlink_to(tmp_path / "one")
    config = write(tmp_path / "c.yaml", "acp:\n  agents:\n    - {name: a, command: x, cwd: work}\n")
    assert load_config(config).profiles.get("a").profile.cwd == tmp_path / "one"
    link.unlink()
    link.symlink_to(tmp_path / "two")
    assert load_config(config).profiles.get("a").profile.cwd == tmp_path / "two"


def test_a_folder_that_must_exist_is_looked_for_again(tmp_path: Path) -> None:
    folder = tmp_path / "profiles"
    folder.mkdir()
    config = write(tmp_path / "c.yaml", f"profiles_dirs: [{folder}]\n")
    load_config(config)
    folder.rmdir()
    with pytest.raises(ConfigError, match="directory does not exist"):
        load_config(config)


def test_a_command_that_became_a_folder_is_refused_again(tmp_path: Path) -> None:
    command = write(tmp_path / "agent", "")
    config = write(tmp_path / "c.yaml", f"acp:\n  agents:\n    - {{name: a, command: {command}}}\n")
    assert load_config(config).profiles.get("a").profile.command == str(command)
    command.unlink()
    command.mkdir()
    with pytest.raises(ProfileError, match="is a directory"):
        load_config(config).profiles.get("a")


def test_acp_spawn_sees_a_config_edit_between_two_runs(tmp_path: Path) -> None:
    """The entry loads the config itself on every run: the second run follows the edit."""
    config = write(tmp_path / "acp-bridge.yaml", "transcripts: {enabled: false}\n")
    task = "Reply with exactly OK"

    async def run() -> str | None:
        result = await acp_spawn("demo", task, cwd=str(tmp_path), timeout=60)
        assert result.status == "done", result.error
        return result.meta.transcript

    assert anyio.run(run) is None
    config.write_text("transcripts: {enabled: true }\n")  # same size, at once
    transcript = anyio.run(run)
    assert transcript is not None and Path(transcript).is_file()


def test_where_a_value_was_set_is_said_from_the_working_directory_of_the_moment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(tmp_path / "sub" / "c.yaml", "acp:\n  agents:\n    - {name: a, command: x}\n")
    assert load_config(config).profiles.get("a").set_at(("command",)).startswith("sub/c.yaml:3:")
    monkeypatch.chdir(tmp_path / "sub")
    assert load_config(config).profiles.get("a").set_at(("command",)).startswith("c.yaml:3:")
