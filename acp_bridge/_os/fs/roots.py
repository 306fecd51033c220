"""Filesystem roots and confined path resolution beneath them
(docs/explanation/security.md, files).

File requests are resolved by :meth:`Roots.resolve`, one component at a time, relative to an
open directory (``openat``-style, ``dir_fd=``), never by handing a whole path to the kernel:

- each component is ``lstat``-ed, then opened with ``O_NOFOLLOW``, and the open directory must
  be the one that was ``lstat``-ed (``st_dev``/``st_ino``), so a symlink swapped in between the
  check and the use is never followed;
- a symlink is followed by reading it and walking its target the same way: a relative target
  continues from where the link is, an absolute one starts again from the root it lies in;
  ``..`` is taken on the directories already open, and stepping above a root starts again
  from the root that holds the result — or refuses, when none does;
- the caller gets the *open* parent directory and the last name, and does its final
  ``open``/``rename`` relative to that directory: what was checked is what is used.

So a symlink inside a root that points out, ``..`` traversal, ``/proc/self/root/...`` paths and
a directory symlink swapped in mid-request all end in a refusal, never in a file outside.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

from acp_bridge._os.fs.paths import resolved
from acp_bridge._os.os_errors import os_reason
from acp_bridge._records.frozen import FrozenRecord
from acp_bridge.errors import SandboxViolation

MAX_STEPS = 256  # symlinks followed + races retried + roots re-entered, per request (ELOOP)
MAX_DEPTH = 256  # directories held open at once by one walk (an fd each): no fd exhaustion
# O_PATH (Linux): a directory we only walk through needs search permission, not read.
_DIR_FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)


class Resolved:
    """A request path resolved beneath a root: its parent directory, *open*, and the last
    component's name (``""`` when the path names the directory itself). Close it after use.
    """

    # A plain class: a dataclass compiles its generated methods from source when its module
    # loads, on every start-up's path (~2 M instructions).
    __slots__ = ("dir_fd", "name", "path")

    def __init__(self, dir_fd: int, name: str, path: Path) -> None:
        self.dir_fd = dir_fd
        self.name = name
        self.path = path
        """Where it is, symlinks resolved: for messages and ``meta.files_changed``."""

    def close(self) -> None:
        os.close(self.dir_fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Roots(FrozenRecord):
    """The directories an agent's file requests may reach, symlinks resolved."""

    # A frozen record, not a frozen dataclass: a dataclass compiles its generated methods
    # from source when its module loads, on every start-up's path (~4 M instructions).
    read: tuple[Path, ...]
    write: tuple[Path, ...]
    identity: Mapping[Path, tuple[int, int]]
    """``(st_dev, st_ino)`` of each root when the session began: a root later replaced
    (by a symlink to elsewhere, say) is refused rather than followed. Not compared."""
    __slots__ = ("identity", "read", "write")
    _compared = ("read", "write")

    def __init__(
        self,
        read: tuple[Path, ...],
        write: tuple[Path, ...],
        identity: Mapping[Path, tuple[int, int]] | None = None,
    ) -> None:
        object.__setattr__(self, "read", read)
        object.__setattr__(self, "write", write)
        object.__setattr__(self, "identity", {} if identity is None else identity)

    @classmethod
    def for_session(
        cls,
        cwd: Path,
        read_roots: Iterable[Path] | None = None,
        write_roots: Iterable[Path] | None = None,
    ) -> Roots:
        """Roots as configured; both default to the session cwd. Writable implies readable.

        A root that is itself a symlink is resolved here, once: the agent is told the
        resolved paths, and requests are checked against them.
        """
        write = tuple(resolved(p) for p in (write_roots if write_roots is not None else [cwd]))
        read = tuple(resolved(p) for p in (read_roots if read_roots is not None else [cwd]))
        every = tuple(dict.fromkeys(read + write))
        identity = {}
        for root in every:
            with contextlib.suppress(FileNotFoundError):
                info = root.stat()
                identity[root] = (info.st_dev, info.st_ino)
        return cls(read=every, write=write, identity=identity)

    # --- "would this path be inside?" (permission decisions) ---------------------------------

    def beside(self, cwd: Path) -> list[str]:
        """Every root but ``cwd`` itself, each once (ACP's ``additionalDirectories``)."""
        roots = dict.fromkeys(str(r) for r in (*self.read, *self.write))
        roots.pop(str(resolved(cwd)), None)
        return list(roots)

    def check_read(self, path: Path) -> Path:
        return _inside(path, self.read, "read")

    def check_write(self, path: Path) -> Path:
        return _inside(path, self.write, "write")

    # --- confined resolution (the file services) --------------------------------------------

    def resolve(
        self,
        raw: str,
        *,
        write: bool,
        follow_last: bool,
        create_parents: bool = False,
        what: str | None = None,
    ) -> Resolved:
        """``raw`` resolved beneath a read (or write) root, symlinks followed inside the
        roots; the last component is left unresolved unless ``follow_last``. Missing parent
        directories are created (inside the root) when ``create_parents``.

        Raises SandboxViolation when the path is, or leads, outside the roots;
        FileNotFoundError / NotADirectoryError when a parent is missing or not a directory.
        ``what`` names the request in messages (default: read / write).
        """
        what = what or ("write" if write else "read")
        if "\0" in raw:
            raise SandboxViolation(f"{what} refused: the path contains a NUL byte")
        if not raw.startswith("/"):
            raise SandboxViolation(f"{what} refused: path must be absolute, got {raw!r}")
        walk = _Walk(
            self, self.write if write else self.read, what, "write" if write else "read", raw
        )
        return walk.run(follow_last=follow_last, create_parents=create_parents)

    def open_root(self, root: Path, what: str) -> int:
        """An open directory fd of ``root``, refused if it is no longer the same directory."""
        try:
            fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)
        except OSError as exc:
            raise SandboxViolation(
                f"{what} refused: the root {root} is gone ({exc.strerror})"
            ) from exc
        info = os.fstat(fd)
        if self.identity.get(root, (info.st_dev, info.st_ino)) != (info.st_dev, info.st_ino):
            os.close(fd)
            raise SandboxViolation(
                f"{what} refused: the root {root} was replaced since the session began"
            )
        return fd


