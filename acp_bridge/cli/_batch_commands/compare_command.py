"""``acp-bridge compare``: best of N from the command line.

While it runs, one line per attempt on stderr as it is settled; at the end the table
(agent, attempt, status, verifier, wall, tokens, cost, files, +/- lines) and the winner with
its reason, on stderr too. stdout carries the result a program reads: the winner's task id,
or with ``--json`` the whole comparison, or with ``--apply --dry-run`` the patch. Ctrl-C or
SIGTERM cancels the attempts gracefully (their envelopes kept, nothing applied); a second
one stops waiting.
"""

from __future__ import annotations

import argparse
import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import anyio

from acp_bridge._compare.compare_options import NOT_FOR_COMPARE, CompareOptions
from acp_bridge._compare.compare_result import AttemptResult, CompareResult
from acp_bridge._compare.comparison import compare
from acp_bridge._compare.table import status_of, table, verifier_of, wall_of
from acp_bridge._os.race import race
from acp_bridge.cli._agent_commands.profiles_command import load
from acp_bridge.cli._batch_commands.batch_command import executor_from
from acp_bridge.cli._printing import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    err,
    out,
    out_data,
    out_json,
)
from acp_bridge.cli._run_commands.detached_runs import read_task
from acp_bridge.cli._run_commands.entry_flags import flag_names, options_from
from acp_bridge.cli._signals import interrupts
from acp_bridge.errors import ConfigError, Problem
from acp_bridge.smoke._report import (
    JUnitCase,
    JUnitSuite,
    check_report_path,
    junit_document,
    write_report,
)
from acp_bridge.smoke._suite_run import CaseVerdict


def cmd_compare(args: argparse.Namespace) -> int:
    options = options_from(args, CompareOptions, NOT_FOR_COMPARE)
    if args.junit is not None:
        check_report_path(args.junit, "--junit")  # before the agents run, not after
    task = read_task(args.task)
    executor = executor_from(args)
    loaded = load(args)
    began = datetime.now(UTC)
    total = len(args.agents.split(",")) * options.get("n", 1)
    seen: list[AttemptResult] = []

    def settled(attempt: AttemptResult) -> None:
        seen.append(attempt)
        checked = "" if attempt.verifier is None else f" · verifier {verifier_of(attempt)}"
        ended = f"{status_of(attempt)} in {wall_of(attempt)}{checked}"
        err(f"[{len(seen)}/{total}] {attempt.key} {ended}")

    async def main() -> CompareResult | None:
        async def attempts(cancel: anyio.Event, abort: anyio.Event) -> CompareResult | None:
            # The first signal cancels the attempts (the comparison still ends, ranked);
            # the second stops waiting (None: what the attempts left is removed).
            raced = await race(
                lambda: compare(
                    args.agents, task, executor=executor, config=loaded, cancel=cancel,
                    on_attempt=settled, **options,
                ),
                abort.wait,
            )  # fmt: skip
            return raced.value

        return await interrupts.run(attempts, err)

    try:
        result = anyio.run(main)
    except ConfigError as exc:  # named as the flags the user typed
        raise _with_flags(exc) from None
    if result is None:
        err("interrupted again: stopped waiting (what the attempts left was removed)")
        if args.junit is not None:  # what ended before the second signal
            where = str(options.get("cwd") or Path.cwd())
            report = _junit(args.agents.split(","), where, seen, began)
            write_report(args.junit, report, "--junit")
        return EXIT_INTERRUPTED
    for line in table(result):
        err(line)
    if args.junit is not None:
        write_report(args.junit, junit_report(result, began), "--junit")
    _print_result(result, args.json)
    if result.interrupted or interrupts.count:
        return EXIT_INTERRUPTED
    applied = result.apply is None or result.apply.dry_run or result.apply.applied
    return EXIT_OK if result.winner is not None and applied else EXIT_FAILED


def _with_flags(exc: ConfigError) -> ConfigError:
    flags = flag_names(CompareOptions)
    problems = [Problem(p.message, p.location, flags.get(p.field, p.field)) for p in exc.problems]
    return type(exc)(problems)


def _print_result(result: CompareResult, as_json: bool) -> None:
    if as_json:
        out_json(result.to_dict())
    elif result.apply is not None and result.apply.dry_run and result.apply.patch:
        out_data(result.apply.patch)  # the patch as it is: `> winner.patch`
    elif result.winner is not None:
        out(result.winner)


def junit_report(result: CompareResult, began: datetime) -> bytes:
    """One test case per attempt; its verifier is the test (without one, its run)."""
    return _junit(result.agents, result.repository, result.attempts, began)


def _junit(
    agents: list[str], repository: str, attempts: list[AttemptResult], began: datetime
) -> bytes:
    cases = [_case(attempt) for attempt in attempts]
    suite = JUnitSuite(f"compare {','.join(agents)}", repository, cases)
    duration = (datetime.now(UTC) - began).total_seconds()
    return junit_document("acp-bridge compare", [suite], began, duration)


def _case(attempt: AttemptResult) -> JUnitCase:
    envelope, verifier = attempt.envelope, attempt.verifier
    seconds = ((attempt.wall_ms or 0) + (verifier.duration_ms if verifier else 0)) / 1000
    case = JUnitCase(
        attempt.key,
        f"compare.{attempt.agent}",
        seconds,
        "passed",
        output=envelope.to_json(indent=2),
    )
    if not envelope.ok:
        why = f"the run failed ({envelope.meta.error_code}): {envelope.error}"
        verdict: CaseVerdict = "skipped" if envelope.meta.error_code == "cancelled" else "error"
        return dataclasses.replace(case, verdict=verdict, reason=why)
    if verifier is None or verifier.passed:
        return case
    why = f"verifier {verifier.shown}: {verifier.command}"
    if verifier.error:
        why += f" ({verifier.error})"
    return dataclasses.replace(case, verdict="failed", reason=why, detail=verifier.output)
