"""Queueing a detached run: the request checked, recorded in the store and handed to a
supervisor process (a live one of this environment, else a new one). What starts a run
(:mod:`.start`) and what sends a follow-up (:mod:`.send`) both queue through here.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os

from acp_bridge._entries.enveloped import check_task_id, check_text
from acp_bridge._entries.request import EntryRequest
from acp_bridge._os.process import proc
from acp_bridge._runs.run_options import RunOptions
from acp_bridge._runs.store import lanes, rules, supervisors
from acp_bridge._runs.store.run_records import NewRun
from acp_bridge._runs.store.run_store import Store
from acp_bridge._runs.supervisor.start_detached import env_key, launch
from acp_bridge._runs.wakeups import wake
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import new_task_id
from acp_bridge.errors import ConfigError


def queue_run(
    store: Store,
    request: EntryRequest,
    options: RunOptions,
    loaded: LoadedConfig,
    *,
    follows: str | None = None,
    session_name: str | None = None,
) -> str:
    """Queue ``request`` (following run ``follows``, when given) and hand it to a supervisor:
    a live one of this environment, else a new one
    (:mod:`acp_bridge._runs.store.supervisors`); its run id."""
    if request.entry == "acp_spawn":
        assert request.agent is not None  # EntryRequest requires it
        loaded.profiles.get(request.agent)  # unknown or broken: an error now, not later
    _check_text(request)
    run_id = new_task_id() if request.task_id is None else check_task_id(request.task_id)
    if store.get(run_id) is not None:
        raise ConfigError(f"a run {run_id!r} exists already in {store.path}")
    caller_cwd = os.getcwd()  # noqa: PTH109
    # Absolute now: the supervisor may take runs of other directories too.
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
    return run.id


def _hand_over(store: Store, run: NewRun, loaded: LoadedConfig, options: RunOptions) -> None:
    """Record ``run`` for a live supervisor accepting runs of its environment, else start a
    supervisor for it (see :mod:`acp_bridge._runs.store.supervisors`)."""
    record = functools.partial(
        store.create,
        run,
        limits=rules.lane_limits(loaded, run.lane, run.agent),
        group_budget=options.group_budget,
        settings=rules.store_settings(loaded.config.runs),
    )
    accepting = supervisors.find(store, run.env_key)
    if accepting is not None and record(accepting, handover="accepting"):
        wake(store, [supervisors.wakeup_key(accepting)])
        return
    log = store.logs_dir / f"{run.id}.log"
    supervisor = launch(store.path, run.id, log)
    try:
        record(supervisor, handover="new")
    except BaseException:  # not queued after all: its supervisor has nothing to run
        proc.kill_process(supervisor)
        with contextlib.suppress(OSError):
            log.unlink()
        raise


def _check_text(request: EntryRequest) -> None:
    """Every text field of ``request`` as :func:`check_text` wants it: the store keeps them
    as JSON, and the supervisor hands them on."""
    for name, value in request.model_dump(mode="json", exclude_none=True).items():
        check_text(name, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
