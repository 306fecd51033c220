"""``acp-bridge smoke``: run suites, show progress, write JUnit and JSON reports."""

from __future__ import annotations

import argparse
import time
from typing import Any

import anyio

from acp_bridge._os.race import race
from acp_bridge.cli._agent_commands.profiles_command import load
from acp_bridge.cli._printing import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    HumanStream,
    err,
    human_stream,
    out,
)
from acp_bridge.cli._run_commands.entry_commands import names
from acp_bridge.cli._safe_text import json_text, one_line
from acp_bridge.cli._signals import interrupts
from acp_bridge.errors import ConfigError, did_you_mean

_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_MARKS = {"passed": "✓", "failed": "✗", "error": "!", "skipped": "-"}


class _SmokeProgress:
    """One line per finished case; on a terminal, also a live block of running cases. Case
    names and reasons are shown on one line each (``one_line``): the live block counts its
    lines to redraw them."""

    def __init__(self, stream: HumanStream, total: int, live: bool) -> None:
        self.stream = stream
        self.total = total
        self.live = live
        self.running: dict[str, float] = {}
        self.done = 0
        self._drawn = 0
        self._frame = 0

    def __call__(self, run: Any, outcome: Any) -> None:
        if outcome is None:
            self.running[run.id] = time.monotonic()
            self._redraw()
            return
        self.running.pop(run.id, None)
        self.done += 1
        self._clear()
        mark = _MARKS[outcome.verdict] if self.live else outcome.verdict.upper()
        failed = outcome.verdict != "passed" and outcome.reason
        detail = f": {one_line(outcome.reason)}" if failed else ""
        name = one_line(run.id)
        self.stream.write(
            f"{mark} [{self.done}/{self.total}] {name} ({outcome.duration:.2f}s){detail}\n"
        )
        self._redraw()

    def _clear(self) -> None:
        if self.live and self._drawn:
            self.stream.control(f"\x1b[{self._drawn}F\x1b[J")  # up N lines, clear below
            self._drawn = 0

    def _redraw(self) -> None:
        if not self.live:
            self.stream.flush()
            return
        self._clear()
        now = time.monotonic()
        spinner = _SPINNER[self._frame % len(_SPINNER)]
        for case_id, since in self.running.items():
            self.stream.write(f"{spinner} {one_line(case_id)}  {now - since:.1f}s\n")
        self._drawn = len(self.running)
        self.stream.flush()

    async def tick(self) -> None:
        while self.live:
            await anyio.sleep(0.1)  # animation frame, not polling for state
            self._frame += 1
            self._redraw()

    def close(self) -> None:
        self._clear()
        self.stream.flush()


def _check_agents(wanted: list[str], in_suites: list[str]) -> None:
    """--agents names only agents the suites run: a typo would silently drop every
    acp_spawn case and still pass on the others."""
    unknown = [name for name in wanted if name not in in_suites]
    if not wanted or unknown:
        known = ", ".join(sorted(set(in_suites))) or "none (no acp_spawn case)"
        named = ", ".join(name + did_you_mean(name, in_suites) for name in unknown)
        what = f"no case runs agent(s) {named}" if unknown else "no agent named"
        raise ConfigError(f"--agents: {what}; the suites' agents: {known}")


def cmd_smoke(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from acp_bridge.cli._batch_commands.batch_command import executor_from
    from acp_bridge.smoke import _report as report
    from acp_bridge.smoke._suite import expand, load_suite
    from acp_bridge.smoke._suite_run import SmokeSettings, SuiteRun

    for option, path in (("--junit", args.junit), ("--json", args.json)):
        if path is not None:
            report.check_report_path(path, option)  # before an hour of cases, not after
    suites = [load_suite(path) for path in args.suites]
    wanted = names(args.agents)
    if wanted is not None:
        _check_agents(wanted, [a for suite in suites for case in suite.cases for a in case.agents])
    runs, filtered = expand(suites, wanted)
    if not runs:
        err("no case to run" + (f" ({filtered} left out by --agents)" if filtered else ""))
        return EXIT_USAGE
    stream = human_stream()
    progress = _SmokeProgress(stream, len(runs), live=stream.isatty())
    settings = SmokeSettings(
        parallel=args.parallel,
        model=args.model,
        skip_missing=args.skip_missing,
        keep_workspaces=args.keep,
        executor=executor_from(args),
    )
    suite_run = SuiteRun(load(args), settings, progress, note=lambda text: err(one_line(text)))
    started, clock = datetime.now(UTC), time.monotonic()

    def said(text: str) -> None:
        progress.close()  # the live line first: the note on a line of its own
        err(text)

    async def main() -> None:
        async def cases(cancel: anyio.Event, abort: anyio.Event) -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(progress.tick)
                # The first signal cancels running cases, skips the rest; the second stops
                # waiting for them (their ends are cancelled outright).
                await race(lambda: suite_run.run(runs, cancel), abort.wait)
                tg.cancel_scope.cancel()

        await interrupts.run(cases, said)

    try:
        anyio.run(main)
    finally:
        progress.close()
        interrupted = interrupts.count > 0
        outcomes = suite_run.results(runs)
        info = report.RunInfo(started, time.monotonic() - clock, list(args.suites), interrupted)
        if args.junit:
            report.write_report(args.junit, report.junit_xml(outcomes, info), "--junit")
        if args.json:
            data = (json_text(report.json_report(outcomes, info), indent=2) + "\n").encode()
            report.write_report(args.json, data, "--json")
    for line in report.summary_lines(outcomes, info, shown=one_line):
        out(line)
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if any(o.verdict in ("failed", "error") for o in outcomes) else EXIT_OK
