"""One path policy for both launchers: which paths are hidden, readable or writable.

The whole filesystem starts readable (the system is read-only inside). Rules then set the
access of a path and everything below it, and **the deepest rule wins**: ``/tmp`` is hidden
but the agent's venv in ``/tmp/x/venv`` is readable and its workspace ``/tmp/x/ws``
writable; ``$HOME`` is readable, ``~/.ssh`` in it hidden, ``~/.ssh/keep`` (if a profile
lists it as readable) visible again.

bwrap turns each rule into a mount, in order of depth. Landlock can only *grant*, so
``landlock.py`` turns a rule that has deeper rules below it into grants on its children
(see there). Both read the same :class:`PathPlan`, so both modes show the agent the same
tree — except where Landlock cannot, which ``landlock.py`` reports as warnings.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path

from acp_bridge._os.fs.paths import path_of, real_path
from acp_bridge._os.sandbox.spec import HOST_TMP_DIRS, SandboxSpec
from acp_bridge._records.frozen import FrozenRecord
from acp_bridge.errors import ConfigError

ROOT = Path("/")


class Access(IntEnum):
    HIDDEN = 0
    READ = 1
    WRITE = 2


# Which rule wins when two name the same path (higher wins): an explicit secret beats all;
# a write root at /tmp itself means the host /tmp, writable; the command's own needs never
# override anything.
_SECRET, _WRITE, _READABLE, _HOST_TMP, _NEEDED = 5, 4, 3, 2, 1


class PathRule(FrozenRecord):
    """One path's access in the plan, and why."""

    # A frozen record, not a frozen dataclass: a dataclass compiles its generated methods
    # from source when its module loads, on every start-up's path (~4 M instructions).
    path: Path
    access: Access
    why: str  # "secret", "host tmp", "write root", "readable", "needed"
    is_dir: bool
    _compared = __slots__ = ("path", "access", "why", "is_dir")

    def __init__(self, path: Path, access: Access, why: str, is_dir: bool) -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "access", access)
        object.__setattr__(self, "why", why)
        object.__setattr__(self, "is_dir", is_dir)


# The arithmetic is on strings: every path here is absolute and resolved (no ``.``, ``..``,
# doubled or trailing slashes), so "below" is "starts with the parent and a slash", and a
# rule's depth is its number of slashes. The pathlib forms (``parent in path.parents``) cost
# tens of thousands of PurePath operations per run, most of a fan-out's per-run CPU.


def _below(path: str, parent: str) -> bool:
    """``path`` is strictly below ``parent``."""
    if parent == "/":
        return path != "/"
    return path.startswith(parent) and path[len(parent) : len(parent) + 1] == "/"


def _inside(path: str, parent: str) -> bool:
    """``path`` is ``parent`` or below it."""
    return path == parent or _below(path, parent)


def _depth(path: str) -> int:
    """``len(Path(path).parts)``: ``/`` is 1, ``/a`` 2, ``/a/b`` 3."""
    return 1 if path == "/" else path.count("/") + 1


class PathPlan(FrozenRecord):
    """The effective rules, shallowest first: each one changes the access it inherits
    (redundant rules are dropped). ``/`` is readable unless a rule says otherwise."""

    rules: tuple[PathRule, ...]
    warnings: tuple[str, ...]
    secrets: tuple[str, ...]
    """The secrets hidden, each whole (a rule for one may be dropped as redundant: under a
    hidden ``/tmp``, ``/tmp/u/.ssh`` needs none of its own)."""
    _compared = __slots__ = ("rules", "warnings", "secrets")

    def __init__(
        self,
        rules: tuple[PathRule, ...],
        warnings: tuple[str, ...] = (),
        secrets: tuple[str, ...] = (),
    ) -> None:
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "warnings", warnings)
        object.__setattr__(self, "secrets", secrets)

    def access_of(self, path: Path) -> Access:
        """The access the sandbox gives ``path`` (an absolute, resolved path)."""
        where = str(path)
        matching = [r for r in self.rules if _inside(where, str(r.path))]
        if not matching:
            return Access.READ
        return max(matching, key=lambda r: _depth(str(r.path))).access

    def rule_of(self, path: Path) -> PathRule | None:
        """The rule that decides ``path``'s access (the deepest one above or at it)."""
        where = str(path)
        matching = [r for r in self.rules if _inside(where, str(r.path))]
        return max(matching, key=lambda r: _depth(str(r.path))) if matching else None

    def shows_any_of(self, path: Path) -> bool:
        """Whether the sandbox shows ``path`` or anything below it (a hidden ``/tmp/u``
        whose ``.claude`` is a write root shows something)."""
        where = str(path)
        if self.access_of(path) is not Access.HIDDEN:
            return True
        return any(r.access is not Access.HIDDEN and _below(str(r.path), where) for r in self.rules)

    def in_secret(self, path: Path) -> bool:
        """Whether ``path`` is a hidden secret or inside one."""
        where = str(path)
        return any(_inside(where, secret) for secret in self.secrets)

    def hidden(self) -> tuple[Path, ...]:
        """The paths the sandbox hides (each with everything below it, deeper rules aside)."""
        return tuple(r.path for r in self.rules if r.access is Access.HIDDEN)


