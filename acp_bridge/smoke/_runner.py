"""Running smoke cases: concurrently up to a limit, each in a fresh temporary workspace.

A case's own ``timeout`` goes to its entry path, which ends it with an envelope; on top of
that the runner keeps a guard (the timeout plus a margin) so no case can hold the run
forever. Cancelling (Ctrl-C) tells running ACP cases to cancel gracefully, stops local
ones outright (their processes still end), and marks cases not yet started as skipped.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio

from acp_bridge._entries.request import EntryRequest, run_entry
from acp_bridge._os.race import race
from acp_bridge._runs.store import foreground
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import BridgeError
from acp_bridge.smoke._expect import check
from acp_bridge.smoke._suite import CaseRun

CaseVerdict = Literal["passed", "failed", "error", "skipped"]
DEFAULT_CASE_TIMEOUT = 600.0
GUARD_MARGIN = 30.0  # beyond a case's own timeout: startup, shutdown grace, cleanup


@dataclass
class CaseOutcome:
    run: CaseRun
    verdict: CaseVerdict
    failures: list[str] = field(default_factory=list)
    envelope: SubtaskResult | None = None
    duration: float = 0.0
    workspace: Path | None = None

    @property
    def reason(self) -> str:
        return self.failures[0] if self.failures else ""


Progress = Callable[[CaseRun, CaseOutcome | None], None]
"""Called when a case starts (outcome None) and when it ends."""


@dataclass
class SmokeSettings:
    parallel: int = 1
    model: str | None = None
    skip_missing: bool = False
    keep_workspaces: bool = False


class SmokeRunner:
    def __init__(
        self, config: LoadedConfig, settings: SmokeSettings, progress: Progress | None = None
    ) -> None:
        self.config = config
        self.settings = settings
        self.progress = progress or (lambda run, outcome: None)
        self.outcomes: dict[int, CaseOutcome] = {}
        """Finished cases by index; kept here so an outright cancel still leaves them."""

    async def run(self, runs: list[CaseRun], cancel: anyio.Event) -> list[CaseOutcome]:
        foreground.install()  # every case's run is recorded in the run store, like any other
        limiter = anyio.CapacityLimiter(max(1, self.settings.parallel))
        async with anyio.create_task_group() as tg:
            for index, run in enumerate(runs):
                tg.start_soon(self._slot, index, run, limiter, cancel, self.outcomes)
        return self.results(runs)

    def results(self, runs: list[CaseRun]) -> list[CaseOutcome]:
        """An outcome for every run: those that never finished count as skipped."""
        return [
            self.outcomes.get(i) or CaseOutcome(run, "skipped", ["interrupted"])
            for i, run in enumerate(runs)
        ]

    async def _slot(
        self,
        index: int,
        run: CaseRun,
        limiter: anyio.CapacityLimiter,
        cancel: anyio.Event,
        outcomes: dict[int, CaseOutcome],
    ) -> None:
        async with limiter:
            if cancel.is_set():
                outcome = CaseOutcome(run, "skipped", ["interrupted before it started"])
            else:
                self.progress(run, None)
                outcome = await self._case(run, cancel)
            outcomes[index] = outcome
            self.progress(run, outcome)

    async def _case(self, run: CaseRun, cancel: anyio.Event) -> CaseOutcome:
        missing = self._missing_command(run)
        if missing and self.settings.skip_missing:
            return CaseOutcome(run, "skipped", [missing])
        workspace = Path(tempfile.mkdtemp(prefix="acp-bridge-smoke-"))
        started = time.monotonic()
        try:
            _write_setup_files(run, workspace)
            envelope = await self._guarded(run, workspace, cancel)
            duration = time.monotonic() - started
            if envelope is None:
                limit = (run.case.timeout or DEFAULT_CASE_TIMEOUT) + GUARD_MARGIN
                verdict: CaseVerdict = "skipped" if cancel.is_set() else "error"
                why = (
                    "interrupted"
                    if cancel.is_set()
                    else f"did not finish within {limit:g}s (the runner's guard)"
                )
                return CaseOutcome(run, verdict, [why], None, duration, workspace)
            if cancel.is_set():  # stopped by the interrupt: its result says nothing
                return CaseOutcome(
                    run, "skipped", ["interrupted while running"], envelope, duration, workspace
                )
            failures = check(
                envelope,
                run.case.expect,
                workspace=workspace,
                suite_dir=run.suite.path.parent,
                duration=duration,
            )
            return CaseOutcome(
                run, "failed" if failures else "passed", failures, envelope, duration, workspace
            )
        except (BridgeError, OSError) as exc:
            return CaseOutcome(
                run,
                "error",
                [f"{type(exc).__name__}: {exc}"],
                None,
                time.monotonic() - started,
                workspace,
            )
        finally:
            if not self.settings.keep_workspaces:
                shutil.rmtree(workspace, ignore_errors=True)

    def _missing_command(self, run: CaseRun) -> str:
        if run.agent is None:
            return ""
        try:
            profile = self.config.profiles.get(run.agent).profile
        except BridgeError:
            return ""  # the run itself reports the broken or unknown profile
        if shutil.which(profile.command) is None:
            return f"{profile.command} is not installed (profile {run.agent})"
        return ""

    async def _guarded(
        self, run: CaseRun, workspace: Path, cancel: anyio.Event
    ) -> SubtaskResult | None:
        """The case's envelope; None when the runner's guard stopped it outright. Every
        entry takes ``cancel`` and ends gracefully with an envelope of its own."""
        limit = (run.case.timeout or DEFAULT_CASE_TIMEOUT) + GUARD_MARGIN
        raced = await race(lambda: self._entry(run, workspace, cancel), timeout=limit)
        return raced.value

    def _entry(
        self, run: CaseRun, workspace: Path, cancel: anyio.Event
    ) -> Awaitable[SubtaskResult]:
        case = run.case
        loop_entry = case.entry in ("spawn", "ask")
        request = EntryRequest(
            entry=case.entry,
            task=(case.command if case.entry == "bash" else case.task) or "",
            agent=run.agent,
            tools=case.tools,
            model=(self.settings.model or case.model) if loop_entry else None,
            output_schema=case.output_schema,
            timeout=case.timeout,
            cwd=str(workspace),
        )
        return run_entry(request, config=self.config, cancel=cancel)


def _write_setup_files(run: CaseRun, workspace: Path) -> None:
    for name, content in run.case.files.items():
        path = (workspace / name).resolve()
        if not path.is_relative_to(workspace.resolve()):
            raise BridgeError(f"setup file {name!r} is outside the case's workspace")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
