"""JSON from outside the bridge, its nesting bounded: the one helper every parse of outside
input goes through (a tasks line, a results file, a schema file, a model's tool arguments,
an agent's answer; the ACP boundary uses :func:`too_deep` on its own fast path).

Why a bound at all: ``json`` recurses once per level. Past the interpreter's limit (a
thousand levels, less when the caller is itself deep in the stack) it raises
``RecursionError``, which is not a ``ValueError``, so a ``except ValueError`` around the
parse lets a traceback through; below that limit the value parses, and then every later
step that walks it (pydantic, ``json.dumps``, a JSON Schema check) recurses past the limit
instead. Both are refused here, as a :class:`JsonRefused` (a ``ValueError``) that says why.

Standard library only: the services relay, which runs in the agent's sandbox, may use it.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted by default (ACP needs about 8, a task or
a JSON Schema a dozen)."""


class JsonRefused(ValueError):
    """Not JSON, or JSON nested deeper than its bound. ``str()`` says which, in words a
    person reads after a file's name (``not valid JSON: Expecting value``); ``line`` and
    ``column`` say where in the text, when a place is to blame."""

    def __init__(self, reason: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(reason)
        self.line = line
        self.column = column


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests arrays and objects deeper than ``limit`` (iterative: a value
    too deep to recurse over is still measured)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def loads(
    text: str | bytes, limit: int = MAX_DEPTH, decoder: json.JSONDecoder | None = None
) -> Any:
    """The JSON value of ``text`` (one value, whitespace around it), nested at most ``limit``
    deep; else :class:`JsonRefused`. ``decoder``: one with its own number hooks."""
    try:
        if decoder is None:
            value = json.loads(text)
        else:
            value = decoder.decode(text if isinstance(text, str) else text.decode())
    except json.JSONDecodeError as exc:
        raise JsonRefused(f"not valid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise JsonRefused(f"nested deeper than {limit} levels") from None
    except UnicodeDecodeError as exc:
        raise JsonRefused(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    except ValueError as exc:  # a decoder hook's refusal (an overflowing number, NaN)
        raise JsonRefused(f"not valid JSON: {exc}") from None
    if isinstance(value, dict | list) and too_deep(value, limit):
        raise JsonRefused(f"nested deeper than {limit} levels")
    return value
