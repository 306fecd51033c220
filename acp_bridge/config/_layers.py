"""Profile layers: one profile's contributions from several files, merged with provenance.

A profile named in a later layer is deep-merged over the earlier one of the same name,
mapping by mapping; lists and scalars replace. Every value remembers the layer (file, line,
column) that set it, so ``acp-bridge profiles show`` can say where each value came from.
"""

import copy
import os
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from acp_bridge.config._expand import expand_and_resolve, expand_for_agent
from acp_bridge.config._profile import AgentProfile
from acp_bridge.config._reuse import PathFacts, Remembered
from acp_bridge.config._yaml.located import DataPath, YamlDocument, field_name, validate_located
from acp_bridge.errors import ConfigError, Problem, ProfileError, SourceLocation

# Fields holding paths, resolved against the directory of the file that wrote them.
_PROFILE_PATH_FIELDS: tuple[DataPath, ...] = (
    ("cwd",),
    ("read_roots", "*"),
    ("write_roots", "*"),
    ("sandbox", "state", "*"),
    ("sandbox", "readable", "*"),
    ("sandbox", "hidden", "*"),
    ("auth", "files", "*"),
)

Origin = Literal["built-in", "registry", "profiles dir", "config", "file"]


class ProfileLayer(NamedTuple):
    """One file's contribution to a profile: the mapping at ``prefix`` inside ``doc``."""

    origin: Origin
    doc: YamlDocument
    prefix: DataPath = ()

    @property
    def data(self) -> dict[str, Any]:
        value: Any = self.doc.data
        for part in self.prefix:
            value = value[part]
        return value  # type: ignore[no-any-return]

    @property
    def name(self) -> str:
        return str(self.data.get("name") or self.doc.path.stem)

    def location(self, rel: DataPath = (), *, at_key: bool = False) -> SourceLocation:
        path = (*self.prefix, *rel)
        return self.doc.locate_key(path) if at_key else self.doc.locate(path)

    def field(self, rel: DataPath) -> str:
        return field_name((*self.prefix, *rel))


class ValueSource(NamedTuple):
    """Where one resolved value came from, for ``profiles show``."""

    origin: Origin | Literal["default"]
    location: SourceLocation | None = None
    env_vars: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.origin == "default":
            return "default"
        text = f"{self.origin} {self.location}" if self.location else self.origin
        if self.env_vars:
            text += " via env " + ", ".join(f"${v}" for v in self.env_vars)
        return text


class ResolvedProfile:
    """A usable profile plus, for each value set in a file, the layer that set it."""

    # A plain class: a frozen dataclass compiles six methods when the module loads, on
    # every command's start-up.
    __slots__ = ("_said", "env_used", "owners", "profile")

    def __init__(
        self,
        profile: AgentProfile,
        owners: Mapping[DataPath, ProfileLayer],
        env_used: Mapping[DataPath, tuple[str, ...]],
    ) -> None:
        self.profile = profile
        self.owners = owners
        self.env_used = env_used
        # set_at's answers by path and working directory (the profile is reused: a run
        # asks where its command was set every time).
        self._said: dict[tuple[DataPath, str], str] = {}

    def __repr__(self) -> str:
        return (
            f"ResolvedProfile(profile={self.profile!r}, owners={self.owners!r}, "
            f"env_used={self.env_used!r})"
        )

    def source_of(self, path: DataPath) -> ValueSource:
        """Where the value at ``path`` came from (``default`` when no file set it)."""
        for end in range(len(path), 0, -1):
            layer = self.owners.get(path[:end])
            if layer is not None:
                names = tuple(
                    dict.fromkeys(
                        v for p, vs in self.env_used.items() if p[: len(path)] == path for v in vs
                    )
                )
                return ValueSource(layer.origin, layer.location(path), names)
        return ValueSource("default")

    def set_at(self, path: DataPath) -> str:
        """``FILE:LINE:COL: field`` of the value at ``path`` ("" when no file set it); the
        file relative to the working directory when below it."""
        try:
            key = (path, os.getcwd())  # noqa: PTH109 (a string: this is the cache key)
        except OSError:  # the working directory is gone: said in full, not remembered
            key = None
        said = self._said.get(key) if key is not None else None
        if said is None:
            layer = self.owners.get(path)
            said = f"{layer.location(path)}: {layer.field(path)}" if layer else ""
            if key is not None:
                self._said[key] = said
        return said

    def runnable(self) -> AgentProfile:
        """The profile, unless ``enable: false`` says it must not run (a ConfigError)."""
        if not self.profile.enable:
            raise ConfigError(
                f"agent profile {self.profile.name!r} is disabled (enable: false, "
                f"{self.source_of(('enable',))})"
            )
        return self.profile


