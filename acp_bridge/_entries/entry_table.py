"""The table of entries: for each entry path, its options model and the rules between its
options, where its function lives and what it is called with, its default timeout, and the
faces that offer it besides the Python API and the command line.

Every front end reads this table and nothing else to know the entries: a request checks its
options against the row's model (:mod:`.request`), the command line loads the row's module
before its start-up ends, the MCP face offers a tool and a ``start`` entry for each row
that says so, a batch keeps a deadline of its own from the row's default timeout (the same
rule the entry applies when the call gives none). A new entry is a model in
:mod:`.options`, its function, and a row here.

The entry functions are loaded by module name when they run (``spawn`` brings pydantic-ai,
over a second of import): nothing here imports an entry.

What takes an entry's name rather than its model is here too (checking, storing and
inheriting options); what takes a model is :mod:`.options`.
"""

from __future__ import annotations

import importlib
import typing
from collections.abc import Awaitable, Callable, Mapping
from functools import cache
from typing import Annotated, Any, Literal, Protocol

from pydantic import AfterValidator, TypeAdapter, ValidationError

from acp_bridge._entries.option_errors import options_error
from acp_bridge._entries.options import (
    AcpSpawnOptions,
    AskOptions,
    BashOptions,
    SpawnOptions,
    options_of,
)
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import Entry, SubtaskResult
from acp_bridge.errors import ConfigError


class EntryRequest(Protocol):
    """What a row reads of a request (:class:`~acp_bridge.EntryRequest`)."""

    @property
    def task(self) -> str: ...
    @property
    def agent(self) -> str | None: ...
    @property
    def tools(self) -> list[str] | None: ...
    @property
    def options(self) -> dict[str, Any]: ...


Face = Literal["mcp", "start", "tool"]
"""Where an entry is offered besides the Python API and the command line: an MCP tool of
its own, an entry of the MCP ``start`` tool, a built-in tool of a host's model loop."""

Hooks = dict[str, Any]
"""What a front end gives a run besides its request: ``on_event``, ``config``, ``cancel``,
``abort`` and, for ``acp_spawn``, ``permission_hook``, ``elicitation_hook``,
``follow_ups``."""
ACP_ONLY_HOOKS = ("permission_hook", "elicitation_hook", "follow_ups")


def _fork_needs_resume(options: dict[str, Any]) -> dict[str, Any]:
    if options.get("fork") and options.get("resume") is None:
        raise ValueError("fork needs resume: the session to fork")
    return options


