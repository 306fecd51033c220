"""The bridge's log lines, routed: a run's own to its host as MCP log messages, the rest to
stderr (which MCP hosts keep in their server logs).

Which run a log record belongs to is known from where it was emitted: a tool run's run runs
in a context whose :data:`~acp_bridge._mcp.tool_runs.CURRENT` names it, and every task it starts
inherits that. Records from other threads, or from no run, go to stderr. Nothing is ever
written to stdout: on stdio that is the protocol's.
"""

from __future__ import annotations

import logging
import sys

import mcp.types as types

from acp_bridge._mcp.progress import clip
from acp_bridge._mcp.tool_runs import CURRENT, LogLine

LINE_LIMIT = 1000
_LEVELS: dict[int, types.LoggingLevel] = {
    logging.DEBUG: "debug",
    logging.INFO: "info",
    logging.WARNING: "warning",
    logging.ERROR: "error",
    logging.CRITICAL: "critical",
}


def mcp_level(levelno: int) -> types.LoggingLevel:
    """The MCP level of a Python log level (in-between levels round down)."""
    return _LEVELS.get(max((n for n in _LEVELS if n <= levelno), default=logging.DEBUG), "debug")


class RunLogHandler(logging.Handler):
    """Hands a record to the tool run it was emitted under, else to ``fallback``."""

    def __init__(self, fallback: logging.Handler) -> None:
        super().__init__()
        self.fallback = fallback

    def emit(self, record: logging.LogRecord) -> None:
        tool_run = CURRENT.get()
        if tool_run is not None:
            try:
                line = LogLine(
                    mcp_level(record.levelno), record.name, clip(self.format(record), LINE_LIMIT)
                )
            except Exception:  # logging must never raise into the run
                self.handleError(record)
                return
            if tool_run.log(line):
                return
        self.fallback.handle(record)


def install(level: int = logging.INFO) -> RunLogHandler:
    """Route the ``acp_bridge`` loggers (idempotent: a second call replaces the first)."""
    logger = logging.getLogger("acp_bridge")
    for old in [h for h in logger.handlers if isinstance(h, RunLogHandler)]:
        logger.removeHandler(old)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(logging.Formatter("acp-bridge mcp: %(levelname)s %(name)s: %(message)s"))
    handler = RunLogHandler(stderr)
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False  # not to the root logger's handlers too
    return handler
