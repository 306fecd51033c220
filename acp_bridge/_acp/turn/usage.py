"""A turn's usage figures: ``usage_update`` notifications and the prompt reply's ``usage``.

Only numbers in range are kept (:func:`figure`): the run store and the budgets add them up,
SQLite's integers are 64-bit, and 10**300 tokens is no model's. ACP's cost is kept as
``{amount, currency}`` and nothing else (the rest of the object could be megabytes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acp_bridge._acp.wire.schema import UsageUpdate
from acp_bridge._os.limits import MAX_COST, MAX_TOKENS

_USAGE_KEYS = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "totalTokens": "total_tokens",
    "thoughtTokens": "thought_tokens",
    "cachedReadTokens": "cached_read_tokens",
    "cachedWriteTokens": "cached_write_tokens",
}


def figure(value: object, limit: float = MAX_TOKENS) -> bool:
    """A JSON number, not a boolean, from 0 to ``limit``: a figure that can be added up."""
    return type(value) in (int, float) and 0 <= value <= limit  # type: ignore[operator]


def usage_update(usage: dict[str, Any], update: dict[str, Any]) -> None:
    """Apply a ``usage_update`` to ``usage``; raises ``ValueError`` (nothing kept) when a
    figure does not fit."""
    checked = UsageUpdate.model_validate(update)  # all checked before anything is kept
    cost = None
    if checked.cost is not None:
        amount, currency = checked.cost.get("amount"), checked.cost.get("currency")
        if not figure(amount, MAX_COST) or not isinstance(currency, str):
            raise ValueError("usage_update.cost is not {amount, currency}")
        cost = {"amount": amount, "currency": currency[:16]}
    if not all(figure(n) for n in (checked.used, checked.size) if n is not None):
        raise ValueError("usage_update: a token count out of range")
    if checked.used is not None:
        usage["context_used"] = checked.used
    if checked.size is not None:
        usage["context_size"] = checked.size
    if cost is not None:
        usage["cost"] = cost


def prompt_usage(usage: dict[str, Any], bad: list[str], reply_usage: Any) -> None:
    """Add the prompt reply's ``usage`` to ``usage``; what does not fit goes to ``bad``."""
    if not isinstance(reply_usage, Mapping):
        if reply_usage is not None:
            bad.append(f"usage: {str(reply_usage)[:40]}")
        return
    for wire, name in _USAGE_KEYS.items():
        value = reply_usage.get(wire)
        if figure(value):
            usage[name] = value
        elif value is not None:  # a string, a list, a count no model spends
            bad.append(f"{wire}: {str(value)[:40]}")
