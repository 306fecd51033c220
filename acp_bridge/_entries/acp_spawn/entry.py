"""The ``acp_spawn`` entry: hand a task to an external ACP agent, get an envelope back.

The function checks what it is given and runs it through the one runner
(:func:`~acp_bridge._entries.runner.run_enveloped`: depth, config, the envelope on every
path); the run itself — process, session, turns, wind-down — is :class:`AcpRun`
(``acp_run.py``), its envelope ``acp_result.py``, its deadlines ``acp_clock.py``, and the
turns a held session takes after the first ``acp_turns.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import anyio

from acp_bridge._acp.services.elicitation import ElicitationHook
from acp_bridge._acp.services.permissions import PermissionHook
from acp_bridge._acp.session_options import OptionValue, SessionChoices
from acp_bridge._entries.acp_spawn.live_turns import FollowUps
from acp_bridge._entries.acp_spawn.run import AcpRun
from acp_bridge._entries.runner import RunContext, resolve_timeout, run_enveloped
from acp_bridge._entries.sync import synchronous
from acp_bridge.config import LoadedConfig
from acp_bridge.config._sandbox import IsolationMode
from acp_bridge.envelope import Meta, SubtaskResult
from acp_bridge.errors import ConfigError
from acp_bridge.events import EventHandler, EventSink

__all__ = ["acp_spawn", "acp_spawn_sync"]


async def acp_spawn(
    agent: str,
    task: str,
    *,
    cwd: str | Path | None = None,
    output_schema: str | None = None,
    observe_profile: str | None = None,
    timeout: float | None = None,
    on_event: EventHandler | None = None,
    config: LoadedConfig | None = None,
    cancel: anyio.Event | None = None,
    permission_hook: PermissionHook | None = None,
    elicitation_hook: ElicitationHook | None = None,
    mode: str | None = None,
    model: str | None = None,
    config_options: Mapping[str, OptionValue] | None = None,
    resume: str | None = None,
    fork: bool = False,
    unstable: bool = False,
    isolation: IsolationMode | None = None,
    abort: anyio.Event | None = None,
    task_id: str | None = None,
    follow_ups: FollowUps | None = None,
    worktree: str | Path | None = None,
) -> SubtaskResult:
    """Run ``task`` on the ACP agent of profile ``agent``; always returns an envelope.

    ``cwd`` is the session's working directory (default: the profile's, else the current
    directory). ``timeout`` overrides the profile's run timeout (the whole run: it ends by
    ``timeout`` + END_GRACE). ``cancel`` ends the run gracefully (``error_code: cancelled``);
    ``abort`` skips the graces (SIGKILL at once); ``permission_hook`` answers ``ask`` rules;
    ``elicitation_hook`` the agent's questions to the user (without it they are refused).

    ``mode``, ``model`` and ``config_options`` (id → value; booleans for boolean options)
    override the profile's ``session:`` settings for this run; a value the agent does not
    offer fails the run (``config_error``) with what it offers. ``resume`` continues that
    earlier session of the agent (``session/resume``, else ``session/load``; an agent with
    neither fails the run); ``fork=True`` continues it in a copy (``session/fork``, unstable
    in ACP: needs ``unstable=True`` or the profile's ``unstable: true``).
    ``isolation="worktree"`` (default: the profile's) runs it in its own git worktree;
    ``worktree`` instead goes on in the worktree an earlier turn of the session kept (a
    follow-up of a worktree run does), its changes measured from where this run begins.
    The agent runs in the profile's OS sandbox (``sandbox:``; ``auto`` by default).
    ``task_id`` names the run (default: a fresh ``sub_…`` id).

    ``follow_ups`` keeps the session for further turns when the profile's ``timeouts.idle``
    is above 0 (the run layer's supervisor uses it to serve ``acp-bridge send`` on the live
    agent): after each sound turn it gets the turn's envelope and may hand over the next
    turn, a run of its own (see ``acp_turns.py``). The envelope returned is then the last
    turn's. The caller records each turn itself: a run reporter records the first turn's id.
    """
    runs: list[AcpRun] = []

    async def body(ctx: RunContext) -> SubtaskResult:
        resolved = ctx.config.profiles.get(agent)
        profile = resolved.runnable()
        origin = resolved.set_at(("command",))
        if fork and resume is None:
            raise ConfigError("fork needs resume: the session to fork")
        run = AcpRun(
            ctx,
            profile,
            task,
            cwd=cwd,
            output_schema=output_schema,
            timeout=resolve_timeout(timeout, profile.timeouts.run),
            sink=EventSink(on_event, observe_profile, task_id=ctx.task_id, started=ctx.started),
            cancel=cancel,
            permission_hook=permission_hook,
            elicitation_hook=elicitation_hook,
            choices=SessionChoices(mode, model, dict(config_options or {})),
            resume=resume,
            fork=fork,
            unstable=unstable or profile.unstable,
            isolation=isolation or profile.isolation,
            reopen=Path(worktree) if worktree is not None else None,
            abort=abort,
            origin=f"set at {origin}" if origin else "",
            follow_ups=follow_ups,
        )
        runs.append(run)
        return await run.execute()

    result = await run_enveloped(
        "acp_spawn", body, config=config, meta=Meta(agent=agent), task_id=task_id, task=task,
        cwd=cwd, cancel=cancel,
    )  # fmt: skip
    if runs and runs[0].turn.task_id != result.task_id:  # it ended in a follow-up turn
        result = runs[0].turn.label(result, result.meta.depth)
    return result


acp_spawn_sync = synchronous(acp_spawn)
