"""The agent's JSON decoded with numbers every consumer can hold.

``json`` reads ``NaN``, ``Infinity`` and ``10^400`` (and integers of thousands of digits,
slowly, up to Python's limit). None of them fits the store (SQLite's integers are 64-bit),
the budgets or a JSON reply of ours. They are read as null here, inside the C decoder's
hooks, and counted: the parse boundary (inbound.py) turns a request that held one into a
-32602 and anything else into a warning, never a dropped line.
"""

from __future__ import annotations

import json
import math

INT64 = 1 << 63
"""Integers must lie in [-INT64, INT64): what SQLite and every 64-bit consumer can hold."""
replaced_numbers = [0]
"""Numbers read as null so far (a list: the hooks below run inside the C decoder)."""


def _no_constant(name: str) -> None:
    replaced_numbers[0] += 1  # NaN, Infinity, -Infinity


def _finite_float(text: str) -> float | None:
    value = float(text)
    if math.isfinite(value):
        return value
    replaced_numbers[0] += 1
    return None


def _int64(text: str) -> int | None:
    # Length first: int() of a few thousand digits is slow, past 4300 it raises.
    if len(text) <= 20 and -INT64 <= (value := int(text)) < INT64:
        return value
    replaced_numbers[0] += 1
    return None


_decoder = json.JSONDecoder(
    parse_constant=_no_constant, parse_float=_finite_float, parse_int=_int64
)
raw_decode = _decoder.raw_decode
