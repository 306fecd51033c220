"""Running smoke cases: as one batch on an executor, each case in a fresh workspace.

Every case is a task of one batch (:mod:`acp_bridge._batch`), so a suite runs wherever a
batch runs — in this process (the default) or over a Ray cluster — with the same verdicts:
the case's workspace is made where it runs, its setup files written there, and its file
expectations checked there too (before the workspace goes); the envelope comes back to be
judged here. ``--parallel`` is the batch's concurrency.

A case's own ``timeout`` goes to its entry path, which ends it with an envelope; the local
executor keeps a guard on top (the timeout plus a margin), a remote one its own deadline.
Cancelling (Ctrl-C) cancels running cases gracefully where they run and skips those not
started. A case the executor could not run (no node offers its agent, a lost node) is an
``error``, not a ``failed``: the agent was never judged.

``skip_missing`` asks the doctor (``_agents/doctor.py``) about each agent the cases run here,
before any case: an agent it finds not ready — not installed, or it does not start in its
sandbox, or it refuses a session for want of a key — has its cases skipped, with the
doctor's reason and fix, instead of failing each after its timeout.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio

from acp_bridge._acp.session.tracing import Tracing
from acp_bridge._agents.doctor import diagnose
from acp_bridge._batch.batch_run import TaskOutcome, run_batch
from acp_bridge._batch.executor import Executor, LocalExecutor
from acp_bridge._batch.tasks import BatchTask, Keyed, Workspace
from acp_bridge._entries.request import EntryRequest
from acp_bridge._os.race import race
from acp_bridge._runs import foreground
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import BridgeError, ErrorCode
from acp_bridge.smoke._expect import check, workspace_failures
from acp_bridge.smoke._suite import CaseRun

CaseVerdict = Literal["passed", "failed", "error", "skipped"]
NOT_JUDGED = frozenset({ErrorCode.EXECUTOR_ERROR, ErrorCode.NODE_LOST, ErrorCode.LOST})
"""Error codes of a case the executor could not run or finish: an ``error`` verdict."""


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
    """Skip the cases of agents the doctor finds not ready here (local executor only)."""
    keep_workspaces: bool = False
    executor: Executor | None = None
    """Where the cases run (default: :class:`~acp_bridge.LocalExecutor`, this process)."""


class SuiteRun:
    def __init__(
        self,
        config: LoadedConfig,
        settings: SmokeSettings,
        progress: Progress | None = None,
        note: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self.progress = progress or (lambda run, outcome: None)
        self.note = note or (lambda text: None)
        """Told what happens before the first case (the doctor's probes take seconds)."""
        self.outcomes: dict[int, CaseOutcome] = {}
        """Finished cases by index; kept here so an outright cancel still leaves them."""

    async def run(self, runs: list[CaseRun], cancel: anyio.Event) -> list[CaseOutcome]:
        foreground.install()  # every case's run is recorded in the run store, like any other
        tasks: list[Keyed] = []
        executor = self.settings.executor or LocalExecutor()
        here = isinstance(executor, LocalExecutor)  # where --skip-missing can look
        not_ready: dict[str, str] = {}
        if here and self.settings.skip_missing:  # the doctor's probes, against an interrupt
            asked = await race(lambda: self._not_ready(runs), cancel.wait)
            not_ready = asked.value or {}
        for index, run in enumerate(runs):
            why = not_ready.get(run.agent or "")
            if why:
                self._ended(index, CaseOutcome(run, "skipped", [why]))
            else:
                tasks.append(Keyed(index, run.id, self._task(run)))

        def progress(what: str, task: Keyed, node: str | None, envelope: object) -> None:
            if what == "started":
                self.progress(runs[task.index], None)

        tracing = Tracing.from_host()

        def on_outcome(outcome: TaskOutcome) -> None:
            index = outcome.task.index
            judged = self._judge(runs[index], outcome, cancel)
            tracing.current(**{"acp.smoke.verdict": judged.verdict})  # the case's span
            self._ended(index, judged)

        await run_batch(
            tasks,
            executor=executor,
            config=self.config,
            concurrency=max(1, self.settings.parallel),
            progress=progress,
            on_outcome=on_outcome,
            cancel=cancel,
            spans=("acp_bridge.smoke", "acp_bridge.smoke.case"),
        )
        return self.results(runs)

    def _ended(self, index: int, outcome: CaseOutcome) -> None:
        self.outcomes[index] = outcome
        self.progress(outcome.run, outcome)

    def results(self, runs: list[CaseRun]) -> list[CaseOutcome]:
        """An outcome for every run: those that never finished count as skipped."""
        return [
            self.outcomes.get(i) or CaseOutcome(run, "skipped", ["interrupted"])
            for i, run in enumerate(runs)
        ]

    def _task(self, run: CaseRun) -> BatchTask:
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
        )
        workspace = Workspace(files=case.files, keep=self.settings.keep_workspaces)
        inspect = functools.partial(workspace_failures, case.expect.files)
        return BatchTask(request, run.id, workspace, inspect)

    def _judge(self, run: CaseRun, outcome: TaskOutcome, cancel: anyio.Event) -> CaseOutcome:
        envelope = outcome.envelope
        duration = (envelope.meta.duration_ms or 0) / 1000
        info = envelope.meta.batch or {}
        if cancel.is_set() and info.get("interrupted"):
            if info.get("node") is None:
                return CaseOutcome(run, "skipped", ["interrupted before it started"])
            return CaseOutcome(run, "skipped", ["interrupted while running"], envelope, duration)
        kept = self.settings.keep_workspaces and info.get("cwd")
        workspace = Path(info["cwd"]) if kept else None
        if envelope.meta.error_code in NOT_JUDGED:
            return CaseOutcome(run, "error", [envelope.error], envelope, duration, workspace)
        failures = check(
            envelope,
            run.case.expect,
            file_failures=list(outcome.inspection or []),
            suite_dir=run.suite.path.parent,
            duration=duration,
        )
        verdict: CaseVerdict = "failed" if failures else "passed"
        return CaseOutcome(run, verdict, failures, envelope, duration, workspace)

    async def _not_ready(self, runs: list[CaseRun]) -> dict[str, str]:
        """Agent → why the doctor finds it not ready here, and the fix; for each agent the
        cases run whose profile loads (a broken or unknown one: the run itself says so)."""
        agents = []
        for run in runs:
            if run.agent is None or run.agent in agents:
                continue
            try:
                self.config.profiles.get(run.agent)
            except BridgeError:
                continue
            agents.append(run.agent)
        if agents:
            self.note(f"--skip-missing: asking the doctor about {', '.join(agents)}")
        reports = await diagnose(self.config, agents, concurrency=self.settings.parallel)
        reasons = {}
        for report in reports:
            problem = report.problem
            if problem is not None:
                fix = f"; fix: {problem.fix}" if problem.fix else ""
                where = f"acp-bridge doctor {report.profile}"
                reasons[report.profile] = f"not ready ({where}): {problem.detail}{fix}"
        return reasons
