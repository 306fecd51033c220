"""One options model per entry: every option's type, default, description, checks and the
rules between options, declared once (docs/explanation/architecture.md, one of each).

Each entry's options are a :class:`~typing_extensions.TypedDict` whose members carry their
pydantic ``Field`` (default, bounds, description) and an :class:`Offer` (which faces offer
them besides the Python API). Everything else derives from these classes:

- the Python API: ``acp_spawn(agent, task, **options: Unpack[AcpSpawnOptions])`` — typed
  keywords, checked by :func:`~.entry_table.check_options` (defaults filled in);
- :class:`~acp_bridge.EntryRequest` (``_entries/request.py``): a run of any entry as data,
  its options checked by the same model;
- the command line (``cli/_run_commands/entry_flags.py`` adds each offered option as a flag), the
  MCP tools (``_mcp/arguments.py``), the model loop's built-in tools
  (``_entries/local_loop/builtin_tools.py``): each a subset of the fields, with the same checks and
  descriptions;
- follow-up turns: what a session is set up with (:func:`~.entry_table.session_settings`);
- the references in ``docs/reference/`` (generated).

Why TypedDicts rather than models: ``**options: Unpack[...]`` is the only way a function's
keyword arguments can come from one declaration that a type checker sees; pydantic checks a
TypedDict like a model (``extra="forbid"``, defaults, bounds).
"""

import typing
from collections.abc import Collection
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    create_model,
    with_config,
)
from typing_extensions import TypedDict

from acp_bridge._os.limits import MAX_BYTES, MAX_SECONDS
from acp_bridge.config._sandbox_section import IsolationMode, KeepWorktree
from acp_bridge.events import ObserveProfile

PATH_MAX = 4095
"""Bytes of the longest path the system takes (Linux: 4096 with the NUL)."""
NAME_MAX = 255
"""Bytes of the longest name in a path."""

OptionValue = str | bool | int | float
"""A session config option's value."""

Face = Literal["cli", "mcp", "tool"]


class Offer(NamedTuple):
    """Where an option is offered besides the Python API (which offers all of them)."""

    cli: str = ""
    """Its command-line flag (``--mode``); empty: not on the command line."""
    metavar: str = ""
    group: str = ""
    """The ``--help`` group it is listed in (``session``), else the command's own options."""
    mcp: bool = False
    """An argument of the MCP tool of its entry (and of ``start``)."""
    tool: bool = False
    """An argument of the model loop's built-in tool of its entry."""
    session: bool = False
    """What an ACP session is set up with: a follow-up inherits it, a held agent serves
    only follow-ups that ask for the same."""

    def offered(self, face: Face) -> bool:
        return bool(self.cli) if face == "cli" else bool(getattr(self, face))


def _path(cwd: str | Path | None) -> str | Path | None:
    # What chdir and stat refuse (ENAMETOOLONG is no "not a directory" to them) is refused
    # here, not an internal error mid-run.
    if cwd is None:
        return cwd
    text = str(cwd)
    if "\0" in text:
        raise ValueError("a path cannot contain a NUL byte")
    names = text.encode("utf-8", "surrogatepass").split(b"/")
    if sum(len(name) + 1 for name in names) > PATH_MAX or max(map(len, names)) > NAME_MAX:
        raise ValueError(
            f"a path longer than {PATH_MAX} bytes, or with a name longer than {NAME_MAX}"
        )
    return cwd


_STRICT = ConfigDict(extra="forbid")


@with_config(_STRICT)
class EntryOptions(TypedDict, total=False):
    """What every entry takes besides its task."""

    cwd: Annotated[
        str | Path | None,
        Field(
            None,
            description="working directory (default: the profile's for acp_spawn, else the "
            "current directory)",
        ),
        AfterValidator(_path),
        Offer(cli="--cwd", metavar="DIR", mcp=True, tool=True, session=True),
    ]
    timeout: Annotated[
        float | None,
        Field(
            None,
            gt=0,
            le=MAX_SECONDS,
            description="seconds the run may take; it ends by that + 5 s whatever the worker "
            "does (default: the profile's or the config's)",
        ),
        Offer(cli="--timeout", metavar="S", mcp=True, tool=True),
    ]
    observe_profile: Annotated[
        ObserveProfile | None,
        Field(
            None,
            description="which live events are reported: default, long_shell (plus command "
            "output; bash's default), web_extract, verbose (every kind, thoughts and stderr)",
        ),
        Offer(cli="--observe", metavar="PROFILE", mcp=True, tool=True, session=True),
    ]
    task_id: Annotated[
        str | None, Field(None, description="the run's id (default: a fresh sub_… id)"), Offer()
    ]


@with_config(_STRICT)
class _AnswerOptions(TypedDict, total=False):
    output_schema: Annotated[
        str | None,
        Field(None, description="contract label: the answer must be JSON under it"),
        Offer(cli="--output-schema", metavar="LABEL", mcp=True, tool=True),
    ]