class EntryKind:
    """One row of the table."""

    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = ("_arguments", "acp_hooks", "called", "default_timeout", "faces", "module",
                 "name", "options", "rule")  # fmt: skip

    def __init__(
        self,
        name: Entry,
        options: type,
        module: str,
        arguments: Callable[[EntryRequest], tuple[tuple[Any, ...], dict[str, Any]]],
        default_timeout: Callable[[LoadedConfig, str | None], float],
        *,
        faces: frozenset[Face] = frozenset(),
        acp_hooks: bool = False,
        called: str = "",
        rule: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.name = name
        self.options = options
        """Its options model (:mod:`.options`)."""
        self.module = module
        """The module holding the entry function, a function of the entry's name."""
        self._arguments = arguments
        self.default_timeout = default_timeout
        """Seconds a run may take when the call gives no ``timeout`` (raises
        :class:`~acp_bridge.errors.BridgeError` for an unknown or broken profile)."""
        self.faces = faces
        self.acp_hooks = acp_hooks
        """Whether it answers an ACP agent's permission requests and questions (and keeps
        the agent for follow-up turns)."""
        self.called = called or name
        """The function a run calls: the entry function, or its internal form that takes
        the hooks only the run layer gives (``follow_ups``)."""
        self.rule = rule
        """The rule between its options, checked after each option on its own."""

    def function(self, name: str = "") -> Callable[..., Awaitable[SubtaskResult]]:
        """The entry function, or another function of its module (the module imported now,
        if it was not)."""
        found: Callable[..., Awaitable[SubtaskResult]] = getattr(
            importlib.import_module(self.module), name or self.name
        )
        return found

    def call(self, request: EntryRequest, hooks: Hooks) -> Awaitable[SubtaskResult]:
        """Run ``request`` with ``hooks`` (those only an ACP agent uses left out of others)."""
        if not self.acp_hooks:
            hooks = {name: hook for name, hook in hooks.items() if name not in ACP_ONLY_HOOKS}
        positional, keywords = self._arguments(request)
        return self.function(self.called)(*positional, **keywords, **hooks, **request.options)


def _profile_timeout(loaded: LoadedConfig, agent: str | None) -> float:
    if agent is None:
        raise ConfigError("acp_spawn needs an agent")
    return float(loaded.profiles.get(agent).profile.timeouts.run)


ENTRY_TABLE: dict[str, EntryKind] = {
    "acp_spawn": EntryKind(
        "acp_spawn",
        AcpSpawnOptions,
        "acp_bridge._entries.acp_spawn.entry",
        lambda r: ((r.agent, r.task), {}),
        _profile_timeout,
        faces=frozenset({"mcp", "start", "tool"}),
        acp_hooks=True,
        called="acp_spawn_with_follow_ups",
        rule=_fork_needs_resume,
    ),
    "bash": EntryKind(
        "bash",
        BashOptions,
        "acp_bridge._entries.bash",
        lambda r: ((r.task,), {}),
        lambda loaded, _: float(loaded.config.tools.bash.timeout),
        faces=frozenset({"mcp", "start", "tool"}),
    ),
    "spawn": EntryKind(
        "spawn",
        SpawnOptions,
        "acp_bridge._entries.local_loop.spawn",
        lambda r: ((r.task, r.tools or []), {}),
        lambda loaded, _: float(loaded.config.tools.spawn.timeout),
        faces=frozenset({"mcp", "start", "tool"}),
    ),
    "ask": EntryKind(
        "ask",
        AskOptions,
        "acp_bridge._entries.local_loop.ask",
        lambda r: ((r.task,), {"tools": r.tools}),
        lambda loaded, _: float(loaded.config.tools.spawn.timeout),
    ),
}


def entries_offered(face: Face) -> tuple[Entry, ...]:
    """The entries a face offers, in the table's order."""
    return tuple(kind.name for kind in ENTRY_TABLE.values() if face in kind.faces)


def model_of(entry: str | type) -> type:
    """An entry's options model by its name, or a model as given."""
    return ENTRY_TABLE[entry].options if isinstance(entry, str) else entry


@cache
def options_adapter(entry: str) -> TypeAdapter[Any]:
    kind = ENTRY_TABLE[entry]
    model: Any = kind.options
    if kind.rule is not None:
        model = Annotated[model, AfterValidator(kind.rule)]
    return TypeAdapter(model)


def check_options(entry: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` checked against ``entry``'s model, defaults filled in. Raises
    :class:`~acp_bridge.ConfigError`, a problem per bad option, each naming it."""
    try:
        return dict(options_adapter(entry).validate_python(dict(options)))
    except ValidationError as exc:
        raise options_error(exc) from None


def checked_or_error(
    entry: str, options: Mapping[str, Any]
) -> tuple[dict[str, Any], ConfigError | None]:
    """:func:`check_options`, for an entry function that must answer with an envelope: the
    checked options, or none and the error its run body raises. A name that is no option of
    ``entry`` is a ``TypeError`` at once, as for any function: a mistake in the caller's
    code, not in its data."""
    names = {option.name for option in options_of(ENTRY_TABLE[entry].options)}
    for name in options:
        if name not in names:
            raise TypeError(f"{entry}() got an unexpected keyword argument {name!r}")
    try:
        return check_options(entry, options), None
    except ConfigError as exc:
        return {}, exc


def stored_options(entry: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` as JSON data, without the ones at their defaults (what a run stores)."""
    defaults = {option.name: option.default for option in options_of(ENTRY_TABLE[entry].options)}
    data = options_adapter(entry).dump_python(dict(options), mode="json")
    return {name: value for name, value in data.items() if value != defaults.get(name)}


def session_setting_names() -> tuple[str, ...]:
    """What an ACP session is set up with: its agent and the ``acp_spawn`` options marked
    so (a follow-up inherits them; a held agent serves only follow-ups that ask for the
    same)."""
    return ("agent", *(o.name for o in options_of(AcpSpawnOptions) if o.offer.session))


def session_settings(request: typing.Mapping[str, Any] | None) -> dict[str, Any]:
    """What of a stored ``acp_spawn`` request (flat, as JSON) its session is set up with."""
    return {name: (request or {}).get(name) for name in session_setting_names()}
