"""A write root too broad to be one by default: the whole filesystem, the home folder, a
system folder, or a folder above one of those — refused unless named explicitly."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_bridge._os.fs.run_folders import check_write_roots, too_broad
from acp_bridge.errors import ConfigError

HOME = Path("/home/ada")


@pytest.mark.parametrize(
    "root",
    ["/", "/home", "/home/ada", "/usr", "/usr/local/lib", "/etc", "/etc/nginx", "/var", "/opt",
     "/srv", "/proc/1", "/sys", "/boot", "/dev", "/run/user", "/bin", "/lib64"],
)  # fmt: skip
def test_too_broad_to_write_by_default(root: str) -> None:
    assert too_broad(Path(root), HOME) is not None


@pytest.mark.parametrize(
    "root",
    ["/home/ada/project", "/home/ada/.cache/x", "/work/repo", "/tmp/run-1", "/var/lib/ci/ws",
     "/opt/app", "/srv/www/site"],
)  # fmt: skip
def test_a_project_folder_may_be_written(root: str) -> None:
    assert too_broad(Path(root), HOME) is None


def test_a_home_under_a_system_folder_is_still_the_home() -> None:
    assert too_broad(Path("/var/lib/jenkins"), Path("/var/lib/jenkins")) is not None
    assert too_broad(Path("/var/lib/jenkins/ws"), Path("/var/lib/jenkins")) is None


def test_refused_by_default_allowed_when_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with pytest.raises(ConfigError, match=r"would be the run's write root, and it is the home"):
        check_write_roots([home], home=home)
    check_write_roots([home], explicit=[home], home=home)  # the profile named it: allowed
    check_write_roots([home / "."], explicit=[home], home=home)  # the same folder
    with pytest.raises(ConfigError, match="whole filesystem"):
        check_write_roots([Path("/")], explicit=[home], home=home)


def test_a_home_that_is_a_file_protects_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home-file"
    home.write_text("")
    assert too_broad(tmp_path, home) is None
    assert too_broad(tmp_path, tmp_path / "home-folder-missing") is not None
