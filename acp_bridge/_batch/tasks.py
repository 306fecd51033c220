"""One task of a batch: an entry request, the caller's key for it, and where it runs.

The request is whatever the entries table takes (:class:`~acp_bridge.EntryRequest`): this
module never looks at its fields, so a new entry option needs nothing here. As JSON (one
line of ``acp-bridge batch TASKS.jsonl``) a task is the request's own fields plus two of
the batch's: ``key`` and ``workspace``::

    {"key": "t1", "entry": "acp_spawn", "agent": "demo", "task": "Reply with exactly OK"}
    {"key": "t2", "entry": "bash", "task": "ls", "workspace": {"files": {"a.txt": "hi"}}}

A task without a key is known by its position (``"0"``, ``"1"``, …); keys must be unique,
since a resumed batch finds the tasks still to run by key.
"""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from acp_bridge._entries.request import EntryRequest
from acp_bridge.errors import ConfigError

MAX_KEY_CHARS = 256
TASKS_FILE = "a tasks file"
MAX_TASKS_FILE_BYTES = 256 << 20
"""The largest tasks file read (every task is held in memory until the batch ends)."""
MAX_TASKS_LINE_BYTES = 64 << 20
"""The longest line of a tasks file: a task of the longest text (16 MiB) with its JSON
escapes and inline workspace files."""
BATCH_FIELDS = ("key", "workspace")
"""The fields of a task that are the batch's, not the request's."""


class Workspace(BaseModel):
    """Where a task runs on its node: always a directory of its own, made there.

    Empty: a fresh empty directory. ``files``: written into it first. ``upload``: a
    directory of the submitting machine, copied there (shipped as a tarball of at most the
    executor's ``max_upload_bytes``). ``git``: a fresh git worktree (detached at ``ref``) of a
    repository the node can reach by that path, or a clone when it is a URL. The task's
    changes come back in ``meta.files_changed`` and ``meta.diff``; the directory is removed
    afterwards unless ``keep``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    files: dict[str, str] = Field(default_factory=dict, description="name → text, written first")
    upload: str | None = Field(None, description="a directory here, copied to the node")
    git: str | None = Field(None, description="a repository the node reaches: path or URL")
    ref: str = Field("HEAD", description="with git: the commit to check out")
    keep: bool = Field(False, description="keep the directory on the node after the run")

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.upload is not None and self.git is not None:
            raise ValueError("upload and git both say what the workspace starts as: give one")
        if self.ref != "HEAD" and self.git is None:
            raise ValueError("ref is for a git workspace")
        for name in self.files:
            parts = Path(name).parts
            if not name or Path(name).is_absolute() or ".." in parts:
                raise ValueError(f"files: {name!r} must be a relative path inside the workspace")
        return self


Inspect = Callable[[Path], Any]
"""Called on the node after the run, in the task's workspace (before it is removed); what it
returns comes back beside the envelope. Must be picklable for a remote executor (a module's
function, or a ``functools.partial`` of one)."""


@dataclass(frozen=True)
class BatchTask:
    """One task: ``request`` runs in ``workspace``, else in the request's own ``cwd``, else in
    a fresh empty workspace."""

    request: EntryRequest
    key: str | None = None
    workspace: Workspace | None = None
    inspect: Inspect | None = None

    def __post_init__(self) -> None:
        if self.key is not None:
            _check_key(self.key)
        if self.workspace is not None and self.request.cwd is not None:
            raise ConfigError("cwd and workspace both say where the task runs: give one")


TaskLike = BatchTask | EntryRequest | Mapping[str, Any]
"""What :func:`~acp_bridge.batch` takes for a task: a task, a bare request, or JSON data."""


def _check_key(key: object) -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
        raise ConfigError(f"key must be a non-empty string of at most {MAX_KEY_CHARS} characters")
    return key


def task_from_json(data: Mapping[str, Any]) -> BatchTask:
    """A task from JSON data: the request's fields plus ``key`` and ``workspace``."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"a task must be a JSON object, got {type(data).__name__}")
    fields = dict(data)
    key = fields.pop("key", None)
    workspace = fields.pop("workspace", None)
    try:
        request = EntryRequest.model_validate(fields)
        space = None if workspace is None else Workspace.model_validate(workspace)
    except ValidationError as exc:
        raise ConfigError(_validation_message(exc)) from None
    return BatchTask(request, None if key is None else _check_key(key), space)


def _validation_message(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        problems.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "; ".join(problems)


def as_task(item: TaskLike) -> BatchTask:
    if isinstance(item, BatchTask):
        return item
    if isinstance(item, EntryRequest):
        return BatchTask(item)
    return task_from_json(item)


@dataclass(frozen=True)
class Keyed:
    """A task with its place in the batch and its key (its own, else its index)."""

    index: int
    key: str
    task: BatchTask


def keyed(items: Iterable[TaskLike]) -> list[Keyed]:
    """Every task with its index and key; a duplicate key, or a duplicate explicit
    ``task_id`` (two runs under one id: ``show`` would find one), is an error naming both
    places."""
    out: list[Keyed] = []
    seen: dict[str, int] = {}
    task_ids: dict[str, int] = {}
    for index, item in enumerate(items):
        try:
            task = as_task(item)
        except ConfigError as exc:
            raise ConfigError(f"task {index}: {exc}") from None
        key = task.key if task.key is not None else str(index)
        if key in seen:
            raise ConfigError(f"task {index}: key {key!r} is also task {seen[key]}'s")
        seen[key] = index
        task_id = task.request.task_id
        if task_id is not None:
            if task_id in task_ids:
                first = task_ids[task_id]
                raise ConfigError(f"task {index}: task_id {task_id!r} is also task {first}'s")
            task_ids[task_id] = index
        out.append(Keyed(index, key, task))
    return out
