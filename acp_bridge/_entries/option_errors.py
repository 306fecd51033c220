"""Pydantic's validation errors as ours: one :class:`~acp_bridge.errors.Problem` per bad value,
named like the option, flag or tool argument the caller gave.

Apart from the options models (:mod:`.options`) because every face that checks options —
the entries, the command line, the MCP tools, ``compare`` — reports through it.
"""

from __future__ import annotations

from pydantic import ValidationError

from acp_bridge.errors import ConfigError, Problem


def options_error(
    exc: ValidationError, renamed: dict[str, str] | None = None, *, unknown: str = "unknown option"
) -> ConfigError:
    """One :class:`Problem` per error, its ``field`` the dotted path to the bad value (its
    first part ``renamed`` where a face calls it otherwise; an unknown one is ``unknown``).
    The one mapper from pydantic's errors to ours for options, requests and tool arguments."""
    problems = []
    for error in exc.errors(include_url=False):
        parts = [str(part) for part in error["loc"]]
        if parts and renamed:
            parts[0] = renamed.get(parts[0], parts[0])
        field = ".".join(parts)
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = unknown
        elif message.startswith("Value error, "):
            # A check of ours (a path, a rule between options): its message says it all.
            message = message.removeprefix("Value error, ")
        problems.append(Problem(message, field=field))
    return ConfigError(problems)
