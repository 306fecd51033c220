"""The ``spawn`` entry path: a local inner model loop limited to named tools
(docs/explanation/envelope.md, entry paths).

``spawn(task, tools)`` runs one level deeper (the shared depth limit applies) a model loop
whose tool set holds only ``tools``, taken from the parent registry: unknown names are
ignored and reported in ``meta``, ``spawn`` and ``acp_spawn`` are never offered inside, and
no tool left is a failure. The model comes from the config's ``models``.

pydantic-ai is imported only when a spawn actually runs (over a second of import), so
importing this module, ``acp_spawn`` and ``bash`` stay fast.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import cast

import anyio
from typing_extensions import Unpack

from acp_bridge._entries.entry_table import ENTRY_TABLE, checked_or_error
from acp_bridge._entries.enveloped import RunContext, resolve_timeout, run_enveloped
from acp_bridge._entries.local_loop.workspace_tools import workspace_tools
from acp_bridge._entries.options import SpawnOptions
from acp_bridge._entries.sync import synchronous
from acp_bridge._loop.toolset import ToolSet
from acp_bridge._output_schema.structured_output import SchemaRegistry
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import SubtaskResult, failed
from acp_bridge.errors import ErrorCode
from acp_bridge.events import EventHandler, EventSink


async def spawn(
    task: str,
    tools: Iterable[str],
    *,
    on_event: EventHandler | None = None,
    config: LoadedConfig | None = None,
    cancel: anyio.Event | None = None,
    abort: anyio.Event | None = None,
    registry: ToolSet | None = None,
    **options: Unpack[SpawnOptions],
) -> SubtaskResult:
    """Run ``task`` in a local inner loop that may use only ``tools``; never raises.

    ``options`` are :class:`~acp_bridge.SpawnOptions`. ``registry`` is the parent registry
    the tools come from (default: the built-in tools of ``config`` in ``cwd``); its config
    is used when ``config`` is not given.
    ``timeout`` defaults to ``tools.spawn.timeout``; setting ``cancel`` stops the loop with
    ``error_code: cancelled``, keeping what it did so far. ``task_id`` names the run
    (default: a fresh ``sub_…`` id).
    """
    wanted = list(tools)
    config = config if config is not None else (registry.config if registry else None)
    given, invalid = checked_or_error("spawn", options)
    checked = cast(SpawnOptions, given)
    cwd, model = checked.get("cwd"), checked.get("model")

    async def body(ctx: RunContext) -> SubtaskResult:
        if invalid is not None:
            raise invalid
        # Here, not at module top: this is the import that costs over a second.
        from acp_bridge._loop.model_loop import (
            WORKER_INSTRUCTIONS,
            LoopTask,
            run_selected,
            selection_meta,
        )
        from acp_bridge._loop.models import choose_model

        loaded = ctx.config
        settings = loaded.config.tools.spawn
        limit = resolve_timeout(
            checked.get("timeout"), ENTRY_TABLE["spawn"].default_timeout(loaded, None)
        )
        parent = registry or _workspace(loaded, cwd, on_event)
        selection = parent.select(wanted, nesting=False)
        choice = choose_model(loaded.config.models, model)
        if not selection.registry.names():
            error = (
                f"spawn needs at least one usable tool; asked for: {', '.join(wanted) or 'none'}"
            )
            meta = selection_meta(selection, choice)
            return failed(error, ErrorCode.CONFIG_ERROR, meta=meta, task_id=ctx.task_id)
        job = LoopTask(
            prompt=task,
            max_requests=settings.max_requests,
            timeout=limit,
            output_schema=checked.get("output_schema") or "",
            schemas=SchemaRegistry(loaded.config.schemas),
            repair_turns=settings.repair_turns,
            cancel=cancel,
            abort=abort,
        )
        sink = EventSink(
            on_event or parent.on_event,
            checked.get("observe_profile"),
            task_id=ctx.task_id,
            started=ctx.started,
        )
        return await run_selected(
            selection, choice, job, instructions=WORKER_INSTRUCTIONS, sink=sink, task_id=ctx.task_id
        )

    return await run_enveloped(
        "spawn", body, config=config, task_id=checked.get("task_id"), task=task, cwd=cwd,
        cancel=cancel,
    )  # fmt: skip


spawn_sync = synchronous(spawn)


def _workspace(
    config: LoadedConfig, cwd: str | Path | None, on_event: EventHandler | None
) -> ToolSet:
    """The tools a spawn called without a parent registry may use: the workspace tools
    (the subtask entries are never offered inside a subtask)."""
    tools = ToolSet(config, cwd=cwd, on_event=on_event)
    for tool in workspace_tools():
        tools.add(tool)
    return tools
