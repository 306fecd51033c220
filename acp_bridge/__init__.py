"""acp-bridge: hand a subtask to an isolated worker, get back one SubtaskResult envelope.

The public API is what ``__all__`` lists; every module whose name starts with ``_`` is
private. Names are loaded on first use, so ``import acp_bridge`` is cheap and the bundled
demo agent (a submodule) starts without loading pydantic. No submodule is named like an
exported function, so ``acp_bridge.bash`` is always the function, whatever was imported
before (private packages may: ``acp_bridge._entries.bash`` holds ``bash``).

Every run of every entry is recorded in the run store (docs/explanation/runs.md): the entry
functions exported here install the store's reporter when first looked up (``runs.record: false`` in
the config turns it off). Detached runs: :func:`start_run` returns a :class:`RunHandle`.

The package is layered (each layer imports only those below it): the list is
``pyproject.toml``'s import-linter contract, drawn in ``docs/explanation/architecture.md``.
"""

from __future__ import annotations

import importlib

from acp_bridge._version import __version__

# Not typing.TYPE_CHECKING: importing typing costs the demo agent (a submodule, so this file
# runs first) ~12 ms of start-up. Type checkers treat this name the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from acp_bridge._acp.services.elicitation import (
        ElicitationAnswer,
        ElicitationHook,
        ElicitationQuestion,
    )
    from acp_bridge._acp.services.permissions import PermissionHook, PermissionQuestion
    from acp_bridge._acp.wire.schema import PermissionOption
    from acp_bridge._batch.batch_run import batch, batch_sync
    from acp_bridge._batch.executor import Executor, LocalExecutor
    from acp_bridge._batch.ray.ray_executor import RayExecutor
    from acp_bridge._batch.tasks import BatchTask, Workspace
    from acp_bridge._compare.compare_options import CompareOptions
    from acp_bridge._compare.compare_result import AttemptResult, CompareResult
    from acp_bridge._compare.comparison import compare, compare_sync
    from acp_bridge._compare.verifier import VerifierResult
    from acp_bridge._entries.acp_spawn.entry import acp_spawn, acp_spawn_sync
    from acp_bridge._entries.bash import CommandResult, bash, bash_sync
    from acp_bridge._entries.local_loop.ask import ask, ask_sync
    from acp_bridge._entries.local_loop.builtin_tools import ToolRegistry
    from acp_bridge._entries.local_loop.spawn import spawn, spawn_sync
    from acp_bridge._entries.options import AcpSpawnOptions, AskOptions, BashOptions, SpawnOptions
    from acp_bridge._entries.request import EntryRequest, run_entry
    from acp_bridge._loop.toolset import Selection, Tool, ToolSet
    from acp_bridge._output_schema.structured_output import SchemaRegistry
    from acp_bridge._runs.caller.handle import RunEvent, RunHandle, list_runs, open_run
    from acp_bridge._runs.caller.start import start_run, start_run_sync
    from acp_bridge._runs.run_options import RunOptions
    from acp_bridge._runs.store.run_records import RunRecord, RunStatus
    from acp_bridge.config import AgentProfile, Config, LoadedConfig, ToolKind, load_config
    from acp_bridge.envelope import (
        ElicitationRecord,
        Entry,
        Meta,
        OutputKind,
        PermissionRecord,
        RefusalRecord,
        Status,
        SubtaskResult,
        TerminalRecord,
        ToolCallRecord,
    )
    from acp_bridge.errors import (
        AgentError,
        AgentExitedError,
        AgentRequestError,
        AuthRequiredError,
        BridgeError,
        ConfigError,
        DepthLimitError,
        DirtyWorkingTree,
        ErrorCode,
        ExecutorError,
        LimitExceeded,
        ModelError,
        NodeLost,
        NotOffered,
        OutputSchemaError,
        Problem,
        ProfileError,
        ProtocolError,
        RunCancelled,
        RunStoreError,
        RunTimeout,
        SandboxViolation,
        SourceLocation,
        SpawnError,
        StateDirError,
        TurnLimitError,
        UnknownProfileError,
    )
    from acp_bridge.events import Event, EventHandler, EventKind, ObserveProfile

