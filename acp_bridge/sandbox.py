"""What the bridge confines: constructed environments and filesystem roots (DESIGN §5).

Agents and the terminals we run for them never get the whole host environment: only a small
base list, the profile's explicit ``env``, the host variables it names in ``env_passthrough``,
and ``ACP_BRIDGE_DEPTH`` / ``ACP_BRIDGE_MAX_DEPTH`` so a bridge started inside refuses to go
deeper than the limit its host set.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from acp_bridge.errors import SandboxViolation
from acp_bridge.subtasks import DEPTH_ENV, MAX_DEPTH_ENV, inherited_max_depth

BASE_ENV_NAMES: tuple[str, ...] = ("PATH", "HOME", "LANG", "TERM", "USER", "SHELL", "TMPDIR")
BASE_ENV_PREFIXES: tuple[str, ...] = ("LC_",)


def constructed_env(
    *,
    depth: int,
    extra: Mapping[str, str] | None = None,
    passthrough: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a process we start on an agent's behalf (or for the agent)."""
    host = os.environ if environ is None else environ
    env = {
        name: value
        for name, value in host.items()
        if name in BASE_ENV_NAMES or name.startswith(BASE_ENV_PREFIXES)
    }
    env.setdefault("PATH", os.defpath)  # a host without PATH: commands still resolve
    env.update({name: host[name] for name in passthrough if name in host})
    env.update(extra or {})
    env[DEPTH_ENV] = str(depth)
    limit = inherited_max_depth()
    if limit is not None:  # the limit travels with the depth: a nested bridge cannot raise it
        env[MAX_DEPTH_ENV] = str(limit)
    return env


@dataclass(frozen=True)
class Roots:
    """The directories an agent's file requests may reach, symlinks resolved."""

    read: tuple[Path, ...]
    write: tuple[Path, ...]

    @classmethod
    def for_session(
        cls,
        cwd: Path,
        read_roots: Iterable[Path] | None = None,
        write_roots: Iterable[Path] | None = None,
    ) -> Roots:
        """Roots as configured; both default to the session cwd. Writable implies readable."""
        write = tuple(p.resolve() for p in (write_roots if write_roots is not None else [cwd]))
        read = tuple(p.resolve() for p in (read_roots if read_roots is not None else [cwd]))
        return cls(read=tuple(dict.fromkeys(read + write)), write=write)

    def check_read(self, path: Path) -> Path:
        return _inside(path, self.read, "read")

    def check_write(self, path: Path) -> Path:
        return _inside(path, self.write, "write")

    def contains_for_write(self, path: Path) -> bool:
        try:
            self.check_write(path)
        except SandboxViolation:
            return False
        return True


def _inside(path: Path, roots: tuple[Path, ...], what: str) -> Path:
    """``path`` resolved (symlinks followed) if it lies inside one of ``roots``."""
    if not path.is_absolute():
        raise SandboxViolation(f"{what} refused: path must be absolute, got {str(path)!r}")
    resolved = path.resolve()
    for root in roots:
        if resolved == root or resolved.is_relative_to(root):
            return resolved
    shown = ", ".join(str(r) for r in roots) or "none"
    raise SandboxViolation(f"{what} refused: {path} is outside the {what} roots ({shown})")
