"""The folders a caller gives a run, checked before it starts: its working directory an
existing directory, and its write roots not too broad (the whole filesystem, the home folder,
a system folder) unless the profile names them. The confined resolution beneath the roots is
roots.py."""

from __future__ import annotations

import errno
from collections.abc import Iterable
from pathlib import Path

from acp_bridge._os.fs.paths import resolved
from acp_bridge.errors import ConfigError

SYSTEM_FOLDERS = (
    "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
    "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/usr", "/var",
)  # fmt: skip
"""Folders that hold the system or every user's files: never a write root by default."""
SYSTEM_INSIDES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
                  "/proc", "/run", "/sbin", "/sys", "/usr")  # fmt: skip
"""Folders nothing inside of is a project's (``/var``, ``/opt``, ``/srv`` and the homes may
hold projects: only they themselves are refused)."""


def too_broad(root: Path, home: Path) -> str | None:
    """Why ``root`` (resolved) is too broad to be a write root by default, or None: the
    whole filesystem, the home folder itself (every project, every dotfile, the agents'
    logins), a system folder, or any folder above one of those. A ``home`` that is a file
    has no projects or logins in it to protect."""
    if root == Path("/"):
        return "it is the whole filesystem"
    homes = () if home.is_file() else (str(home),)
    if homes and root == home:
        return "it is the home folder itself"
    for folder in (*SYSTEM_FOLDERS, *homes):
        path = Path(folder)
        if root == path or path.is_relative_to(root):
            return f"it holds {folder}" if root != path else f"{folder} is a system folder"
    for folder in SYSTEM_INSIDES:
        if root.is_relative_to(folder):
            return f"it is inside {folder}, a system folder"
    return None


def check_write_roots(
    roots: Iterable[Path], *, explicit: Iterable[Path] = (), home: Path | None = None
) -> None:
    """Refuse a write root that is too broad (:func:`too_broad`) unless it was named
    explicitly (a profile's ``write_roots``), never merely by where a run was started:
    ``cwd: /`` or the home folder would give the agent the whole tree. Raises
    :class:`~acp_bridge.errors.ConfigError` naming the root, why, and what allows it."""
    named = {resolved(path) for path in explicit}
    home = resolved(home if home is not None else Path.home())
    for root in roots:
        real = resolved(root)
        why = None if real in named else too_broad(real, home)
        if why is not None:
            raise ConfigError(
                f"{real} would be the run's write root, and {why}: refused. Start the run in "
                "a project folder (cwd), or name it under the profile's write_roots to allow "
                "it explicitly"
            )


def existing_directory(path: str | Path, what: str = "cwd") -> Path:
    """``path`` (``~`` expanded) resolved to the existing directory it names — the working
    directory a caller gave a run. A ConfigError that says why when it is not one: missing,
    not a directory, a symlink loop, or a name the system refuses (a NUL)."""
    try:
        found = resolved(Path(path).expanduser())
        if found.is_dir():
            return found
        why = "it does not exist" if not found.exists() else "it is not a directory"
    except ValueError:  # an embedded NUL
        why = "it contains a NUL character"
    except RuntimeError:  # a symlink loop (Python before 3.13)
        why = "a symlink loop"
    except OSError as exc:
        why = "a symlink loop" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
    raise ConfigError(f"{what} {str(path)!r} is not an existing directory: {why}")