def plan_paths(
    spec: SandboxSpec, *, needed: Sequence[Path] = (), extra_hidden: Sequence[Path] = ()
) -> PathPlan:
    """The rules for ``spec`` plus what the command ``needed`` (see
    :func:`~acp_bridge._os.sandbox.needed.needed_paths`)."""
    secrets = [*spec.secret_paths(), *(p for p in extra_hidden if os.path.lexists(p))]
    secret_texts = [str(p) for p in secrets]
    # Keyed by text: every path here is resolved, so equal texts are equal paths (and a
    # str hashes without pathlib's parts).
    candidates: dict[str, tuple[int, Access, str]] = {}
    warnings: list[str] = []

    def offer(path: str, rank: int, access: Access, why: str) -> None:
        held = candidates.get(path)
        if held is None or rank > held[0]:
            candidates[path] = (rank, access, why)

    for path in needed:
        where = str(path)
        if _exists(where) and not any(_inside(where, s) for s in secret_texts):
            offer(where, _NEEDED, Access.READ, "needed")
    if spec.private_tmp:
        for tmp in HOST_TMP_DIRS:
            real = real_path(tmp)
            if os.path.isdir(real):  # noqa: PTH112 (strings: see above)
                offer(real, _HOST_TMP, Access.HIDDEN, "host tmp")
    for path in spec.read:
        where = str(path)
        if _exists(where):
            offer(where, _READABLE, Access.READ, "readable")
    for path in spec.write:
        where = str(path)
        if not os.path.isdir(where) and not os.path.isfile(where):  # noqa: PTH112, PTH113
            raise ConfigError(f"sandbox write root does not exist: {path}")
        offer(where, _WRITE, Access.WRITE, "write root")
    write_texts = {str(p) for p in spec.write}
    for path, where in zip(secrets, secret_texts, strict=True):
        if where in write_texts:
            warnings.append(f"{path} is both a write root and hidden: it stays hidden")
        offer(where, _SECRET, Access.HIDDEN, "secret")

    kept: list[PathRule] = []
    kept_texts: list[str] = []
    for where in sorted(candidates, key=lambda text: (_depth(text), text)):
        _, access, why = candidates[where]
        inherited = _effective(kept, kept_texts, where)
        redundant = (
            access is inherited
            if access is not Access.READ
            else inherited is not Access.HIDDEN  # "readable" means visible, not read-only
        )
        if not redundant:
            kept.append(PathRule(path_of(where), access, why, os.path.isdir(where)))  # noqa: PTH112
            kept_texts.append(where)
    return PathPlan(tuple(kept), tuple(warnings), tuple(secret_texts))


def _exists(path: str) -> bool:
    """``Path(path).exists()``, on a string (False too where the path cannot be looked at)."""
    return os.path.exists(path)  # noqa: PTH110 (strings: see plan_paths)


def _effective(kept: list[PathRule], kept_texts: list[str], path: str) -> Access:
    """Access ``path`` inherits from the deepest kept rule above it (``/`` is readable).
    ``kept`` is shallowest first, so the last rule above ``path`` is the deepest."""
    for rule, text in zip(reversed(kept), reversed(kept_texts), strict=True):
        # _below(path, text), inline: this loop is most of a plan's calls.
        if (path != "/") if text == "/" else path.startswith(text + "/"):
            return rule.access
    return Access.READ