def _inside(path: Path, roots: tuple[Path, ...], what: str) -> Path:
    """``path`` resolved (symlinks followed) if it lies inside one of ``roots``.

    For *decisions* only (is this tool call's location inside?): resolving a path and using
    it later is a race, so the file services use :meth:`Roots.resolve` instead. A path that
    cannot be resolved — a component the user may not search (``/proc/1/root``), a symlink
    loop, a NUL — cannot be shown to be inside: refused, saying why (never an ``OSError``
    for the caller to forget: a decision is always one).
    """
    if not path.is_absolute():
        raise SandboxViolation(f"{what} refused: path must be absolute, got {str(path)!r}")
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: a loop (before 3.13)
        raise SandboxViolation(
            f"{what} refused: {path} cannot be resolved to check it is inside the {what} "
            f"roots ({os_reason(exc)})"
        ) from exc
    if _root_of(str(resolved), roots) is not None:
        return resolved
    raise SandboxViolation(f"{what} refused: {path} is outside the {what} roots ({_shown(roots)})")


def _root_of(path: str, roots: Iterable[Path]) -> Path | None:
    """The most specific root ``path`` lies in, by its spelling (no file system access)."""
    best: Path | None = None
    for root in roots:
        text = str(root)
        inside = path == text or path.startswith(text if text == "/" else text + "/")
        if inside and (best is None or len(text) > len(str(best))):
            best = root
    return best


def _shown(roots: Iterable[Path]) -> str:
    return ", ".join(str(r) for r in roots) or "none"


def _parts(text: str) -> list[str]:
    return [p for p in text.split("/") if p not in ("", ".")]


