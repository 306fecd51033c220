"""A cache of parsed YAML documents, the way ``.pyc`` files cache compiled Python.

Why: importing ruamel.yaml and parsing with its round-trip loader costs ~45 ms, a tenth of
the cold-start budget of ``acp-bridge run`` — to read a profile that has not changed since
the last run. The data and the position of every key and value are kept as JSON under
``$XDG_CACHE_HOME/acp-bridge/yaml/``, keyed by the file's absolute path and its content
(size and CRC-32; not the modification time, which advances per kernel tick, so a file
rewritten within one tick would look unchanged). A file that changed, a document that is not
plain JSON
data (a YAML timestamp), or a cache that cannot be read or written all simply mean "parse
it": the cache never changes what a load returns, only how long it takes.

Within one process the documents themselves are kept too (:func:`remembered`): a file read
again with the same bytes gives the same document object, so what is computed from a
document (settings, a resolved profile: ``config/_reuse.py``) can be reused by its identity.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

from acp_bridge._os import bounded_json
from acp_bridge._os.fs.input_files import read_bytes
from acp_bridge._os.fs.private_files import write_private
from acp_bridge.errors import SourceLocation, StateDirError

FORMAT = 2  # 2: documents parsed under the limits of bounds.py
Positions = dict[tuple[str | int, ...], SourceLocation]
MAX_REMEMBERED = 256
CACHE_ENTRY = "a parse cache entry"
MAX_ENTRY_BYTES = 64 << 20
"""A cached parse of a YAML file (itself at most 4 MiB) with its positions: larger is not ours."""
"""Documents kept in memory (the least recently read go first)."""

_documents: OrderedDict[Path, tuple[bytes, Any]] = OrderedDict()
_documents_lock = threading.Lock()


def remembered(path: Path, content: bytes) -> Any | None:
    """The document made from exactly these bytes of ``path`` in this process, or None."""
    with _documents_lock:
        known = _documents.get(path)
        if known is None or known[0] != content:
            return None
        _documents.move_to_end(path)
        return known[1]


def remember(path: Path, content: bytes, document: Any) -> None:
    """Keep ``document`` as what ``path`` holding ``content`` gives (documents are shared:
    nobody changes one after it is made)."""
    with _documents_lock:
        _documents[path] = (content, document)
        _documents.move_to_end(path)
        while len(_documents) > MAX_REMEMBERED:
            _documents.popitem(last=False)


def cache_dir(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")) / ".cache")
    return Path(base).expanduser() / "acp-bridge" / "yaml"


def _entry(path: Path) -> Path:
    # crc32 keeps the name short; the full path is checked inside, so a clash is a miss.
    where = str(path.absolute())
    return cache_dir() / f"{path.name}.{zlib.crc32(where.encode()):08x}.json"


def _key(path: Path, content: bytes) -> list[Any]:
    return [FORMAT, str(path.absolute()), len(content), zlib.crc32(content)]


def _encode(positions: Positions) -> list[list[Any]]:
    return [[list(where), at.line, at.column] for where, at in positions.items()]


def _decode(rows: list[list[Any]], path: Path) -> Positions:
    return {tuple(where): SourceLocation(path, line, column) for where, line, column in rows}


def load(path: Path, content: bytes) -> tuple[Any, Positions, Positions] | None:
    """(data, value positions, key positions) of ``path`` with this content, or None."""
    try:
        data = read_bytes(_entry(path), what=CACHE_ENTRY, limit=MAX_ENTRY_BYTES)
        cached = bounded_json.loads(data, 2 * bounded_json.MAX_DEPTH)
    except (OSError, ValueError):
        return None
    if not isinstance(cached, dict) or cached.get("key") != _key(path, content):
        return None
    try:
        return cached["data"], _decode(cached["values"], path), _decode(cached["keys"], path)
    except (KeyError, TypeError, ValueError):
        return None


def store(path: Path, content: bytes, data: Any, values: Positions, keys: Positions) -> None:
    """Remember a parse; silently does nothing when it cannot (the cache is optional)."""
    entry = _entry(path)
    try:
        payload = json.dumps(
            {
                "key": _key(path, content),
                "data": data,
                "values": _encode(values),
                "keys": _encode(keys),
            }
        )
    except (TypeError, ValueError):  # not plain JSON data (e.g. a YAML timestamp)
        return
    with contextlib.suppress(OSError, StateDirError):  # private, like the state directory
        # Below the cache's own folder every part is checked (never written through a link).
        write_private(entry, payload.encode(), cache_dir().parent)
