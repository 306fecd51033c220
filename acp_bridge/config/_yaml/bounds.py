"""The limits every YAML input is held to (config files, profile files, smoke suites).

Config is input like any other: a file that is not what it claims to be must be a located
error, never a hang, a traceback or an exhausted memory.

- Only regular files, opened without blocking: a FIFO, a device (``/dev/zero``), a socket
  or a directory named as a config is refused before a byte is read (a FIFO would block
  forever, ``/dev/zero`` never ends); at most :data:`MAX_YAML_BYTES` per file. The reading
  is the one reader of every named input (``_os/fs/input_files.py``), which also names the
  line and column of a byte that is not UTF-8.
- At most :data:`MAX_DEPTH` levels of nesting (deeper, ruamel.yaml's composer recurses
  past the interpreter's limit, and its scanner slows down quadratically on nested flow
  sequences: 3 000 ``[`` took 8 s, so brackets are counted before it sees the text) and
  :data:`MAX_NODES` values in the data it becomes:
  aliases are expanded when the document becomes plain data, so ten lines of anchors
  (a "billion laughs") would otherwise become billions of values.
- Tags: the core ones (``!!str``, ``!!int``, ``!!float``, ``!!bool``, ``!!null``, ``!!map``,
  ``!!seq``) are plain values; any other (``!custom``, ``!!python/object``, ``!!binary``,
  ``!!set``) is an error at its line and column, as is a value the config has no use for
  (bytes, a set). An unquoted date is read as the string it is in YAML 1.2.
"""

from __future__ import annotations

import re
from typing import Any

MAX_YAML_BYTES = 4 << 20
YAML_FILE = "a YAML file"
"""The kind of file, as the limit's error names it."""
MAX_DEPTH = 64
MAX_NODES = 50_000
CORE_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")
)


_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")


def flow_depth_exceeds(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether flow brackets nest deeper than ``limit``. Conservative: brackets inside
    quoted strings count too (only a string with ``limit`` unclosed brackets is refused)."""
    if text.count("[") + text.count("{") <= limit:
        return False  # the usual case, in two C-speed passes
    depth = 0
    for bracket in _NOT_A_BRACKET.sub("", text):
        if bracket in "[{":
            depth += 1
            if depth > limit:
                return True
        elif depth:
            depth -= 1
    return False


def tag_of(node: Any) -> str | None:
    """The explicit tag of a ruamel node, if it has one that is not a core tag."""
    tag = getattr(node, "tag", None)
    value = getattr(tag, "value", None)
    if value is None or value in CORE_TAGS:
        return None
    return str(value)


class YamlSizeBudget:
    """How much plain data one document may become (counted as it is built)."""

    __slots__ = ("nodes",)

    def __init__(self) -> None:
        self.nodes = 0

    def spend(self, depth: int) -> str | None:
        """Count one more value at ``depth``; why it is one too many, if it is."""
        self.nodes += 1
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
        if self.nodes > MAX_NODES:
            return (
                f"the document expands to more than {MAX_NODES} values "
                "(anchors and aliases included)"
            )
        return None
