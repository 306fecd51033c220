"""What a run's OS sandbox must allow and hide, independent of how it is built
(docs/explanation/security.md).

A :class:`SandboxSpec` is the whole policy: the mode to use, the write roots, the paths that
must stay visible, the paths that must be hidden, network on or off, a private ``/tmp``. The
launchers (``bwrap.py``, ``landlock.py``) turn it into mounts or Landlock rules through one
shared :mod:`~acp_bridge._os.sandbox.plan`, so both modes agree on what is visible.

Paths are made absolute and resolved (symlinks followed) once, here: a sandbox works on the
objects paths name, and ``~/.ssh -> /data/keys`` must hide ``/data/keys``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, get_args

from acp_bridge._os.fs.paths import path_of, real_path
from acp_bridge._records.frozen import FrozenRecord
from acp_bridge.errors import ConfigError

Mode = Literal["auto", "bwrap", "landlock", "off"]
MODES: tuple[str, ...] = get_args(Mode)

# The user's secrets, relative to HOME. The issue names the first six; the rest are the
# same kind of thing (cloud and cluster credentials, stored git passwords, keyrings).
DEFAULT_HIDDEN_HOME: tuple[str, ...] = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".netrc",
    ".docker",
    ".kube",
    ".git-credentials",
    ".config/gcloud",
    ".azure",
    ".local/share/keyrings",
)

# Doors out of any file sandbox: sockets of daemons that run commands for whoever connects
# (docker/containerd/podman run containers as root; systemd's private socket and the D-Bus
# system bus start units). /run/user/<uid> holds the session bus, gpg-agent and keyring
# ssh-agent sockets. Not exhaustive: see docs/explanation/security.md.
DEFAULT_HIDDEN_SYSTEM: tuple[str, ...] = (
    "/run/user",
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd",
    "/run/podman",
    "/run/dbus",
    "/run/systemd/private",
)

# Host temporary directories: shared with every other user and process, so replaced.
HOST_TMP_DIRS: tuple[str, ...] = ("/tmp", "/var/tmp")


def resolve(path: Path | str, *, what: str) -> Path:
    """``path`` absolute and with symlinks resolved; relative paths are a config error
    (relative to what? the bridge's cwd is not the agent's)."""
    # On strings: pathlib's parsing cost a run ~0.3 ms of CPU here.
    raw = os.fspath(path)
    if raw.startswith("~"):
        raw = os.path.expanduser(raw)  # noqa: PTH111
    if not raw.startswith("/"):
        raise ConfigError(f"sandbox {what}: path must be absolute, got {str(path)!r}")
    return path_of(real_path(raw))


def _unique(paths: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(paths))


class SandboxSpec(FrozenRecord):
    """The policy of one run's sandbox. Paths are resolved on construction.

    - ``write``: writable (the write roots and the agent's declared state paths);
    - ``read``: visible read-only even where they would be hidden (under ``/tmp`` or a
      secret): the profile's ``readable:`` list. The launchers add what the command itself
      needs (:func:`~acp_bridge._os.sandbox.needed.needed_paths`) on their own;
    - ``hidden``: invisible, on top of :data:`DEFAULT_HIDDEN_HOME` under ``home`` and
      :data:`DEFAULT_HIDDEN_SYSTEM` (``hide_defaults=False`` drops those two lists);
    - a deeper path always wins over a shallower one: a write root inside a hidden
      directory is writable, a hidden directory inside a write root is hidden.
    """

    # A frozen record, not a frozen dataclass: a dataclass compiles its generated methods
    # from source when its module loads, on every start-up's path (~4 M instructions).
    cwd: Path
    write: tuple[Path, ...]
    read: tuple[Path, ...]
    hidden: tuple[Path, ...]
    mode: Mode
    network: bool
    private_tmp: bool
    home: Path
    hide_defaults: bool
    _compared = __slots__ = (
        "cwd", "write", "read", "hidden", "mode", "network", "private_tmp", "home",
        "hide_defaults",
    )  # fmt: skip

    def __init__(
        self,
        cwd: Path,
        write: tuple[Path, ...] = (),
        read: tuple[Path, ...] = (),
        hidden: tuple[Path, ...] = (),
        mode: Mode = "auto",
        network: bool = True,
        private_tmp: bool = True,
        home: Path | None = None,
        hide_defaults: bool = True,
    ) -> None:
        if mode not in MODES:
            allowed = ", ".join(MODES)
            raise ConfigError(f"sandbox mode: must be one of {allowed}, got {mode!r}")
        put = object.__setattr__  # frozen: set once, here, resolved
        put(self, "cwd", resolve(cwd, what="cwd"))
        put(self, "home", resolve(Path.home() if home is None else home, what="home"))
        # The same path often comes in several lists (the cwd is a read and a write root):
        # resolved once. One construction is one moment: nothing here outlives it.
        seen: dict[Path | str, Path] = {}
        for name, paths in (("write", write), ("read", read), ("hidden", hidden)):
            if isinstance(paths, str | Path):
                raise ConfigError(f"sandbox {name}: expected a list of paths, got one path")
            for p in paths:
                if p not in seen:
                    seen[p] = resolve(p, what=name)
            put(self, name, _unique(seen[p] for p in paths))
        put(self, "mode", mode)
        put(self, "network", network)
        put(self, "private_tmp", private_tmp)
        put(self, "hide_defaults", hide_defaults)

    def secret_paths(self) -> tuple[Path, ...]:
        """Every path to hide that exists now: the defaults (unless dropped) and ``hidden``,
        resolved. Asked again for every process the run starts, so a secret made meanwhile
        is hidden from the next one.

        A default that is not there is skipped before it is resolved (most of them, on most
        machines: one ``lstat`` instead of a walk). Same answer: a path built from the
        resolved home and a fixed relative name (no ``..``) that ``lstat`` cannot find
        resolves to a path that does not exist either; what exists but resolves to nothing
        (a dangling link) is dropped after."""
        found: list[Path] = []
        if self.hide_defaults:
            home = str(self.home)
            for path in (*(f"{home}/{rel}" for rel in DEFAULT_HIDDEN_HOME), *DEFAULT_HIDDEN_SYSTEM):
                if os.path.lexists(path):
                    found.append(path_of(real_path(path)))
        return tuple(p for p in _unique([*found, *self.hidden]) if os.path.lexists(p))
