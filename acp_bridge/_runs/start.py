"""Starting a detached run: queue an :class:`~acp_bridge.EntryRequest`, hand it to a
supervisor process, return a handle at once::

    handle = await start_run(EntryRequest(entry="acp_spawn", agent="demo", task="Hi"))
    result = await handle.wait()          # the SubtaskResult envelope

What is checked before anything starts, so a mistake is an exception here and not a failed
run later: the request itself, the config (loaded like an entry would: ``config`` or the
usual search from the current directory) and, for ``acp_spawn``, that the profile exists and
is usable; the options. What the run inherits: this process's environment and working
directory (relative ``cwd`` is made absolute now). The config's ``runs:`` section and the
profile's ``max_concurrent`` are written into the store with the run (see :mod:`.store.rules`).

A run of a named session (``RunOptions.session``, ``run --session NAME``) follows the latest
run of that name and continues its ACP session (:mod:`.followups.chain`); the first run of a
name opens the session. Follow-ups by run id are :mod:`.followups.send`'s.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path

from acp_bridge._entries.request import EntryRequest
from acp_bridge._entries.runner import check_task_id, check_text
from acp_bridge._os import proc
from acp_bridge._runs import lanes, runners
from acp_bridge._runs.budget import Budget
from acp_bridge._runs.followups.chain import follows_for_name
from acp_bridge._runs.handle import RunHandle
from acp_bridge._runs.store import rules
from acp_bridge._runs.store.records import NewRun, RunRecord
from acp_bridge._runs.store.store import Store, open_store
from acp_bridge._runs.supervisor.detach import env_key, launch
from acp_bridge._runs.wakeups import wake
from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.envelope import new_task_id
from acp_bridge.errors import ConfigError


@dataclass(frozen=True)
class RunOptions:
    """What the run layer adds to a request: its group and budgets, and which store.

    ``max_tokens`` / ``max_cost`` limit this run (tokens and cost as the agent reports
    them); runs started with the same ``group`` share a total, ``group_max_tokens`` /
    ``group_max_cost`` (stored for the group: later runs of it need not repeat them). A run
    over a budget is cancelled and fails with ``error_code: budget``. ``session`` names an
    ACP session: the run continues the latest run of that name (``acp_spawn`` only).
    """

    group: str | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    group_max_tokens: int | None = None
    group_max_cost: float | None = None
    store: str | Path | None = None
    """The run store (default: ``$ACP_BRIDGE_RUNS_DB``, else the state directory)."""
    session: str | None = None

    def __post_init__(self) -> None:
        Budget(self.max_tokens, self.max_cost)  # validates
        Budget(self.group_max_tokens, self.group_max_cost)
        if self.session is not None:
            _check_name(self.session, "session")
        if self.group is not None:
            _check_name(self.group, "group")
        elif self.group_max_tokens is not None or self.group_max_cost is not None:
            raise ConfigError("a group budget needs a group name")

    @property
    def group_budget(self) -> tuple[int | None, float | None] | None:
        if self.group_max_tokens is None and self.group_max_cost is None:
            return None
        return self.group_max_tokens, self.group_max_cost


def _check_name(name: str, what: str) -> None:
    try:
        check_task_id(name)
    except ConfigError:
        shown = repr(name) if len(repr(name)) <= 80 else f"{repr(name)[:80]}…"
        raise ConfigError(
            f"{what} must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or "
            f"digit; got {shown}"
        ) from None


def start_run_sync(
    request: EntryRequest,
    *,
    options: RunOptions | None = None,
    config: LoadedConfig | None = None,
) -> RunHandle:
    """Queue ``request`` as a detached run and hand it to a supervisor; returns at once (the
    run is ``queued``). Raises :class:`~acp_bridge.ConfigError` for a request, config or
    option that cannot run, :class:`~acp_bridge.SpawnError` if the supervisor cannot start,
    :class:`~acp_bridge.RunStoreError` if the store cannot be written."""
    options = options or RunOptions()
    loaded = config if config is not None else load_config()
    store = open_store(options.store)
    follows = None
    if options.session is not None:
        follows = follows_for_name(
            store.db,
            options.session,
            entry=request.entry,
            agent=request.agent,
            resume=request.option("resume"),
        )
    return queue_run(store, request, options, loaded, follows=follows, session_name=options.session)


def run_config(run: RunRecord) -> LoadedConfig:
    """The config ``run`` was started with: its file, else what its caller's directory found
    (the supervisor carries it with this, and a follow-up continues with it, wherever it is
    sent from)."""
    path = Path(run.config_path) if run.config_path else None
    return load_config(path, cwd=Path(run.caller_cwd))


def queue_run(
    store: Store,
    request: EntryRequest,
    options: RunOptions,
    loaded: LoadedConfig,
    *,
    follows: str | None = None,
    session_name: str | None = None,
) -> RunHandle:
    """Queue ``request`` (following run ``follows``, when given) and hand it to a supervisor:
    a live one of this environment, else a new one (:mod:`.runners`)."""
    if request.entry == "acp_spawn":
        assert request.agent is not None  # EntryRequest requires it
        loaded.profiles.get(request.agent)  # unknown or broken: an error now, not later
    _check_text(request)
    run_id = new_task_id() if request.task_id is None else check_task_id(request.task_id)
    if store.get(run_id) is not None:
        raise ConfigError(f"a run {run_id!r} exists already in {store.path}")
    caller_cwd = os.getcwd()  # noqa: PTH109
    # Absolute now: the supervisor may carry runs of other directories too.
    cwd = os.path.normpath(os.path.join(caller_cwd, request.cwd or "."))  # noqa: PTH118
    data = request.replace(task_id=run_id, cwd=cwd)
    lane = lanes.lane_for(request.entry, request.agent)
    run = NewRun(
        id=run_id,
        entry=request.entry,
        agent=request.agent,
        task=request.task,
        cwd=cwd,
        caller_cwd=caller_cwd,
        request=data.model_dump(mode="json", exclude_none=True, exclude_defaults=True),
        config_path=None if loaded.path is None else str(loaded.path.absolute()),
        lane=lane,
        group=options.group,
        env_key=env_key(),
        max_tokens=options.max_tokens,
        max_cost=options.max_cost,
        follows=follows,
        session_name=session_name,
    )
    _hand_over(store, run, loaded, options)
    if follows is not None:
        wake(store, [follows])  # a supervisor holding its agent takes this one at once
    return RunHandle(run.id, store.path)


def _hand_over(store: Store, run: NewRun, loaded: LoadedConfig, options: RunOptions) -> None:
    """Record ``run`` for a live runner of its environment, else start a supervisor for it
    (see :mod:`.runners`)."""
    record = functools.partial(
        store.create,
        run,
        limits=rules.lane_limits(loaded, run.lane, run.agent),
        group_budget=options.group_budget,
        settings=rules.store_settings(loaded.config.runs),
    )
    runner = runners.find(store, run.env_key)
    if runner is not None and record(runner, runner="join"):
        wake(store, [runners.bell_key(runner)])
        return
    log = store.logs_dir / f"{run.id}.log"
    supervisor = launch(store.path, run.id, log)
    try:
        record(supervisor, runner="new")
    except BaseException:  # not queued after all: its supervisor has nothing to carry
        proc.kill_process(supervisor)
        with contextlib.suppress(OSError):
            log.unlink()
        raise


def _check_text(request: EntryRequest) -> None:
    """Every text field of ``request`` as :func:`check_text` wants it: the store keeps them
    as JSON, and the supervisor hands them on."""
    for name, value in request.model_dump(mode="json", exclude_none=True).items():
        check_text(name, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


async def start_run(
    request: EntryRequest,
    *,
    options: RunOptions | None = None,
    config: LoadedConfig | None = None,
) -> RunHandle:
    """:func:`start_run_sync` off the event loop (it reads the config and waits a few ms for
    a shell to fork the supervisor)."""
    import anyio

    def call() -> RunHandle:
        return start_run_sync(request, options=options, config=config)

    return await anyio.to_thread.run_sync(call)