class _Walk:
    """One confined resolution: a stack of open directories from a root down."""

    def __init__(
        self, roots: Roots, allowed: tuple[Path, ...], what: str, kind: str, raw: str
    ) -> None:
        self.roots = roots
        self.allowed = allowed
        self.what = what
        self.kind = kind  # read / write: whose roots
        self.raw = raw
        self.steps = 0

    def _step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise SandboxViolation(
                f"{self.what} refused: {self.raw}: too many levels of symbolic links"
            )

    def _enter(self, target: str) -> tuple[Path, list[str]]:
        """The root ``target`` lies in and the components below it: by its spelling, else by
        the spelling it resolves to."""
        for spelling in (target, os.path.realpath(target)):
            # The second spelling goes through symlinks outside the roots (``/proc/self/root``,
            # an alias of a root). It only picks the root: the walk below is confined anyway.
            root = _root_of(spelling, self.allowed)
            if root is not None:
                return root, _parts(spelling[len(str(root)) :])
        leads = "" if target == self.raw else f" (it leads to {target})"
        raise SandboxViolation(
            f"{self.what} refused: {self.raw} is outside the {self.kind} roots{leads}; "
            f"allowed: {_shown(self.allowed)}"
        )

    def run(self, *, follow_last: bool, create_parents: bool) -> Resolved:
        target = self.raw
        while True:
            self._step()
            root, parts = self._enter(target)
            outcome = self._descend(root, parts, follow_last, create_parents)
            if isinstance(outcome, Resolved):
                return outcome
            target = outcome  # a symlink or ``..`` led elsewhere: start from its root

    def _descend(
        self, root: Path, parts: list[str], follow_last: bool, create_parents: bool
    ) -> Resolved | str:
        """Walk ``parts`` below ``root``: a Resolved, or the absolute path to restart from."""
        stack = [self.roots.open_root(root, self.what)]
        names: list[str] = []
        pending = deque(parts)
        try:
            while pending:
                name = pending.popleft()
                if name == "..":
                    if len(stack) == 1:
                        if root == Path("/"):
                            continue
                        return "/".join([str(root.parent).rstrip("/"), *pending]) or "/"
                    os.close(stack.pop())
                    names.pop()
                    continue
                last = not pending
                if last and not follow_last:
                    return self._done(stack, root, names, name)
                try:
                    info = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
                except FileNotFoundError:
                    if last:
                        return self._done(stack, root, names, name)
                    if not create_parents or ".." in pending:
                        raise
                    self._step()
                    self._mkdir(stack[-1], name)
                    pending.appendleft(name)
                    continue
                if stat.S_ISLNK(info.st_mode):
                    self._step()
                    link = os.readlink(name, dir_fd=stack[-1])
                    if link.startswith("/"):
                        return "/".join([link.rstrip("/"), *pending]) or "/"
                    pending.extendleft(reversed(_parts(link)))
                    continue
                if last:
                    return self._done(stack, root, names, name)
                if not stat.S_ISDIR(info.st_mode):
                    raise NotADirectoryError(errno.ENOTDIR, "Not a directory", name)
                opened = self._open_dir(stack[-1], name, info)
                if opened is None:  # it changed between lstat and open: look again
                    self._step()
                    pending.appendleft(name)
                    continue
                stack.append(opened)
                names.append(name)
                if len(stack) > MAX_DEPTH:
                    raise SandboxViolation(
                        f"{self.what} refused: {self.raw} is more than {MAX_DEPTH} levels deep"
                    )
            # The path names a directory (a root, or ends in ``..``).
            return self._done(stack, root, names, "")
        finally:
            for fd in stack:
                os.close(fd)

    def _done(self, stack: list[int], root: Path, names: list[str], name: str) -> Resolved:
        fd = stack.pop()  # handed over to the caller: not closed by _descend
        return Resolved(fd, name, root.joinpath(*names, name) if name else root.joinpath(*names))

    @staticmethod
    def _open_dir(parent: int, name: str, seen: os.stat_result) -> int | None:
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # swapped for a symlink since the lstat
                return None
            raise
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (seen.st_dev, seen.st_ino):
            os.close(fd)
            return None
        return fd

    @staticmethod
    def _mkdir(parent: int, name: str) -> None:
        # Made meanwhile by someone else: it is looked at like any other directory.
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=parent)
