"""The entries' options as command-line flags, made from each entry's options model.

Every option an entry's model offers on the command line (:class:`Offer` ``cli``) becomes a
flag here — its name, type check, choices and help from the model — and the parsed flags
become that entry's :class:`~acp_bridge.EntryRequest`, checked by the same model. A new
option appears in ``--help`` and in ``docs/reference/cli.md`` without a line written here.
"""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from acp_bridge._entries.entry_table import model_of
from acp_bridge._entries.option_errors import options_error
from acp_bridge._entries.options import Option, offered
from acp_bridge._entries.request import EntryRequest
from acp_bridge.cli._argtypes import count, key_value, number
from acp_bridge.envelope import Entry

GROUPS = {
    "session": (
        "session",
        "Per-call settings replace the profile's; a value the agent does not offer is an "
        "error that lists what it offers.",
    )
}
"""The ``--help`` groups options may be listed in (:attr:`Offer.group`)."""


def add_options(
    parser: argparse.ArgumentParser, entry: str | type, without: Collection[str] = ()
) -> None:
    """Add a flag for each option of ``entry`` offered on the command line (but those
    ``without``)."""
    groups: dict[str, Any] = {}
    for option in offered(model_of(entry), "cli", without):
        target: Any = parser
        if option.offer.group:
            if option.offer.group not in groups:
                groups[option.offer.group] = parser.add_argument_group(*GROUPS[option.offer.group])
            target = groups[option.offer.group]
        target.add_argument(option.offer.cli, dest=option.name, **_argument(option))


def _argument(option: Option) -> dict[str, Any]:
    """What argparse needs for ``option``: its type check (or action) and help."""
    kind = _plain_type(option)
    spec: dict[str, Any] = {"help": option.description}
    if option.offer.metavar:
        spec["metavar"] = option.offer.metavar
    if kind is bool:
        spec = {"help": option.description, "action": "store_true"}
    elif typing.get_origin(kind) is Literal:
        spec["choices"] = list(typing.get_args(kind))  # with a metavar: listed in the help
    elif typing.get_origin(kind) is dict:
        spec.update(type=key_value, action="append", help=f"{option.description} (repeatable)")
    elif kind is float:
        unit = " of seconds" if option.offer.metavar == "S" else ""
        spec["type"] = number(_bound(option, "le"), f"a positive number{unit}")
    elif kind is int:
        spec["type"] = count(int(_bound(option, "ge")), int(_bound(option, "le")))
    elif Path in _members(kind):
        spec["type"] = Path
    return spec


def _members(kind: Any) -> tuple[Any, ...]:
    """The members of a union (``X | None`` is a ``typing.Union`` when X is a ``Literal``)."""
    union = typing.get_origin(kind) in (typing.Union, types.UnionType)
    return typing.get_args(kind) if union else (kind,)


def _plain_type(option: Option) -> Any:
    """The option's type without its checks and without ``None``: ``float`` for
    ``Annotated[float | None, …]``."""
    kind = typing.get_args(option.annotation)[0]
    members = [member for member in _members(kind) if member is not type(None)]
    if len(members) == 1:
        return members[0]
    return typing.Union[tuple(members)]  # noqa: UP007 - built from a tuple at run time


def _bound(option: Option, name: str) -> float:
    for extra in option.annotation.__metadata__:
        for item in getattr(extra, "metadata", ()):
            if hasattr(item, name):
                return float(getattr(item, name))
    raise LookupError(f"{option.name} has no {name} bound")


RUN_LAYER = (
    "detached runs",
    "--detach prints {task_id, status} and returns at once; a supervisor process runs it (see: "
    "acp-bridge wait, ps, logs, stop, send). The other options here make a run go through "
    "the run layer: without --detach it is followed until it ends.",
)


def add_run_layer_options(
    parser: argparse.ArgumentParser,
    *,
    without: Collection[str] = (),
    detach: str = "start the run in the background",
) -> None:
    """``--detach`` and the flags of what the run layer adds to a run (its options model,
    :class:`~acp_bridge.RunOptions`), but those ``without``. The parsed namespace names
    them (``run_layer_options``), for :func:`~.detached_runs.wants_run_layer`."""
    from acp_bridge._runs.run_options import RunOptions  # the run layer's own declaration

    group = parser.add_argument_group(*RUN_LAYER)
    group.add_argument("--detach", action="store_true", help=detach)
    flags = offered(RunOptions, "cli", without)
    for option in flags:
        group.add_argument(option.offer.cli, dest=option.name, **_argument(option))
    parser.set_defaults(run_layer_options=tuple(option.name for option in flags))


def run_options_from(args: argparse.Namespace) -> Any:
    """The :class:`~acp_bridge.RunOptions` the parsed run-layer flags give."""
    from acp_bridge._runs.run_options import RunOptions

    return RunOptions(**options_from(args, RunOptions))


def add_compare_options(parser: argparse.ArgumentParser) -> None:
    """``compare``'s flags: its own, and ``acp_spawn``'s that every attempt runs with."""
    # Imported here: the compare layer (and its options adapter) is no part of the other
    # commands' start-up (issue 24: a cold `run` paid ~7 ms for it).
    from acp_bridge._compare.compare_options import NOT_FOR_COMPARE, CompareOptions

    add_options(parser, CompareOptions, NOT_FOR_COMPARE)


def options_from(
    args: argparse.Namespace, entry: str | type, without: Collection[str] = ()
) -> dict[str, Any]:
    """The options the parsed flags of ``entry`` give (those left unset left out)."""
    options: dict[str, Any] = {}
    for option in offered(model_of(entry), "cli", without):
        value = getattr(args, option.name, None)
        if isinstance(value, list) and typing.get_origin(_plain_type(option)) is dict:
            value = dict(value)  # --set KEY=VALUE, repeated
        elif isinstance(value, Path):
            value = str(value)
        if value is not None and value is not False:
            options[option.name] = value
    return options


def flag_names(entry: str | type) -> dict[str, str]:
    """Option name → its flag, to name the flag in an error."""
    return {option.name: option.offer.cli for option in offered(model_of(entry), "cli")}


def request_from(args: argparse.Namespace, entry: Entry, task: str, **top: Any) -> EntryRequest:
    """The request the parsed flags of ``entry`` make (``top``: its agent or tools). Raises
    :class:`~acp_bridge.ConfigError` naming the flag of each bad option."""
    options = options_from(args, entry)
    try:
        return EntryRequest(entry=entry, task=task, **top, **options)
    except ValidationError as exc:
        raise options_error(exc, renamed=flag_names(entry)) from None
