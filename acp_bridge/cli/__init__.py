"""The ``acp-bridge`` command line: the only place that prints.

Exit codes (DESIGN §7): 0 done, 1 failed, 2 usage or config error, 124 timeout,
130 interrupted. Modules: ``_parser`` (commands and options), ``_entries`` (run, bash,
spawn, ask, tools), ``_runs`` (wait, ps, show, logs, stop, prune), ``_detach`` (``--detach``
and runs followed through the run store), ``_profiles``, ``_smoke``, ``_progress`` (live
events), ``_output``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from acp_bridge.cli._output import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    err,
    exit_code_for,
)
from acp_bridge.errors import BridgeError, ConfigError

__all__ = ["exit_code_for", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    from acp_bridge.cli._parser import build_parser

    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[..., int] = args.handler
    try:
        return handler(args)
    except ConfigError as exc:
        name = type(exc).__name__
        for problem in exc.problems:
            err(f"{name}: {problem}")
        return EXIT_USAGE
    except BridgeError as exc:
        err(f"{type(exc).__name__}: {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        err("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `acp-bridge … | head`: not an error worth a traceback
        sys.stderr.close()
        return EXIT_OK