_MODULES: dict[str, tuple[str, ...]] = {
    "acp_bridge._acp.wire.schema": ("PermissionOption",),
    "acp_bridge._acp.services.elicitation": (
        "ElicitationAnswer", "ElicitationHook", "ElicitationQuestion",
    ),
    "acp_bridge._acp.services.permissions": ("PermissionHook", "PermissionQuestion"),
    "acp_bridge._batch.executor": ("Executor", "LocalExecutor"),
    "acp_bridge._batch.ray.ray_executor": ("RayExecutor",),
    "acp_bridge._batch.batch_run": ("batch", "batch_sync"),
    "acp_bridge._batch.tasks": ("BatchTask", "Workspace"),
    "acp_bridge._compare.comparison": ("compare", "compare_sync"),
    "acp_bridge._compare.compare_options": ("CompareOptions",),
    "acp_bridge._compare.compare_result": ("AttemptResult", "CompareResult"),
    "acp_bridge._compare.verifier": ("VerifierResult",),
    "acp_bridge._entries.acp_spawn.entry": ("acp_spawn", "acp_spawn_sync"),
    "acp_bridge._entries.local_loop.ask": ("ask", "ask_sync"),
    "acp_bridge._entries.local_loop.spawn": ("spawn", "spawn_sync"),
    "acp_bridge._entries.bash": ("CommandResult", "bash", "bash_sync"),
    "acp_bridge._entries.request": ("EntryRequest", "run_entry"),
    "acp_bridge._entries.options": ("AcpSpawnOptions", "AskOptions", "BashOptions", "SpawnOptions"),
    "acp_bridge._entries.local_loop.builtin_tools": ("ToolRegistry",),
    "acp_bridge._loop.toolset": ("Selection", "Tool", "ToolSet"),
    "acp_bridge._output_schema.structured_output": ("SchemaRegistry",),
    "acp_bridge._runs.caller.handle": ("RunEvent", "RunHandle", "list_runs", "open_run"),
    "acp_bridge._runs.store.run_records": ("RunRecord", "RunStatus"),
    "acp_bridge._runs.run_options": ("RunOptions",),
    "acp_bridge._runs.caller.start": ("start_run", "start_run_sync"),
    "acp_bridge.config": ("AgentProfile", "Config", "LoadedConfig", "ToolKind", "load_config"),
    "acp_bridge.envelope": (
        "ElicitationRecord", "Entry", "Meta", "OutputKind", "PermissionRecord", "RefusalRecord",
        "Status", "SubtaskResult", "TerminalRecord", "ToolCallRecord",
    ),
    "acp_bridge.errors": (
        "AgentError", "AgentExitedError", "AgentRequestError", "AuthRequiredError", "BridgeError",
        "ConfigError", "DepthLimitError", "DirtyWorkingTree", "ErrorCode", "ExecutorError",
        "LimitExceeded", "ModelError", "NodeLost", "NotOffered", "OutputSchemaError", "Problem",
        "ProfileError", "ProtocolError", "RunCancelled", "RunStoreError", "RunTimeout",
        "SandboxViolation", "SourceLocation", "SpawnError", "StateDirError", "TurnLimitError",
        "UnknownProfileError",
    ),
    "acp_bridge.events": ("Event", "EventHandler", "EventKind", "ObserveProfile"),
}  # fmt: skip
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
# Modules whose exports run entries: looking one up installs the run store's reporter first.
_RECORDED = frozenset(
    {
        "acp_bridge._batch.batch_run",
        "acp_bridge._compare.comparison",
        "acp_bridge._entries.acp_spawn.entry",
        "acp_bridge._entries.local_loop.ask",
        "acp_bridge._entries.local_loop.spawn",
        "acp_bridge._entries.bash",
        "acp_bridge._entries.request",
    }
)

__all__ = [
    "AcpSpawnOptions",
    "AgentError",
    "AgentExitedError",
    "AgentProfile",
    "AgentRequestError",
    "AskOptions",
    "AttemptResult",
    "AuthRequiredError",
    "BashOptions",
    "BatchTask",
    "BridgeError",
    "CommandResult",
    "CompareOptions",
    "CompareResult",
    "Config",
    "ConfigError",
    "DepthLimitError",
    "DirtyWorkingTree",
    "ElicitationAnswer",
    "ElicitationHook",
    "ElicitationQuestion",
    "ElicitationRecord",
    "Entry",
    "EntryRequest",
    "ErrorCode",
    "Event",
    "EventHandler",
    "EventKind",
    "Executor",
    "ExecutorError",
    "LimitExceeded",
    "LoadedConfig",
    "LocalExecutor",
    "Meta",
    "ModelError",
    "NodeLost",
    "NotOffered",
    "ObserveProfile",
    "OutputKind",
    "OutputSchemaError",
    "PermissionHook",
    "PermissionOption",
    "PermissionQuestion",
    "PermissionRecord",
    "Problem",
    "ProfileError",
    "ProtocolError",
    "RayExecutor",
    "RefusalRecord",
    "RunCancelled",
    "RunEvent",
    "RunHandle",
    "RunOptions",
    "RunRecord",
    "RunStatus",
    "RunStoreError",
    "RunTimeout",
    "SandboxViolation",
    "SchemaRegistry",
    "Selection",
    "SourceLocation",
    "SpawnError",
    "SpawnOptions",
    "StateDirError",
    "Status",
    "SubtaskResult",
    "TerminalRecord",
    "Tool",
    "ToolCallRecord",
    "ToolKind",
    "ToolRegistry",
    "ToolSet",
    "TurnLimitError",
    "UnknownProfileError",
    "VerifierResult",
    "Workspace",
    "__version__",
    "acp_spawn",
    "acp_spawn_sync",
    "ask",
    "ask_sync",
    "bash",
    "bash_sync",
    "batch",
    "batch_sync",
    "compare",
    "compare_sync",
    "list_runs",
    "load_config",
    "open_run",
    "run_entry",
    "spawn",
    "spawn_sync",
    "start_run",
    "start_run_sync",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'acp_bridge' has no attribute {name!r}")
    if module in _RECORDED:
        importlib.import_module("acp_bridge._runs.foreground").install()
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
