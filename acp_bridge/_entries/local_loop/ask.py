"""``ask``: a host loop at the caller's own level, offered the parent tool registry.

This is the host side of the three entry paths: a model with ``spawn``, ``acp_spawn`` (when
enabled), ``bash`` and the rest, used to run reference prompts against a configured model and
to demo the entry paths end to end. It is not a subtask: it opens no level, so the subtasks it
starts take level 1. Its result has the envelope's shape (``meta.entry`` is ``ask``), with the
envelope of every subtask it opened in ``meta.subtasks``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import anyio
from typing_extensions import Unpack

from acp_bridge._entries.entry_table import ENTRY_TABLE, checked_or_error
from acp_bridge._entries.enveloped import RunContext, resolve_timeout, run_enveloped
from acp_bridge._entries.local_loop.builtin_tools import ToolRegistry
from acp_bridge._entries.options import AskOptions
from acp_bridge._entries.sync import synchronous
from acp_bridge._loop.toolset import ToolSet
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import SubtaskResult
from acp_bridge.events import EventHandler, EventSink


async def ask(
    task: str,
    *,
    tools: Iterable[str] | None = None,
    on_event: EventHandler | None = None,
    config: LoadedConfig | None = None,
    cancel: anyio.Event | None = None,
    abort: anyio.Event | None = None,
    registry: ToolSet | None = None,
    **options: Unpack[AskOptions],
) -> SubtaskResult:
    """Answer ``task`` with a model that may call ``tools`` (default: every enabled tool
    of the registry); never raises. Limits are those of ``tools.spawn``. ``task_id`` names
    the run (default: a fresh ``sub_…`` id)."""
    wanted = None if tools is None else list(tools)
    config = config if config is not None else (registry.config if registry else None)
    given, invalid = checked_or_error("ask", options)
    checked = cast(AskOptions, given)
    cwd = checked.get("cwd")

    async def body(ctx: RunContext) -> SubtaskResult:
        if invalid is not None:
            raise invalid
        from acp_bridge._loop.model_loop import HOST_INSTRUCTIONS, LoopTask, run_selected
        from acp_bridge._loop.models import choose_model

        loaded = ctx.config
        settings = loaded.config.tools.spawn
        limit = resolve_timeout(
            checked.get("timeout"), ENTRY_TABLE["ask"].default_timeout(loaded, None)
        )
        parent: ToolSet = registry or ToolRegistry(loaded, cwd=cwd, on_event=on_event)
        selection = parent.select(parent.names() if wanted is None else wanted)
        choice = choose_model(loaded.config.models, checked.get("model"))
        job = LoopTask(task, settings.max_requests, limit, cancel=cancel, abort=abort)
        sink = EventSink(
            on_event, checked.get("observe_profile"), task_id=ctx.task_id, started=ctx.started
        )
        return await run_selected(
            selection, choice, job, instructions=HOST_INSTRUCTIONS, sink=sink, task_id=ctx.task_id
        )

    return await run_enveloped(
        "ask", body, config=config, nested=False, task_id=checked.get("task_id"), task=task,
        cwd=cwd, cancel=cancel,
    )  # fmt: skip


ask_sync = synchronous(ask)
