"""Finding and loading the config file, and checking files for ``profiles validate``."""

from __future__ import annotations

import copy
import os
import sys
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_bridge._os.process.environment import host_environ
from acp_bridge.config._catalog import (
    ProfileCatalog,
    _add_group,
    _check_profile_root,
    _load_profile_dir,
    _profile_files,
    builtin_profile_files,
    registry_profile_files,
)
from acp_bridge.config._expand import expand_and_resolve
from acp_bridge.config._layers import ProfileLayer
from acp_bridge.config._reuse import PathFacts, Remembered
from acp_bridge.config._settings import Config
from acp_bridge.config._yaml.located import (
    DataPath,
    YamlDocument,
    field_name,
    load_yaml,
    validate_located,
)
from acp_bridge.errors import ConfigError, Problem, SourceLocation

CONFIG_ENV = "ACP_BRIDGE_CONFIG"
LOCAL_CONFIG_NAME = "acp-bridge.yaml"
_CONFIG_PATH_FIELDS: tuple[DataPath, ...] = (
    ("profiles_dirs", "*"),
    ("schemas", "*"),
    ("transcripts", "dir"),
    ("sandbox", "state", "*"),
    ("sandbox", "readable", "*"),
    ("sandbox", "hidden", "*"),
)
_CONFIG_KEYS = frozenset(Config.model_fields)
RENAMED_KEYS: dict[DataPath, str] = {("runs", "runner_idle"): "supervisor_idle"}
"""Config keys that were renamed, by their old path: the new name. A file with the old name
still works, with a ``FutureWarning`` at its line naming the new one."""


