"""Usage errors of entry commands answer with an envelope, like every other failure.

A caller that parses stdout always gets one: ``acp-bridge run --timeout nan demo hi``
prints the usual usage message on stderr, then a ``config_error`` envelope (entry and all)
on stdout, and exits 2. Other commands keep argparse's plain usage error.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class EntryParser(argparse.ArgumentParser):
    """An argument parser whose usage errors, for an entry command, come with an envelope."""

    entry: str | None = None

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