class _Merged:
    """Profile layers deep-merged, remembering which layer set each value."""

    def __init__(self, layers: list[ProfileLayer]) -> None:
        self.layers = layers
        self.data: dict[str, Any] = {}
        self.owner: dict[DataPath, ProfileLayer] = {}
        for layer in layers:
            self._merge(self.data, layer.data, (), layer)

    def _merge(
        self, target: dict[str, Any], source: dict[str, Any], path: DataPath, layer: ProfileLayer
    ) -> None:
        for key, value in source.items():
            here = (*path, key)
            if isinstance(value, dict) and isinstance(target.get(key), dict):
                self._merge(target[key], value, here, layer)
                continue
            target[key] = copy.deepcopy(value)
            for stale in [p for p in self.owner if p[: len(here)] == here]:
                del self.owner[stale]
            self.owner[here] = layer

    def layer_of(self, path: DataPath) -> ProfileLayer:
        for end in range(len(path), 0, -1):
            found = self.owner.get(path[:end])
            if found is not None:
                return found
        return self.layers[-1]

    def locate(self, path: DataPath, at_key: bool = False) -> tuple[SourceLocation, str]:
        layer = self.layer_of(path)
        return layer.location(path, at_key=at_key), layer.field(path)

    def problem(self, path: DataPath, message: str) -> Problem:
        where, name = self.locate(path)
        return Problem(message, where, name)


_RESOLVED: Remembered[ResolvedProfile] = Remembered()
"""Resolved profiles by the layers they came from (_reuse.py)."""


def resolve_profile(layers: list[ProfileLayer], environ: Mapping[str, str]) -> ResolvedProfile:
    """Merge ``layers``, expand variables, resolve paths and validate: the usable profile.

    Within a process, the result for the same documents, environment and filesystem facts
    is the one resolved before (_reuse.py)."""
    key = tuple((id(layer.doc), layer.prefix, layer.origin) for layer in layers)
    known = _RESOLVED.get(key, environ)
    if known is not None:
        return known
    merged = _Merged(layers)
    merged.data.setdefault("name", layers[-1].name)  # a profile file may omit it: its stem
    # Where the agent writes and reads follows the agent's environment (_expand.py).
    agent_used = expand_for_agent(merged.data, environ)
    facts = PathFacts(merged.data, lambda path: merged.layer_of(path).doc.path.parent, environ)
    problems, env_used = expand_and_resolve(
        merged.data,
        _PROFILE_PATH_FIELDS,
        environ,
        base_dir_of=facts.base_dir_of,
        problem_at=merged.problem,
    )
    env_used.update(agent_used)
    if problems:
        raise ProfileError(problems)
    try:
        profile = validate_located(AgentProfile, merged.data, merged.locate)
    except ConfigError as exc:
        raise ProfileError(exc.problems) from exc
    profile.mark_from_environment(env_used, environ)
    resolved = ResolvedProfile(profile, dict(merged.owner), env_used)
    command = merged.data.get("command")  # a folder named by its absolute path is refused
    facts.observe(*([command] if isinstance(command, str) else []))
    _RESOLVED.put(key, resolved, environ, facts, tuple(layer.doc for layer in layers))
    return resolved