def _with_builtin_vars(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment ``${VAR}`` reads, plus variables acp-bridge defines itself."""
    return {"ACP_BRIDGE_PYTHON": sys.executable, **environ}


def find_config_file(
    explicit: Path | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Path | None:
    """The config file to use, by the search order above; None when there is none."""
    environ = os.environ if environ is None else environ
    if explicit is not None:
        return explicit
    if environ.get(CONFIG_ENV):
        return Path(environ[CONFIG_ENV])
    local = (cwd or Path.cwd()) / LOCAL_CONFIG_NAME
    if local.is_file():
        return local
    xdg = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME", "~")) / ".config")
    user = Path(xdg).expanduser() / "acp-bridge" / "config.yaml"
    return user if user.is_file() else None


@dataclass
class LoadedConfig:
    """The settings, the profiles and the file they came from (None: defaults only)."""

    path: Path | None
    config: Config
    profiles: ProfileCatalog
    problems: list[Problem] = field(default_factory=list)
    """Problems that made single profile files unusable (a broken file has no name)."""


_SETTINGS: Remembered[Config] = Remembered()
"""Settings by the config document they came from (_reuse.py)."""


def _config_doc_settings(doc: YamlDocument, environ: Mapping[str, str]) -> Config:
    known = _SETTINGS.get(id(doc), environ)
    if known is not None:
        return known
    raw = {} if doc.data is None else doc.data  # the document is shared: never changed
    if not isinstance(raw, dict):
        raise ConfigError([doc.problem((), "the config file must be a mapping")])
    # Agent entries expand per profile (an unset variable breaks only that profile).
    data = copy.deepcopy({k: v for k, v in raw.items() if k != "acp"})
    facts = PathFacts(data, lambda _path: doc.path.parent, environ)
    problems, _ = expand_and_resolve(
        data,
        _CONFIG_PATH_FIELDS,
        environ,
        base_dir_of=facts.base_dir_of,
        problem_at=doc.problem,
    )
    if problems:
        raise ConfigError(problems)
    if "acp" in raw:
        data["acp"] = raw["acp"]
    written_as = _read_renamed_keys(doc, data)

    def locate(path: DataPath, at_key: bool) -> tuple[SourceLocation, str]:
        for new, old in written_as.items():  # a renamed key: where the file has it
            if path[: len(new)] == new:
                path = old + path[len(new) :]
        return (doc.locate_key(path) if at_key else doc.locate(path)), field_name(path)

    settings: Config = validate_located(Config, data, locate)
    facts.observe()
    _SETTINGS.put(id(doc), settings, environ, facts, (doc,))
    return settings


def _read_renamed_keys(doc: YamlDocument, data: dict[str, Any]) -> dict[DataPath, DataPath]:
    """Move every key of ``data`` written under an old name (:data:`RENAMED_KEYS`) to its
    new name, warning at its line; the new paths moved, each with the old one. Both names
    set at once is a problem: which value was meant is not for us to guess."""
    moved: dict[DataPath, DataPath] = {}
    problems = []
    for old_path, new in RENAMED_KEYS.items():
        *parents, old = old_path
        section: Any = data
        for key in parents:
            section = section.get(key) if isinstance(section, dict) else None
        if not isinstance(section, dict) or old not in section:
            continue
        new_path = (*parents, new)
        if new in section:
            message = f"the old name of {field_name(new_path)}, which is set too: keep only {new}"
            problems.append(doc.problem(old_path, message, at_key=True))
            continue
        section[new] = section.pop(old)
        moved[new_path] = old_path
        where = doc.locate_key(old_path)
        warnings.warn_explicit(
            f"{field_name(old_path)} is deprecated: it was renamed {field_name(new_path)} "
            "(the same setting)",
            FutureWarning,
            str(where.path),
            where.line,
        )
    if problems:
        raise ConfigError(problems)
    return moved


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    search: bool = True,
) -> LoadedConfig:
    """Load settings and every profile. Raises ConfigError when the config file is broken.

    ``path`` and ``cwd`` take a string or any path-like (a host passes what it has).
    With ``search`` false, ``path`` None means "no config file" (built-in profiles only).
    """
    path = None if path is None else Path(path)
    cwd = None if cwd is None else Path(cwd)
    environ = _with_builtin_vars(host_environ() if environ is None else environ)
    config_path = find_config_file(path, environ, cwd) if search else path
    catalog = ProfileCatalog(
        environ, builtin=builtin_profile_files(), registry=registry_profile_files()
    )
    problems: list[Problem] = []
    if config_path is None:
        return LoadedConfig(None, Config(), catalog, problems)

    doc = load_yaml(config_path)
    settings = _config_doc_settings(doc, environ)
    for directory in settings.profiles_dirs:
        layers, unreadable = _load_profile_dir(directory, "profiles dir")
        catalog.unreadable.update(unreadable)
        problems += [p for file_problems in unreadable.values() for p in file_problems]
        problems += _add_group(catalog, layers)
    agent_layers = []
    for index, _entry in enumerate(settings.acp.agents):
        prefix: DataPath = ("acp", "agents", index)
        entry_problems = _check_profile_root(doc, prefix)
        if "name" not in doc.data["acp"]["agents"][index]:
            entry_problems.append(doc.problem(prefix, "every agent needs a name"))
        if entry_problems:
            raise ConfigError(entry_problems)
        agent_layers.append(ProfileLayer("config", doc, prefix))
    problems += _add_group(catalog, agent_layers)
    return LoadedConfig(config_path, settings, catalog, problems)


def schema_problems(loaded: LoadedConfig, doc: YamlDocument | None = None) -> list[Problem]:
    """The registered output-schema files that cannot be used (unreadable, not JSON, not a
    JSON Schema), each at the config line that names it."""
    from acp_bridge._output_schema.structured_output import (
        SchemaRegistry,  # jsonschema only for those who check
    )

    doc = doc or (load_yaml(loaded.path) if loaded.path else None)
    problems = []
    for label, error in SchemaRegistry(loaded.config.schemas).check().items():
        where = doc.locate(("schemas", label)) if doc is not None else None
        problems += [Problem(p.message, where, f"schemas.{label}") for p in error.problems]
    return problems


def looks_like_config(doc: YamlDocument) -> bool:
    """Whether a YAML file is a config file (vs. a single profile file)."""
    if not isinstance(doc.data, dict):
        return False
    keys = set(doc.data)
    # `sandbox` is both a config key and a profile key: a profile names itself or a command.
    return bool(_CONFIG_KEYS & keys) and not ({"name", "command"} & keys)


def validate_files(
    paths: Iterable[Path], *, environ: Mapping[str, str] | None = None
) -> dict[Path, list[Problem]]:
    """Check config files and profile files (folders: every YAML file inside).

    A profile file is checked as if it sat in a profiles dir: over the built-in profile of
    the same name, if any. Returns the problems of each file (empty: the file is fine).
    """
    environ = _with_builtin_vars(os.environ if environ is None else environ)
    files: list[Path] = []
    for path in paths:
        files.extend(_profile_files(path) if path.is_dir() else [path])
    results: dict[Path, list[Problem]] = {}
    for path in files:
        results[path] = _validate_one(path, environ)
    return results


def _validate_one(path: Path, environ: Mapping[str, str]) -> list[Problem]:
    try:
        doc = load_yaml(path)
    except ConfigError as exc:
        return exc.problems
    if looks_like_config(doc):
        try:
            loaded = load_config(path, environ=environ, search=False)
        except ConfigError as exc:
            return exc.problems
        problems = list(loaded.problems)
        for err in loaded.profiles.resolve_all().values():
            problems.extend(p for p in err.problems if p not in problems)
        return problems + schema_problems(loaded, doc)
    root_problems = _check_profile_root(doc, ())
    if root_problems:
        return root_problems
    catalog = ProfileCatalog(environ, builtin=builtin_profile_files())
    layer = ProfileLayer("file", doc)
    if catalog.builtin.get(layer.name) == path:
        catalog.builtin.pop(layer.name)  # validating a built-in file: not over itself
    catalog.add_layer(layer)
    try:
        catalog.get(layer.name)
    except ConfigError as exc:
        return exc.problems
    return []
