"""The catalogue of profiles: built-in files, agents installed from the ACP registry, profile
folders and the config's own list."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp_bridge._os.fs.locations import registry_profiles_dir
from acp_bridge.config._layers import Origin, ProfileLayer, ResolvedProfile, resolve_profile
from acp_bridge.config._yaml.located import DataPath, YamlDocument, load_yaml
from acp_bridge.errors import ConfigError, Problem, ProfileError, UnknownProfileError

BUILTIN_PROFILES_DIR = Path(__file__).parent.parent / "profiles"
PROFILE_SUFFIXES = (".yaml", ".yml")
REGISTRY_SAYS = frozenset({"command", "args", "package", "install", "min_version"})
"""What a profile derived from an ACP registry entry says for itself: the built-in profile
layered under it gives the rest (sandbox state, auth, environment, quirks), never these (its
own package's command, pin and minimum version are not the registry's)."""


class ProfileCatalog:
    """Every profile by name, resolved on first use (a run pays only for its own profile).

    Built-in profiles are files named after the profile, so they are parsed only when that
    name is asked for, and so are the profiles ``agents install`` derived from ACP registry
    entries (a file ``{"builtin": NAME | null, "profile": {...}}`` each: the profile over the
    built-in ``NAME`` less :data:`REGISTRY_SAYS`); profiles from folders and the config file
    are read up front and layered over both.
    """

    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = ("_resolved", "builtin", "environ", "errors", "layers", "registry", "unreadable")

    def __init__(
        self,
        environ: Mapping[str, str],
        *,
        builtin: dict[str, Path] | None = None,
        registry: dict[str, Path] | None = None,
    ) -> None:
        self.environ = environ
        self.builtin: dict[str, Path] = {} if builtin is None else builtin
        self.registry: dict[str, Path] = {} if registry is None else registry
        self.layers: dict[str, list[ProfileLayer]] = {}
        self.errors: dict[str, ProfileError] = {}
        # Files of profile folders that did not even become a profile (not YAML, not a
        # mapping, not UTF-8, …): no name to list them under, so listed by file.
        self.unreadable: dict[Path, list[Problem]] = {}
        self._resolved: dict[str, ResolvedProfile] = {}

    def __repr__(self) -> str:
        return f"ProfileCatalog(builtin={sorted(self.builtin)!r}, layers={sorted(self.layers)!r})"

    def names(self) -> list[str]:
        return sorted(set(self.builtin) | set(self.registry) | set(self.layers))

    def get(self, name: str) -> ResolvedProfile:
        """The usable profile ``name``; raises its ProfileError or UnknownProfileError."""
        if name in self._resolved:
            return self._resolved[name]
        if name not in self.errors:
            if name not in self.names():
                known = ", ".join(self.names()) or "none"
                raise UnknownProfileError(
                    f"no agent profile named {name!r}; known profiles: {known}"
                )
            try:
                self._resolved[name] = resolve_profile(self._layers_of(name), self.environ)
                return self._resolved[name]
            except ConfigError as exc:
                self.errors[name] = ProfileError(exc.problems)
        raise self.errors[name]

    def _layers_of(self, name: str) -> list[ProfileLayer]:
        layers = list(self.layers.get(name, []))
        if name in self.registry:
            return self._registry_layers(self.registry[name]) + layers
        if name in self.builtin:
            doc = load_yaml(self.builtin[name])
            problems = _check_profile_root(doc, ())
            if problems:
                raise ProfileError(problems)
            layers.insert(0, ProfileLayer("built-in", doc))
        return layers

    def _registry_layers(self, path: Path) -> list[ProfileLayer]:
        doc = load_yaml(path)
        data = doc.data
        if not isinstance(data, dict) or not isinstance(data.get("profile"), dict):
            message = "an installed registry agent's profile: a mapping with a profile mapping"
            raise ProfileError([doc.problem((), message)])
        layers = [ProfileLayer("registry", doc, ("profile",))]
        base = data.get("builtin")
        if isinstance(base, str) and base in self.builtin:
            builtin = load_yaml(self.builtin[base])
            problems = _check_profile_root(builtin, ())
            if problems:
                raise ProfileError(problems)
            rest = {k: v for k, v in builtin.data.items() if k not in REGISTRY_SAYS}
            under = YamlDocument(builtin.path, rest, builtin.values, builtin.keys)
            layers.insert(0, ProfileLayer("built-in", under))
        return layers

    def resolve_all(self) -> dict[str, ProfileError]:
        """Resolve every profile; returns the broken ones (for list and validate)."""
        for name in self.names():
            with contextlib.suppress(ConfigError):
                self.get(name)
        return self.errors

    def usable(self) -> dict[str, ResolvedProfile]:
        """Every profile that resolves and is enabled, by name (broken ones are left out)."""
        self.resolve_all()
        return {
            name: self._resolved[name]
            for name in self.names()
            if name in self._resolved and self._resolved[name].profile.enable
        }

    def add_layer(self, layer: ProfileLayer) -> None:
        self.layers.setdefault(layer.name, []).append(layer)


SETTLED_NS = 1_000_000_000
"""A folder's listing is reused only when it was taken this long after the folder last
changed: a change within the same clock tick would not move its modification time."""
_builtin_listing: tuple[tuple[int, int, int], dict[str, Path]] | None = None


def builtin_profile_files() -> dict[str, Path]:
    """Built-in profiles by name (each file is named after its profile). Every load asks:
    the listing is reused while the folder is the same (device, inode, modification time)."""
    global _builtin_listing
    try:
        info = BUILTIN_PROFILES_DIR.stat()
        identity = (info.st_dev, info.st_ino, info.st_mtime_ns)
    except OSError:
        identity = (0, 0, 0)
    listing = _builtin_listing
    if listing is not None and listing[0] == identity:
        return dict(listing[1])
    files = {p.stem: p for p in _profile_files(BUILTIN_PROFILES_DIR)}
    if time.time_ns() - identity[2] > SETTLED_NS:
        _builtin_listing = (identity, files)
    return dict(files)


def registry_profile_files() -> dict[str, Path]:
    """The profiles of agents installed from the ACP registry, by name (their files' stems)."""
    return {p.stem: p for p in _profile_files(registry_profiles_dir())}


def _profile_files(directory: Path) -> list[Path]:
    # Every load lists the built-in folder: the entries' own types, names as strings.
    try:
        with os.scandir(directory) as entries:
            names = sorted(
                entry.name
                for entry in entries
                # ``.yaml`` alone has no suffix (a hidden file), as for pathlib. Not only
                # regular files: a FIFO or a device named like a profile is an error naming
                # it (the reader refuses it without blocking), never silently left out.
                if entry.name.endswith(PROFILE_SUFFIXES)
                and entry.name.rfind(".") > 0
                and not entry.is_dir()
            )
    except (NotADirectoryError, FileNotFoundError):  # the built-in or the registry's folder
        return []
    return [directory / name for name in names]


def _check_profile_root(doc: YamlDocument, prefix: DataPath) -> list[Problem]:
    """A profile must be a mapping whose ``name``, if given, is a string."""
    value: Any = doc.data
    for part in prefix:
        value = value[part]
    if not isinstance(value, dict):
        got = "an empty file" if value is None and not prefix else f"a {type(value).__name__}"
        return [doc.problem(prefix, f"a profile must be a mapping, got {got}")]
    if "name" in value and not isinstance(value["name"], str):
        return [doc.problem((*prefix, "name"), "must be a string")]
    return []


def _add_group(catalog: ProfileCatalog, layers: list[ProfileLayer]) -> list[Problem]:
    """Add one source's layers; a name twice in the same source is an error of that name."""
    by_name: dict[str, list[ProfileLayer]] = {}
    for layer in layers:
        by_name.setdefault(layer.name, []).append(layer)
    problems = []
    for name, group in by_name.items():
        if len(group) > 1:
            first = group[0]
            dup = [
                Problem(
                    f"duplicate profile name {name!r} (first defined at {first.location()})",
                    later.location(("name",)) if "name" in later.data else later.location(),
                    later.field(("name",)),
                )
                for later in group[1:]
            ]
            catalog.errors[name] = ProfileError(dup)
            problems.extend(dup)
        catalog.add_layer(group[-1])
    return problems


def _load_profile_dir(
    directory: Path, origin: Origin
) -> tuple[list[ProfileLayer], dict[Path, list[Problem]]]:
    """The profiles of one folder, and the files that are not profiles with their problems."""
    layers: list[ProfileLayer] = []
    unreadable: dict[Path, list[Problem]] = {}
    for path in _profile_files(directory):
        try:
            doc = load_yaml(path)
        except ConfigError as exc:
            unreadable[path] = exc.problems
            continue
        root_problems = _check_profile_root(doc, ())
        if root_problems:
            unreadable[path] = root_problems
            continue
        layers.append(ProfileLayer(origin, doc))
    return layers, unreadable
