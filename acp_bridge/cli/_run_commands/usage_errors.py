"""Usage errors of entry commands answer with an envelope, like every other failure.

A caller that parses stdout always gets one: ``acp-bridge run --timeout nan demo hi``
prints the usual usage message on stderr, then a ``config_error`` envelope (entry and all)
on stdout, and exits 2. Other commands keep argparse's plain usage error.

Every usage error of a mistyped command, action, choice or option says what was meant, when
something is close (``did you mean 'run'?``): Python 3.11's argparse has no
``suggest_on_error`` (3.14 does), so the parser adds it, with the one rule of
:func:`~acp_bridge.errors.did_you_mean`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from acp_bridge.errors import did_you_mean

_MEANT = "_did_you_mean"
"""Where each parser leaves its hints for the unrecognized options it saw (a command's
parser runs inside the top one, and only the top one reports them)."""


class EntryParser(argparse.ArgumentParser):
    """An argument parser whose usage errors, for an entry command, come with an envelope,
    and say what a mistyped name was meant to be."""

    entry: str | None = None

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        meant: dict[str, str] = getattr(parsed, _MEANT, {})
        if hasattr(parsed, _MEANT):
            delattr(parsed, _MEANT)  # never seen by a command's handler
        if extras:
            said = " ".join(extras) + "".join(meant.get(word, "") for word in extras)
            self.error(f"unrecognized arguments: {said}")
        return parsed

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        options = [option for action in self._actions for option in action.option_strings]
        meant: dict[str, str] = getattr(parsed, _MEANT, {})
        setattr(parsed, _MEANT, meant)
        for word in extras:
            if word.startswith("-") and word not in meant:  # the command's own parser first
                hint = did_you_mean(word.split("=", 1)[0], options, dashes=True)
                if hint:
                    meant[word] = hint
        return parsed, extras

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            hint = did_you_mean(str(value), (str(choice) for choice in action.choices or ()))
            if not hint:
                raise
            raise argparse.ArgumentError(action, f"{exc.message}{hint}") from None

    def error(self, message: str) -> NoReturn:
        if self.entry is None:
            super().error(message)
        from acp_bridge.cli._printing import EXIT_USAGE, print_envelope
        from acp_bridge.envelope import Meta, failed
        from acp_bridge.errors import ErrorCode

        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        meta = Meta(entry=self.entry)
        # said: the usage line above is the readable message of this refusal
        print_envelope(failed(f"usage: {message}", ErrorCode.CONFIG_ERROR, meta=meta), said=True)
        sys.exit(EXIT_USAGE)


def for_entry(parser: argparse.ArgumentParser, entry: str) -> None:
    """Mark ``parser`` (a subcommand's) as running ``entry``: its usage errors get an envelope."""
    if isinstance(parser, EntryParser):
        parser.entry = entry