@with_config(_STRICT)
class AcpSpawnOptions(EntryOptions, _AnswerOptions, total=False):
    """The options of ``acp_spawn`` (an external ACP agent)."""

    mode: Annotated[
        str | None,
        Field(None, description="session mode id to set (e.g. plan)"),
        Offer(cli="--mode", metavar="MODE", group="session", mcp=True, session=True),
    ]
    model: Annotated[
        str | None,
        Field(None, description="the agent's model id to select"),
        Offer(cli="--model", metavar="MODEL", group="session", mcp=True, session=True),
    ]
    system_prompt: Annotated[
        str | None,
        Field(
            None,
            description="instructions added to the agent's own (ACP systemPrompt, append "
            "mode; only where the agent advertises it, else the run fails; default: the "
            "profile's session.system_prompt)",
        ),
        Offer(cli="--system-prompt", metavar="TEXT", group="session", mcp=True, session=True),
    ]
    config_options: Annotated[
        dict[str, OptionValue] | None,
        Field(
            None,
            description="session config option id → value to set (true/false for boolean options)",
        ),
        Offer(cli="--set", metavar="KEY=VALUE", group="session", mcp=True, session=True),
    ]
    resume: Annotated[
        str | None,
        Field(
            None,
            description="continue this earlier session (session/resume, else session/load)",
        ),
        Offer(cli="--resume", metavar="SESSION_ID", group="session", mcp=True),
    ]
    fork: Annotated[
        bool,
        Field(
            False,
            description="continue resume's session in a copy (session/fork; needs unstable)",
        ),
        Offer(cli="--fork", group="session"),
    ]
    unstable: Annotated[
        bool,
        Field(False, description="allow unstable ACP methods (session/fork)"),
        Offer(cli="--unstable", group="session", session=True),
    ]
    isolation: Annotated[
        IsolationMode | None,
        Field(
            None,
            description="worktree: run in a fresh git worktree on branch acp-bridge/<task_id> "
            "(default: the profile's isolation)",
        ),
        Offer(cli="--isolation", mcp=True, session=True),
    ]
    keep_worktree: Annotated[
        KeepWorktree | None,
        Field(
            None,
            description="with isolation worktree: changed | always | never (default: the "
            "profile's keep_worktree)",
        ),
        Offer(),
    ]
    worktree: Annotated[
        str | Path | None,
        Field(
            None,
            description="go on in this worktree an earlier turn of the session kept (a "
            "follow-up of a worktree run does)",
        ),
        AfterValidator(_path),
        Offer(),
    ]


@with_config(_STRICT)
class BashOptions(EntryOptions, total=False):
    """The options of ``bash`` (one shell command)."""

    max_output_bytes: Annotated[
        int | None,
        Field(
            None,
            ge=2,
            le=MAX_BYTES,
            description="bytes kept per stream, head and tail (default: tools.bash's)",
        ),
        Offer(cli="--max-output-bytes", metavar="N", mcp=True),
    ]
    env: Annotated[
        dict[str, str] | None,
        Field(None, description="variables added to the command's constructed environment"),
        Offer(),
    ]


@with_config(_STRICT)
class LoopOptions(EntryOptions, total=False):
    """The options of ``ask`` (a host loop at the caller's level)."""

    model: Annotated[
        str | None,
        Field(None, description="a model name from the config's models (default: its default)"),
        Offer(cli="--model", metavar="M", mcp=True, tool=True),
    ]


@with_config(_STRICT)
class SpawnOptions(LoopOptions, _AnswerOptions, total=False):
    """The options of ``spawn`` (a local model loop limited to named tools)."""


AskOptions = LoopOptions


class Option(NamedTuple):
    """One option as the faces see it."""

    name: str
    annotation: Any
    """Its type (with the checks pydantic runs)."""
    default: Any
    description: str
    offer: Offer


OptionsOf = type
"""An options model declared like these (an entry's: :func:`~.entry_table.model_of`)."""


@cache
def options_of(entry: OptionsOf) -> tuple[Option, ...]:
    """The options of ``entry``, in declaration order."""
    found = []
    for name, hint in typing.get_type_hints(entry, include_extras=True).items():
        extras = getattr(hint, "__metadata__", ())
        if not any(isinstance(item, Offer) for item in extras):
            continue  # no option: a class variable of a record, say
        field = next(item for item in extras if hasattr(item, "description"))
        offer = next(item for item in extras if isinstance(item, Offer))
        found.append(Option(name, hint, field.default, field.description or "", offer))
    return tuple(found)


def offered(entry: OptionsOf, face: Face, without: Collection[str] = ()) -> tuple[Option, ...]:
    """The options of ``entry`` a face offers (a subset: where it offers less), but ``without``."""
    return tuple(o for o in options_of(entry) if o.offer.offered(face) and o.name not in without)


def arguments_model(
    name: str,
    entry: OptionsOf,
    face: Face,
    own: dict[str, Any],
    base: type[BaseModel],
    without: Collection[str] = (),
) -> Any:
    """A pydantic model of a face's arguments for ``entry`` (a tool's input schema): the
    options every entry takes first, then the face's ``own`` fields (the task, the agent…),
    then the entry's other options the face offers (but those ``without``)."""
    given = offered(entry, face, without)
    common = [o for o in given if o.name in EntryOptions.__annotations__]
    rest = [o for o in given if o.name not in EntryOptions.__annotations__]
    fields: dict[str, Any] = {o.name: o.annotation for o in common}
    fields.update(own)
    fields.update({o.name: o.annotation for o in rest})
    return create_model(name, __base__=base, **fields)
