"""``compare``: the same task on several agents (or several tries of one), each attempt in a
git worktree of its own, verified, ranked; the winner's diff applied on request
(docs/explanation/batches.md, best of N).

::

    result = await compare(["claude", "codex"], "Fix the failing test", n=2,
                           verify="make test", apply=True)
    result.winner, result.reason   # its task id, and why it won

The attempts are ``acp_spawn`` runs with ``isolation: worktree`` (each on its branch
``acp-bridge/<task_id>``, from the caller's ``HEAD``), run as one batch on the executor —
this process, or a Ray cluster whose nodes see the repository at the same path — which
brings every envelope back with its diff. As each attempt ends, the shared budget judges
it (:mod:`.shared_budget`) and the verifier runs on its diff (:mod:`.verifier`); then
:mod:`.ranking` picks the winner, and ``apply`` applies its diff to the caller's working
tree, only if that is clean (checked before anything starts, and again before applying).

Nothing is left behind: every attempt's worktree and branch is removed when its run ends
(kept, all of them, with ``keep``), every verifier's when it ends, and whatever a failure
left — the whole comparison is swept at the end, whatever happened.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from typing_extensions import Unpack

from acp_bridge._batch.batch_run import TaskOutcome, run_batch
from acp_bridge._batch.executor import Executor
from acp_bridge._batch.tasks import BatchTask, keyed
from acp_bridge._compare.compare_options import (
    CompareOptions,
    attempt_options,
    check_compare_options,
    pick_of,
)
from acp_bridge._compare.compare_result import ApplyResult, AttemptResult, CompareResult
from acp_bridge._compare.patches import (
    Repository,
    apply_diff,
    diff_stats,
    dirty_files,
    refuse_dirty,
    repository,
)
from acp_bridge._compare.ranking import Standing, choose
from acp_bridge._compare.shared_budget import SharedBudget
from acp_bridge._compare.verifier import VerifierResult, verify
from acp_bridge._entries.request import EntryRequest
from acp_bridge._entries.sync import synchronous
from acp_bridge._os.fs.input_files import InputRefused, read_bytes
from acp_bridge._os.fs.locations import state_dir
from acp_bridge._os.git.worktree_removal import discard_worktrees
from acp_bridge._runs.budget import usage_figures
from acp_bridge.config import AgentProfile, LoadedConfig, load_config
from acp_bridge.envelope import SubtaskResult, new_task_id
from acp_bridge.errors import BridgeError, ConfigError

VERIFY_AT_ONCE = 4
"""Verifiers running at once (each a worktree and a sandboxed command)."""
PATCH_FILE = "a patch shown by --dry-run"
MAX_PATCH_BYTES = 64 << 20
"""The largest winner's diff ``--apply --dry-run`` puts in its result (an agent's changes
can be any size; the diff is still applied by git from the file, whatever its size)."""

OnAttempt = Callable[[AttemptResult], None]
log = logging.getLogger("acp_bridge.compare")


def read_patch(diff: Path) -> str:
    """The winner's diff as ``--apply --dry-run`` shows it (bytes that are not UTF-8 shown
    replaced: it is for reading, git applies the file itself); OSError when it cannot be
    read within :data:`MAX_PATCH_BYTES`."""
    return read_bytes(diff, what=PATCH_FILE, limit=MAX_PATCH_BYTES).decode("utf-8", "replace")


@dataclass(frozen=True)
class _Planned:
    agent: str
    number: int
    task_id: str

    @property
    def key(self) -> str:
        return f"{self.agent}#{self.number}"


def agent_names(agents: str | Sequence[str]) -> list[str]:
    """``a,b`` or ``["a", "b"]``: the agents, each once, in the order given."""
    names = [n.strip() for n in agents.split(",")] if isinstance(agents, str) else list(agents)
    if not names or any(not name for name in names):
        raise ConfigError("agents: name one agent profile or more (a,b)")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConfigError(f"agents: {', '.join(repeated)} named twice (use n for more attempts)")
    return names


async def compare(
    agents: str | Sequence[str],
    task: str,
    *,
    executor: Executor | None = None,
    config: LoadedConfig | None = None,
    cancel: anyio.Event | None = None,
    on_attempt: OnAttempt | None = None,
    **options: Unpack[CompareOptions],
) -> CompareResult:
    """Run ``task`` on every agent, ``n`` times each, and compare (see the module docstring).

    ``options``: :class:`~acp_bridge.CompareOptions` — compare's own (``n``, ``verify``,
    ``pick``, ``apply``, ``dry_run``, ``keep``, ``max_tokens``, ``max_cost``) and the
    ``acp_spawn`` options every attempt runs with (``cwd``: where in the repository,
    ``timeout``, ``mode``, ``model``, …). ``executor``: where the attempts run (default: this
    process). ``cancel``: set it to stop (running attempts end ``cancelled``, nothing is
    applied). ``on_attempt``: told of each attempt as it is settled (verified, in the order
    they end). Raises :class:`~acp_bridge.ConfigError` before anything runs (an unknown
    agent, not a git repository, a dirty working tree with ``apply``); after that, what
    happened is in the result."""
    checked = check_compare_options(options)
    names = agent_names(agents)
    if not task.strip():
        raise ConfigError("task: empty")
    loaded = config if config is not None else await anyio.to_thread.run_sync(load_config)
    profiles = {name: loaded.profiles.get(name).profile for name in names}
    given = anyio.Path(checked.get("cwd") or os.getcwd())  # noqa: PTH109
    cwd = Path(await (await given.expanduser()).resolve())
    repo = await repository(cwd)
    if checked["apply"] and not checked["dry_run"]:
        dirty = await dirty_files(repo.top)
        if dirty:
            raise refuse_dirty(repo.top, dirty)
    comparison = _Comparison(task, checked, loaded, profiles, cwd, repo)
    return await comparison.run(executor, cancel or anyio.Event(), on_attempt)


compare_sync = synchronous(compare)


class _Comparison:
    def __init__(
        self,
        task: str,
        checked: dict[str, Any],
        loaded: LoadedConfig,
        profiles: dict[str, AgentProfile],
        cwd: Path,
        repo: Repository,
    ) -> None:
        self.task = task
        self.checked = checked
        self.loaded = loaded
        self.profiles = profiles
        self.cwd = cwd
        self.repo = repo
        self.plan = [
            _Planned(agent, number, new_task_id())
            for agent in profiles
            for number in range(1, checked["n"] + 1)
        ]
        self.budget = SharedBudget(checked.get("max_tokens"), checked.get("max_cost"))
        self.stop = anyio.Event()
        """The batch's cancel: the caller's, or the budget's."""
        self.cancelled = anyio.Event()
        """The caller's alone: it stops the verifiers too."""
        self.interrupted = False
        self.settled: dict[str, AttemptResult] = {}
        self.verifiers = anyio.CapacityLimiter(VERIFY_AT_ONCE)
        self.warnings: list[str] = []
        self.id = f"cmp_{secrets.token_hex(6)}"
        """Every attempt's ``batch_id`` in the run store, and its comparison's there."""

    def _tasks(self) -> list[BatchTask]:
        keep = "always" if self.checked["keep"] else "never"
        common = attempt_options(self.checked)
        return [
            BatchTask(self._request(planned, keep, common), key=planned.key)
            for planned in self.plan
        ]

    def _request(self, planned: _Planned, keep: str, common: dict[str, Any]) -> EntryRequest:
        return EntryRequest(
            entry="acp_spawn",
            agent=planned.agent,
            task=self.task,
            cwd=str(self.cwd),
            isolation="worktree",
            keep_worktree=keep,
            task_id=planned.task_id,
            **common,
        )

    async def run(
        self, executor: Executor | None, cancel: anyio.Event, on_attempt: OnAttempt | None
    ) -> CompareResult:
        tasks = keyed(self._tasks())
        try:
            async with anyio.create_task_group() as watching:
                watching.start_soon(self._watch, cancel)
                async with anyio.create_task_group() as settling:

                    def settle(outcome: TaskOutcome) -> None:
                        settling.start_soon(self._settle, outcome, on_attempt)

                    await run_batch(
                        tasks,
                        executor=executor,
                        config=self.loaded,
                        on_outcome=settle,
                        cancel=self.stop,
                        spans=("acp_bridge.compare", "acp_bridge.compare.attempt"),
                        batch_id=self.id,
                    )
                watching.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._sweep()
        result = await self._result()
        if self.loaded.config.runs.record:
            await anyio.to_thread.run_sync(_record, result)
        return result

    async def _watch(self, cancel: anyio.Event) -> None:
        await cancel.wait()
        self.interrupted = True
        self.cancelled.set()
        self.stop.set()

    async def _settle(self, outcome: TaskOutcome, on_attempt: OnAttempt | None) -> None:
        planned = next(p for p in self.plan if p.key == outcome.task.key)
        envelope = self.budget.judge(outcome.envelope)
        if self.budget.exceeded:
            self.stop.set()
        attempt = await self._measured(planned, envelope)
        command = self.checked.get("verify")
        if command is not None and envelope.ok and not self.interrupted:
            attempt.verifier = await self._verify(command, planned, attempt)
        self.settled[planned.key] = attempt
        if on_attempt is not None:
            on_attempt(attempt)

    async def _measured(self, planned: _Planned, envelope: SubtaskResult) -> AttemptResult:
        meta = envelope.meta
        tokens, cost = usage_figures(meta.usage or {})
        kept = meta.worktree or {}
        attempt = AttemptResult(
            agent=planned.agent,
            attempt=planned.number,
            task_id=envelope.task_id,
            status=envelope.status,
            envelope=envelope,
            wall_ms=meta.duration_ms,
            tokens=tokens,
            cost=cost,
            files=len(meta.files_changed or []),
            worktree=kept.get("worktree") or None,
            branch=kept.get("branch") or None,
        )
        diff = Path(meta.diff) if meta.diff else None
        if diff is not None and await anyio.Path(diff).is_file():
            attempt.diff = str(diff)
            try:
                stats = await diff_stats(diff, self.repo.top)
                attempt.added, attempt.removed = stats.added, stats.removed
            except BridgeError as exc:  # its size unknown: it may still be verified, win
                self.warnings.append(f"{planned.key}: its diff could not be read: {exc}")
        elif not attempt.files:
            attempt.added = attempt.removed = 0
        return attempt

    async def _verify(
        self, command: str, planned: _Planned, attempt: AttemptResult
    ) -> VerifierResult:
        if attempt.files and attempt.diff is None:
            why = "the attempt's diff is not on this machine: its changes cannot be verified"
            return VerifierResult(command=command, passed=False, error=why)
        async with self.verifiers:
            return await verify(
                command,
                profile=self.profiles[planned.agent],
                loaded=self.loaded,
                cwd=self.cwd,
                base=self.repo.head,
                diff=Path(attempt.diff) if attempt.diff else None,
                task_id=planned.task_id,
                cancel=self.cancelled,
            )

    async def _sweep(self) -> None:
        """Remove what the attempts and verifiers left in the repository (their own ends
        remove it; this is for the ends that could not)."""
        ids = [f"{planned.task_id}-verify" for planned in self.plan]
        if not self.checked["keep"]:
            ids += [planned.task_id for planned in self.plan]
        self.warnings += await discard_worktrees(self.repo.top, ids, state_dir=state_dir())

    async def _result(self) -> CompareResult:
        attempts = [self.settled[p.key] for p in self.plan if p.key in self.settled]
        pick = pick_of(self.checked)
        standings = [
            Standing(
                done=a.envelope.ok,
                verified=None
                if self.checked.get("verify") is None
                else bool(a.verifier and a.verifier.passed),
                wall_ms=a.wall_ms or 0,
                tokens=a.tokens,
                cost=a.cost,
                lines=a.lines,
                files=a.files,
            )
            for a in attempts
        ]
        index, reason = choose(standings, pick)
        if self.interrupted:
            index, reason = None, "interrupted: no winner is picked"
        winner = attempts[index] if index is not None else None
        applied = await self._apply(winner) if self.checked["apply"] else None
        return CompareResult(
            id=self.id,
            task=self.task,
            agents=list(self.profiles),
            n=self.checked["n"],
            verify=self.checked.get("verify"),
            pick=pick,
            repository=str(self.repo.top),
            base=self.repo.head,
            attempts=attempts,
            winner=winner.task_id if winner else None,
            reason=reason,
            budget=self.budget.use(),
            apply=applied,
            interrupted=self.interrupted,
            warnings=self.warnings,
        )

    async def _apply(self, winner: AttemptResult | None) -> ApplyResult:
        dry_run = bool(self.checked["dry_run"])
        if winner is None:
            return ApplyResult(dry_run=dry_run, applied=False, error="no winner: nothing to apply")
        if not winner.files:
            why = "the winner changed no file: nothing to apply"
            return ApplyResult(dry_run=dry_run, applied=False, error=why)
        if winner.diff is None:
            why = "the winner's diff is not on this machine: nothing applied"
            return ApplyResult(dry_run=dry_run, applied=False, error=why)
        diff = Path(winner.diff)
        try:
            paths = (await diff_stats(diff, self.repo.top)).paths
        except BridgeError as exc:
            return ApplyResult(dry_run=dry_run, applied=False, error=f"its diff: {exc}")
        if dry_run:
            try:
                patch = await anyio.to_thread.run_sync(read_patch, diff)
            except OSError as exc:
                error = f"its diff: {exc if isinstance(exc, InputRefused) else exc.strerror}"
                return ApplyResult(dry_run=True, applied=False, files=paths, error=error)
            return ApplyResult(dry_run=True, applied=False, files=paths, patch=patch)
        dirty = await dirty_files(self.repo.top)
        if dirty:  # changed while the attempts ran
            error = str(refuse_dirty(self.repo.top, dirty))
            return ApplyResult(dry_run=False, applied=False, files=paths, error=error)
        refused = await apply_diff(diff, self.repo.top)
        return ApplyResult(dry_run=False, applied=not refused, files=paths, error=refused)


def _record(result: CompareResult) -> None:
    """``result`` in the run store beside its attempts (the viewer's comparison page). A
    store that cannot be written is logged: the comparison itself is done."""
    from acp_bridge._runs.store.run_pages import record_comparison
    from acp_bridge._runs.store.run_store import Store

    try:
        store = Store()
        try:
            record_comparison(store, result.id, result.to_json())
        finally:
            store.close()
    except Exception as exc:
        log.warning("%s: not recorded in the run store: %s", result.id, exc)
