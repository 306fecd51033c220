"""The workspace tools a model loop may call: ``bash``, ``read_file`` and ``write_file``.

The file tools go through the same confined file operations as an ACP agent's ``fs/*``
requests; ``bash`` is the ``bash`` entry (with ``run_in_subtask``, a subtask that answers
with its SubtaskResult envelope as JSON). A ``spawn`` offers only these (:func:`workspace_tools`);
a host's registry adds the subtask entries as tools (:mod:`.builtin_tools`).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from acp_bridge._entries.options import BashOptions, arguments_model
from acp_bridge._loop.toolset import Tool, ToolSet
from acp_bridge._os.fs.files import read_text, write_text
from acp_bridge._os.stoppable import StopToken, in_thread
from acp_bridge._records.numbers import NumbersNotBooleans
from acp_bridge.envelope import SubtaskResult

MAX_READ_BYTES = 256 * 1024
"""Most bytes ``read_file`` returns in one call (a model's context is the limit, not disk)."""
MAX_WRITE_BYTES = 16 * 1024 * 1024
DEFAULT_READ_LINES = 2000  # a read without a limit: long files come in windows


class ToolArgs(NumbersNotBooleans):  # a boolean is never a number
    model_config = ConfigDict(extra="forbid")


BashArgs: type[BaseModel] = arguments_model(
    "BashArgs",
    BashOptions,
    "tool",
    {
        "command": (str, Field(description="the command line, run with bash -c")),
        "run_in_subtask": (
            bool,
            Field(
                False,
                description="true: run it as an isolated subtask and get a SubtaskResult "
                "envelope (output_schema subtask.bash.result.v1; the answer is in "
                "output.stdout); false: a plain call returning {exit_code, stdout, stderr, …}",
            ),
        ),
    },
    ToolArgs,
)


class ReadFileArgs(ToolArgs):
    path: str = Field(description="file path, relative to the workspace")
    offset: int | None = Field(None, ge=1, description="first line to read (1-based)")
    limit: int | None = Field(None, ge=1, description="most lines to read")


class WriteFileArgs(ToolArgs):
    path: str = Field(description="file path, relative to the workspace; parents are created")
    content: str = Field(description="the whole new content of the file")


def entry_options(args: BaseModel, tools: ToolSet, *own: str) -> tuple[list[Any], dict[str, Any]]:
    """A tool call's ``own`` arguments (in order) and its entry options, its ``cwd`` inside
    the workspace (relative to it; the workspace itself by default)."""
    fields = args.model_dump(exclude_none=True)
    values = [fields.pop(name) for name in own]
    fields["cwd"] = tools.inside(fields["cwd"]) if fields.get("cwd") else tools.cwd
    return values, fields


async def _bash_tool(args: BaseModel, tools: ToolSet) -> str:
    from acp_bridge._entries.bash import CommandResult, bash

    (line, in_subtask), options = entry_options(args, tools, "command", "run_in_subtask")
    command = str(line)
    if in_subtask:
        # Typed here: with ``**options`` a type checker cannot tell the overloads apart.
        result: SubtaskResult = await bash(
            command, on_event=tools.on_event, config=tools.config, **options
        )
        return result.to_json()
    plain: CommandResult = await bash(
        command, run_in_subtask=False, on_event=tools.on_event, config=tools.config, **options
    )
    return json.dumps(plain.to_tool_output(), ensure_ascii=False)


async def _read_file_tool(args: ReadFileArgs, tools: ToolSet) -> str:
    # One line more than asked: whether the file goes on decides the "cut" marker.
    wanted = args.limit or DEFAULT_READ_LINES
    offset = args.offset or 1
    path = str(tools.cwd / args.path)
    try:
        stop = StopToken()  # the loop's deadline or cancel stops the read as it goes
        content = await in_thread(
            lambda: read_text(
                tools.roots,
                path,
                line=offset,
                limit=wanted + 1,
                max_bytes=MAX_READ_BYTES,
                stop=stop,
            ),
            stop,
        )
    except FileNotFoundError:
        return f"error: no such file: {args.path}"
    lines = content.splitlines(keepends=True)
    if len(lines) <= wanted:
        return "".join(lines)
    following = offset + wanted
    return "".join(lines[:wanted]) + (
        f"[... cut at line {following}: read more with offset={following}]\n"
    )


async def _write_file_tool(args: WriteFileArgs, tools: ToolSet) -> str:
    path, data = str(tools.cwd / args.path), args.content.encode()
    try:
        await anyio.to_thread.run_sync(
            lambda: write_text(tools.roots, path, data, max_bytes=MAX_WRITE_BYTES)
        )
    except FileNotFoundError:
        return f"error: cannot create {args.path}: a parent is not a directory"
    return f"wrote {len(args.content.encode())} bytes to {args.path}"


def workspace_tools() -> list[Tool]:
    """``bash``, ``read_file`` and ``write_file``."""
    return [
        Tool(
            "bash",
            "Run one shell command (bash -c) in the workspace, in its own process group, with "
            "a time limit; stdout and stderr are kept head and tail. Set run_in_subtask=true "
            "to run it as an isolated subtask that returns a SubtaskResult envelope.",
            BashArgs,
            _bash_tool,
            kind="execute",
        ),
        Tool(
            "read_file",
            "Read a text file of the workspace (optionally a window of lines).",
            ReadFileArgs,
            _read_file_tool,
            kind="read",
        ),
        Tool(
            "write_file",
            "Create or replace a text file of the workspace with the given content.",
            WriteFileArgs,
            _write_file_tool,
            kind="edit",
        ),
    ]
