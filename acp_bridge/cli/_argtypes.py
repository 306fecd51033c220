"""Argparse ``type=`` checks for numbers, so every option refuses bad input the same way.

A number is checked where the user typed it: ``--timeout nan``, ``inf``, ``-1`` or past
:data:`MAX_SECONDS` is a usage error with a clear message, not a crash (or a run that
never ends) later. Imports nothing heavy: ``wait``, ``ps`` and ``logs`` use these too.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from acp_bridge._os.limits import MAX_BYTES, MAX_SECONDS

__all__ = ["MAX_BYTES", "MAX_SECONDS", "count", "key_value", "number", "seconds"]


def number(high: float, what: str = "a positive number") -> Callable[[str], float]:
    """A positive, finite number up to ``high`` (an argparse ``type``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0 or value > high:
            raise argparse.ArgumentTypeError(f"must be {what}, at most {high:g}; got {text!r}")
        return value

    parse.__name__ = what
    return parse


seconds = number(MAX_SECONDS, "a positive number of seconds")
"""A ``--timeout`` and friends: positive, finite, at most MAX_SECONDS."""


def count(low: int, high: int, what: str = "a whole number") -> Callable[[str], int]:
    """A whole number from ``low`` to ``high`` (an argparse ``type``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {what} from {low} to {high}; got {text!r}")
        return value

    parse.__name__ = what
    return parse


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (``--set``), both sides stripped."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()
