"""``Path`` objects for path texts, made once per process.

Why: a fan-out run builds the same few dozen paths as every other run (its state and config
folders, the run store's files, the sandbox's resolved roots and secrets), and a ``Path`` is
costly to make and to use the first time: its parsing, then its text, hash and parts each
computed on first use (the first ``str()`` of a new one raises and catches an
``AttributeError`` inside pathlib). The same object handed out again has them all already.

Pure: a ``Path`` is immutable and depends on its text alone, so sharing one is never stale
(nothing here looks at the filesystem).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

MAX_PATHS = 1024
"""Texts remembered; the least recently used go first."""


@functools.lru_cache(maxsize=MAX_PATHS)
def path_of(text: str) -> Path:
    """``Path(text)``, the same object for the same text."""
    return Path(text)


_O_PATH = getattr(os, "O_PATH", 0)  # Linux only


def real_path(path: str | os.PathLike[str]) -> str:
    """``os.path.realpath(path)``, asked of the kernel when ``path`` exists: one
    ``open(O_PATH)`` and one ``readlink`` of its ``/proc/self/fd`` entry, where the standard
    library's (pure Python) takes an ``lstat`` and string work per component — a run
    resolves some 60 paths, 1.2 ms of its CPU. ``O_PATH`` opens nothing for reading (a
    FIFO or a device is not opened). A missing path, a dangling link, no ``/proc``: the
    standard library's answer, which callers rely on for those."""
    try:
        found = _kernel_path(path)
    except FileNotFoundError:
        return _missing_real_path(os.fspath(path))
    return found if found is not None else os.path.realpath(path)


def _kernel_path(path: str | os.PathLike[str]) -> str | None:
    """What the kernel says ``path`` resolves to; None when it cannot say (no ``O_PATH``,
    not there, a loop, a path from another mount namespace, removed meanwhile).
    FileNotFoundError propagates (a missing component), for :func:`real_path`."""
    if not _O_PATH:
        return None
    try:
        fd = os.open(path, _O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError:
        return None
    try:
        found = os.readlink(f"/proc/self/fd/{fd}")  # noqa: PTH115 (no Path: the point is speed)
    except OSError:
        return None
    finally:
        os.close(fd)
    # Not a path from our root (another mount namespace), or removed meanwhile.
    if found.startswith("/") and not found.endswith(" (deleted)"):
        return found
    return None


def _missing_real_path(path: str) -> str:
    """:func:`real_path` of a path that does not exist (a run hides a dozen of them: the
    config folder, SQLite's companion files …): its existing parent resolved by the kernel,
    and the missing name appended — the standard library's answer, which walks every
    component with an ``lstat`` (0.04 ms a path). Same answer: a name that is not there is
    no symlink, and a plain path (absolute, no ``.``, ``..`` or doubled slash) has nothing
    after it to undo it. A dangling link, or anything else, is left to the standard
    library."""
    parent, _, name = path.rpartition("/")
    plain = path.startswith("/") and name not in ("", ".", "..") and "//" not in path
    if not plain or "/./" in path or "/../" in path or os.path.lexists(path):
        return os.path.realpath(path)
    top = real_path(parent or "/")
    return f"{top.rstrip('/')}/{name}"


def kernel_real_path(path: str | os.PathLike[str]) -> str | None:
    """``os.path.realpath(path)`` as the kernel says it, for a path that exists or a plain
    missing name (no ``.``, ``..`` or doubled slash, no dangling link) in a folder that
    does; None when the kernel cannot say (a loop, no ``/proc`` …): ask pathlib then."""
    try:
        return _kernel_path(path)
    except FileNotFoundError:
        pass
    text = os.fspath(path)
    parent, _, name = text.rpartition("/")
    plain = text.startswith("/") and name not in ("", ".", "..") and "//" not in text
    if not plain or "/./" in text or "/../" in text or os.path.lexists(text):
        return None
    try:
        top = _kernel_path(parent or "/")
    except FileNotFoundError:
        return None
    return None if top is None else f"{top.rstrip('/')}/{name}"


def resolved(path: str | os.PathLike[str]) -> Path:
    """``Path(path).resolve()``: the kernel's answer when ``path`` exists (as
    :func:`real_path`), pathlib's otherwise — a missing path, a symlink loop (pathlib's
    RuntimeError) and any other error stay exactly pathlib's. Where pathlib walks every
    component with an ``lstat`` and string work, ~40 Python calls a path."""
    found = kernel_real_path(path)
    return path_of(found) if found is not None else Path(path).resolve()
