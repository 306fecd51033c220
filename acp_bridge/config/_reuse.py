"""Loaded settings and resolved profiles, reused within one process while what made them
is unchanged.

Why: every ``acp_spawn`` without ``config=`` loads the config and resolves its profile
again, ~0.5 ms a run (a twentieth of the bridge's own CPU per run in a fan-out of 64), to
get what the previous run got. Never a stale one, though: a result is reused only while
everything it was made from is the same, checked on every use —

- the YAML documents: :func:`~acp_bridge.config._yaml.located.load_yaml` reads every file each time
  and hands back the same document object only while the file's bytes are the same
  (``_yaml/cache.py``), so a document's identity stands for its content;
- the environment the ``${VAR}``\\ s expand from, compared whole;
- the filesystem the path fields were resolved in (:class:`PathFacts`): each path field is
  resolved again (symlinks followed) and compared, and the kind of each path the models
  check (a folder that must exist, a command that must not be a folder) is looked at again.

Anything different is a miss, and the work is done again. Only successes are kept: an error
is always found afresh.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

from acp_bridge._os.fs.paths import kernel_real_path
from acp_bridge.config._expand import _resolve_path, expand_vars
from acp_bridge.config._yaml.located import DataPath

T = TypeVar("T")

MAX_ENTRIES = 64
"""Results kept per kind (settings, profiles); the least recently used go first."""


def _kind(path: str) -> int:
    """The file type of ``path`` (symlinks followed), -1 when there is nothing there."""
    try:
        return stat.S_IFMT(os.stat(path).st_mode)  # noqa: PTH116 (strings: checked on every load)
    except (OSError, ValueError):
        return -1


def _at(data: Any, path: DataPath) -> Any:
    for part in path:
        data = data[part]
    return data


class PathFacts:
    """What the filesystem said while a document's path fields were resolved.

    Use :meth:`base_dir_of` as ``expand_and_resolve``'s callback (it is asked for the
    folder each path field is resolved against, before that field is expanded), then
    :meth:`observe` with the data it left: :meth:`hold` says whether a fresh load would
    still find the same."""

    # Plain classes here: a dataclass compiles its generated methods from source when its
    # module loads, on every start-up's path (~2-4 M instructions a class).
    __slots__ = ("_asked", "base_of", "data", "environ", "kinds", "resolved")

    def __init__(
        self, data: Any, base_of: Callable[[DataPath], Path], environ: Mapping[str, str]
    ) -> None:
        self.data = data
        """The data being expanded, in place (read before each path field changes)."""
        self.base_of = base_of
        self.environ = environ
        self._asked: list[tuple[DataPath, str, Path]] = []
        self.resolved: list[tuple[str, Path, str]] = []
        """(the expanded text, the folder it was resolved against, the result)."""
        self.kinds: list[tuple[str, int]] = []

    def base_dir_of(self, path: DataPath) -> Path:
        base = self.base_of(path)
        raw = _at(self.data, path)
        if isinstance(raw, str):
            self._asked.append((path, raw, base))
        return base

    def observe(self, *checked: str) -> None:
        """Record each path field's result and its kind, and the kind of each of
        ``checked`` (more paths a model looks at, as written)."""
        for path, raw, base in self._asked:
            result = _at(self.data, path)
            self.resolved.append((expand_vars(raw, self.environ)[0], base, result))
            self.kinds.append((result, _kind(result)))
        for given in checked:
            self.kinds.append((given, _kind(os.path.expanduser(given))))  # noqa: PTH111

    def hold(self) -> bool:
        """Whether the filesystem still gives what it gave."""
        for given, base, result in self.resolved:
            try:
                if _resolved_again(given, base) != result:
                    return False
            except ValueError:
                return False
        expand = os.path.expanduser
        return all(_kind(expand(path)) == kind for path, kind in self.kinds)


def _resolved_again(given: str, base: Path) -> str:
    """``_resolve_path(given, base)``, asked of the kernel first: an absolute path (after
    ``~``) that exists, or a missing name in a folder that does, needs no walk of its
    components (:func:`kernel_real_path`). Anything else — relative, a loop — is resolved
    the one way."""
    path = os.path.expanduser(given) if given.startswith("~") else given  # noqa: PTH111
    if path.startswith("/"):
        found = kernel_real_path(path)
        if found is not None:
            return found
    return _resolve_path(given, base)


class _Entry(Generic[T]):
    __slots__ = ("environ", "facts", "keep_alive", "value")

    def __init__(
        self, value: T, environ: dict[str, str], facts: PathFacts, keep_alive: tuple[Any, ...]
    ) -> None:
        self.value = value
        self.environ = environ
        self.facts = facts
        self.keep_alive = keep_alive
        """The documents whose ids are in the key: alive, their ids cannot be reused."""


class Remembered(Generic[T]):
    """Results by the identity of the documents they came from, each with the environment
    and the path facts it needs to be reused (a bounded, thread-safe map)."""

    def __init__(self, size: int = MAX_ENTRIES) -> None:
        self._entries: OrderedDict[Hashable, _Entry[T]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: Hashable, environ: Mapping[str, str]) -> T | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        if entry is None or entry.environ != environ or not entry.facts.hold():
            return None
        return entry.value

    def put(
        self,
        key: Hashable,
        value: T,
        environ: Mapping[str, str],
        facts: PathFacts,
        keep_alive: tuple[Any, ...],
    ) -> None:
        entry = _Entry(value, dict(environ), facts, keep_alive)
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
