"""JSON text of an envelope's data in pieces, for writers that must not copy a long answer.

An answer can be many MB (the collector keeps up to 16 MiB of text). Printed with one
``json.dumps`` and stored with another, each made a full copy, and SQLite a third: a 100 MB
answer once peaked at 11x an idle run's memory. :func:`json_pieces` encodes the text output a
slice at a time instead. Standard library only: the run store (``ps``, ``wait``) uses it and
must not load pydantic.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

JSON_PIECE_CHARS = 1 << 20
"""Characters of a long text output encoded at a time."""


def json_pieces(
    data: dict[str, Any], *, indent: int | None = None, ensure_ascii: bool = False
) -> Iterator[str]:
    """``json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)`` in pieces: when
    ``data["output"]`` is a long string it is encoded a slice at a time (escaping is per
    character, so the pieces join to exactly that text); anything else is one piece."""
    output = data.get("output")
    if not isinstance(output, str) or len(output) <= JSON_PIECE_CHARS:
        yield json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)
        return
    # Where the output goes, found by this name. os.urandom, not secrets: that module (with
    # hmac, random, hashlib: ~4.5 ms) was paid by every cold `ps`, through the store.
    mark = f"output-{os.urandom(16).hex()}"
    text = json.dumps({**data, "output": mark}, indent=indent, ensure_ascii=ensure_ascii)
    head, tail = text.split(f'"{mark}"', 1)
    yield head + '"'
    for start in range(0, len(output), JSON_PIECE_CHARS):
        piece = output[start : start + JSON_PIECE_CHARS]
        yield json.dumps(piece, ensure_ascii=ensure_ascii)[1:-1]
    yield '"' + tail
