"""The ``acp_spawn`` entry: hand a task to an external ACP agent, get an envelope back.

The function checks what it is given and runs it through the one wrapper
(:func:`~acp_bridge._entries.enveloped.run_enveloped`: depth, config, the envelope on every
path); the run itself — process, session, turns, wind-down — is :class:`AcpRun`
(``run.py``; once its agent has started, ``session_phases.py``), its envelope
``result.py``, its deadlines ``clock.py``, and the turns a held session takes after the
first ``live_turns.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import anyio
from typing_extensions import Unpack

from acp_bridge._entries.acp_spawn.live_turns import FollowUps
from acp_bridge._entries.acp_spawn.run import AcpRun
from acp_bridge._entries.entry_table import ENTRY_TABLE, checked_or_error
from acp_bridge._entries.enveloped import RunContext, resolve_timeout, run_enveloped
from acp_bridge._entries.options import AcpSpawnOptions
from acp_bridge._entries.sync import synchronous
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import Meta, SubtaskResult
from acp_bridge.events import EventHandler, EventSink

if TYPE_CHECKING:
    # Named in the signature only: the hooks' modules bring the ACP wire schema, which a
    # run imports once its agent is starting (run.py).
    from acp_bridge._acp.services.elicitation import ElicitationHook
    from acp_bridge._acp.services.permissions import PermissionHook

__all__ = ["acp_spawn", "acp_spawn_sync"]


async def acp_spawn(
    agent: str,
    task: str,
    *,
    on_event: EventHandler | None = None,
    config: LoadedConfig | None = None,
    cancel: anyio.Event | None = None,
    abort: anyio.Event | None = None,
    permission_hook: PermissionHook | None = None,
    elicitation_hook: ElicitationHook | None = None,
    **options: Unpack[AcpSpawnOptions],
) -> SubtaskResult:
    """Run ``task`` on the ACP agent of profile ``agent``; always returns an envelope.

    ``cwd`` is the session's working directory (default: the profile's, else the current
    directory). ``timeout`` overrides the profile's run timeout (the whole run: it ends by
    ``timeout`` + END_GRACE). ``cancel`` ends the run gracefully (``error_code: cancelled``);
    ``abort`` skips the graces (SIGKILL at once); ``permission_hook`` answers ``ask`` rules;
    ``elicitation_hook`` the agent's questions to the user (without it they are refused).

    ``options`` are :class:`~acp_bridge.AcpSpawnOptions` (each described there). Among them:
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
    """
    return await acp_spawn_with_follow_ups(
        agent, task, follow_ups=None, on_event=on_event, config=config, cancel=cancel,
        abort=abort, permission_hook=permission_hook, elicitation_hook=elicitation_hook,
        **options,
    )  # fmt: skip


async def acp_spawn_with_follow_ups(
    agent: str,
    task: str,
    *,
    follow_ups: FollowUps | None,
    on_event: EventHandler | None = None,
    config: LoadedConfig | None = None,
    cancel: anyio.Event | None = None,
    abort: anyio.Event | None = None,
    permission_hook: PermissionHook | None = None,
    elicitation_hook: ElicitationHook | None = None,
    **options: Unpack[AcpSpawnOptions],
) -> SubtaskResult:
    """:func:`acp_spawn`, and ``follow_ups``: the run layer's hook for further turns in the
    session, kept out of the public signature (its types are the run layer's, not the API's).

    ``follow_ups`` keeps the session for further turns when the profile's ``timeouts.idle``
    is above 0 (the run layer's supervisor uses it to serve ``acp-bridge send`` on the live
    agent): after each sound turn it gets the turn's envelope and may hand over the next
    turn, a run of its own (see ``live_turns.py``). The envelope returned is then the last
    turn's. The caller records each turn itself: a run reporter records the first turn's id.
    """
    given, invalid = checked_or_error("acp_spawn", options)
    checked = cast(AcpSpawnOptions, given)
    runs: list[AcpRun] = []

    async def body(ctx: RunContext) -> SubtaskResult:
        if invalid is not None:
            raise invalid
        resolved = ctx.config.profiles.get(agent)
        profile = resolved.runnable()
        origin = resolved.set_at(("command",))
        run = AcpRun(
            ctx,
            profile,
            task,
            checked,
            timeout=resolve_timeout(
                checked.get("timeout"), ENTRY_TABLE["acp_spawn"].default_timeout(ctx.config, agent)
            ),
            sink=EventSink(
                on_event, checked.get("observe_profile"), task_id=ctx.task_id, started=ctx.started
            ),
            cancel=cancel,
            abort=abort,
            permission_hook=permission_hook,
            elicitation_hook=elicitation_hook,
            origin=f"set at {origin}" if origin else "",
            follow_ups=follow_ups,
        )
        runs.append(run)
        return await run.execute()

    result = await run_enveloped(
        "acp_spawn", body, config=config, meta=Meta(agent=agent), task_id=checked.get("task_id"),
        task=task, cwd=checked.get("cwd"), cancel=cancel,
    )  # fmt: skip
    if runs and runs[0].turn.task_id != result.task_id:  # it ended in a follow-up turn
        result = runs[0].turn.label(result, result.meta.depth)
    return result


acp_spawn_sync = synchronous(acp_spawn)
