"""``acp-bridge wait | ps | show | logs | stop | prune | send``: runs from the command line.

These commands read the run store and never run an entry, so they start light: this module
imports neither pydantic nor the entry code (the parser loads other command modules only
when their handler runs). ``send`` starts a run: its run-layer flags (``--detach``, the
budgets) come from the run layer's options model, built only when the command line names it.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from acp_bridge.cli._argtypes import count, number, seconds
from acp_bridge.cli._printing import (
    EXIT_OK,
    EXIT_TIMEOUT,
    err,
    exit_code_of,
    flush_stdout,
    human_stream,
    out,
    out_json,
    out_json_compact,
    out_json_objects,
)
from acp_bridge.cli._safe_text import compact_json_raw, is_utf, one_line

# The handlers import the run layer themselves: the parser defines these commands for every
# command line, and `run` without --detach needs none of it (SQLite and the run-control
# modules are a tenth of a cold run's imports).

# Ages are checked as typed: nan, inf and negatives are usage errors.
FOLLOW_UP_INHERITS = ("group", "group_max_tokens", "group_max_cost", "session")
"""Run-layer options a follow-up takes from the run it follows, not from its flags."""
_MAX_DAYS = 36_500.0  # as runs.retention.days


def add_output_options(p: argparse.ArgumentParser) -> None:
    """How a followed run shows itself: events on stderr, the envelope on stdout."""
    p.add_argument(
        "--events",
        choices=["human", "ndjson", "none"],
        default="human",
        help="live progress on stderr: human lines, one JSON object per line, or none",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="same as --events none")
    p.add_argument("--pretty", action="store_true", help="indent the envelope JSON")


def add_commands(commands: Any) -> None:
    """The run commands, for the full parser and the light one alike."""
    p = commands.add_parser(
        "wait",
        help="wait for runs to end; print their envelopes",
        description="Wait until every run ID has ended and print its envelope (one JSON "
        "object per line, in the order given). Exit code: as for a foreground run, from "
        "the first run that did not end done; 124 if --timeout passed first (unfinished "
        "runs are printed as {task_id, status}).",
        epilog="example: acp-bridge wait $(acp-bridge run --detach demo hi | jq -r .task_id)",
    )
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument("--timeout", type=seconds, metavar="S", help="stop waiting after S seconds")
    p.add_argument("--pretty", action="store_true", help="indent the envelope JSON")
    p.set_defaults(handler=cmd_wait)

    p = commands.add_parser(
        "ps",
        help="list runs: queued and running ones (--all: every recorded run)",
        description="List runs, newest first. A run whose supervisor died is marked lost "
        "here (and what it started is ended).",
    )
    p.add_argument("--all", action="store_true", help="ended runs too")
    p.add_argument("--json", action="store_true", help="one JSON array of runs")
    p.set_defaults(handler=cmd_ps)

    p = commands.add_parser("show", help="one run, with its envelope once it ended (JSON)")
    p.add_argument("id", metavar="ID")
    p.set_defaults(handler=cmd_show)

    p = commands.add_parser(
        "logs",
        help="a detached run's live events, replayed from the start",
        description="Print the events a detached run recorded, like the live progress of a "
        "foreground run; with -f, then follow new ones until the run ends.",
    )
    p.add_argument("id", metavar="ID")
    p.add_argument("-f", "--follow", action="store_true", help="follow until the run ends")
    p.add_argument("--json", action="store_true", help="one JSON object per event")
    p.set_defaults(handler=cmd_logs)

    p = commands.add_parser(
        "stop",
        help="stop detached runs gracefully (envelope: cancelled)",
        description="Ask each run to stop: a queued run ends at once; a running one is "
        "cancelled the way its entry allows (the ACP turn is cancelled, a command's process "
        "group ended) and keeps its partial output. Prints {task_id, status}; does not wait "
        "(acp-bridge wait ID does).",
    )
    p.add_argument("ids", nargs="+", metavar="ID")
    p.set_defaults(handler=cmd_stop)

    p = commands.add_parser(
        "send",
        help="a follow-up turn in a run's ACP session; print its envelope",
        description="Send TEXT as the next turn in the ACP session of run ID (after the "
        "session's latest turn): a follow-up, a run of its own with its own task id, "
        "envelope, events and budget. It is served by the agent still kept alive from the "
        "last turn (the profile's timeouts.idle), else through session/resume or "
        "session/load, else it fails with a clear refusal, never in a fresh session. Like "
        "run, it follows the turn and prints the envelope; --detach prints {task_id, status}.",
        epilog="example: acp-bridge send sub_7f3a9c1e2b4d 'now also fix the lint'",
    )
    p.add_argument("id", metavar="ID", help="a run of the session (its latest turn is followed)")
    p.add_argument("text", metavar="TEXT", help="the follow-up prompt; '-' reads it from stdin")
    p.add_argument(
        "--timeout",
        type=seconds,
        metavar="S",
        help="seconds the turn may take (default: the profile's timeouts.run)",
    )
    if isinstance(p, argparse.ArgumentParser):  # built: the command line names send, or all
        # The run layer's flags come from its options model (pydantic): only for send.
        from acp_bridge.cli._run_commands.entry_flags import add_run_layer_options

        # A follow-up goes on in its session, and its group is the session's.
        add_run_layer_options(p, without=FOLLOW_UP_INHERITS, detach="queue it and return at once")
    add_output_options(p)
    p.set_defaults(handler=cmd_send)

    p = commands.add_parser(
        "prune",
        help="delete ended runs by the retention setting (or by age and count)",
        description="Delete ended runs (and their events) older than the retention "
        "(runs.retention in the config: 30 days by default) or beyond its count; never a "
        "queued or running run.",
    )
    p.add_argument(
        "--older-than", type=number(_MAX_DAYS), metavar="DAYS", help="ended over DAYS ago"
    )
    p.add_argument(
        "--keep", type=count(0, 10_000_000), metavar="N", help="keep only the newest N ended runs"
    )
    p.set_defaults(handler=cmd_prune)


# --- handlers ------------------------------------------------------------------------


def cmd_wait(args: argparse.Namespace) -> int:
    from acp_bridge._runs.caller.handle import open_run, wait_all_sync

    for run_id in args.ids:
        open_run(run_id)  # an unknown id is a usage error before any waiting
    runs = wait_all_sync(args.ids, timeout=args.timeout)
    code = EXIT_OK
    for run in runs:
        if run.envelope is None:
            out_json({"task_id": run.id, "status": run.status}, pretty=args.pretty)
            code = code or EXIT_TIMEOUT
            continue
        out_json(run.envelope, pretty=args.pretty)
        if code == EXIT_OK:
            code = exit_code_of(run.envelope["status"], run.envelope["meta"].get("error_code"))
    return code


def _ago(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:.0f}d"
    if seconds >= 3600:
        return f"{seconds / 3600:.0f}h"
    if seconds >= 60:
        return f"{seconds / 60:.0f}m"
    return f"{max(0.0, seconds):.0f}s"


def _table(table: list[Any], now: float) -> list[tuple[str, ...]]:
    """Rows of ``TABLE_COLUMNS`` as the table's cells. The last cell is left for
    :func:`out` to make visible with the whole table (split on whitespace, it holds no
    newline, where :func:`one_line` and :func:`visible` differ); agents and groups repeat,
    so each is made visible once."""
    shown: dict[str | None, str] = {}

    def field(text: str | None) -> str:
        value = shown.get(text)
        if value is None:
            value = shown[text] = one_line(text or "-")
        return value

    cells: list[tuple[str, ...]] = []
    for run_id, status, entry, detached, agent, group, created, started, ended, what in table:
        what = " ".join(what.split())
        cells.append(
            (
                run_id,
                status,
                entry if detached else f"{entry}*",
                field(agent),
                field(group),
                _ago(now - created),
                _ago((ended or now) - started) if started else "-",
                what if len(what) <= 60 else what[:59] + "…",
            )
        )
    return cells


def cmd_ps(args: argparse.Namespace) -> int:
    from acp_bridge._runs.caller.handle import list_run_dicts, list_run_json, list_run_table

    if args.json and is_utf(sys.stdout):  # 10 000 runs are 5 MB: texts stored at their end
        out_json_objects(list_run_json(compact_json_raw, include_ended=args.all))
        return EXIT_OK
    if args.json:  # an ASCII-only stdout: every non-ASCII character escaped
        out_json_compact(list_run_dicts(include_ended=args.all))
        return EXIT_OK
    # Straight from the rows, one format a line and one write: 100 000 runs took ~5 s as
    # records, a line written at a time.
    table = list_run_table(include_ended=args.all)
    now = time.time()
    rows: list[tuple[str, ...]] = [
        ("TASK_ID", "STATUS", "ENTRY", "AGENT", "GROUP", "CREATED", "TOOK", "TASK/SUMMARY")
    ]
    rows += _table(table, now)
    widths = [max(map(len, column)) for column in list(zip(*rows, strict=True))[:-1]]
    line = "  ".join(f"{{:<{width}}}" for width in widths) + "  {}"
    lines = [line.format(*row) for row in rows]
    if any(not row[3] for row in table):
        lines.append("(* a foreground run, run by its caller's process)")
    out("\n".join(lines))
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from acp_bridge._runs.store.run_store import open_store
    from acp_bridge._runs.watch import get_checked

    run = get_checked(open_store(), args.id)
    out_json(run.to_dict(), pretty=True)
    return EXIT_OK


def cmd_logs(args: argparse.Namespace) -> int:
    from acp_bridge._runs.caller.handle import open_run
    from acp_bridge.cli._run_commands.live_events import HumanProgress

    handle = open_run(args.id)
    if not handle.record().detached:
        err(f"{args.id} is a foreground run: its events are not recorded (its envelope: "
            f"acp-bridge show {args.id})")  # fmt: skip
    human = None if args.json else HumanProgress(human_stream("stdout"))
    try:
        for item in handle.events_sync(follow=args.follow):
            if human is None:
                out_json({"seq": item.seq, **item.event.to_dict()}, line=True)
                flush_stdout()
            else:
                human(item.event)
    finally:
        if human is not None:
            human.close()
    return EXIT_OK


def cmd_stop(args: argparse.Namespace) -> int:
    from acp_bridge._runs.caller.handle import stop_run

    for run_id in args.ids:
        run = stop_run(run_id)
        out_json({"task_id": run.id, "status": run.status}, line=True)
    return EXIT_OK


def cmd_send(args: argparse.Namespace) -> int:
    from acp_bridge.cli._run_commands.detached_runs import (
        send_follow_up,  # it starts a run: the heavy part
    )

    return send_follow_up(args)


def cmd_prune(args: argparse.Namespace) -> int:
    from acp_bridge._runs.store import retention
    from acp_bridge._runs.store.run_store import open_store

    store = open_store()
    if args.older_than is None and args.keep is None:
        _apply_config_retention(args, store)
        days, keep = retention.retention(store)
    else:
        days, keep = args.older_than, args.keep
    pruned = retention.prune(store, older_than_days=days, keep=keep)
    out_json({"pruned": len(pruned), "older_than_days": days, "keep": keep}, line=True)
    return EXIT_OK


def _apply_config_retention(args: argparse.Namespace, store: Any) -> None:
    """The config's ``runs.retention`` into the store first (prune by what the config says
    now, not by what the last run's start wrote)."""
    from acp_bridge._runs.store.rules import store_settings
    from acp_bridge.config import load_config

    for key, value in store_settings(load_config(args.config).config.runs).items():
        store.set_setting(key, value)
