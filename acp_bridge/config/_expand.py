"""``${VAR}`` expansion and path resolution in loaded config data.

``${VAR}`` (and ``${VAR:-default}``, ``$$`` for a dollar) expands from the environment at
load; relative path fields are resolved against the directory of the file that wrote them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from acp_bridge.config._yaml import DataPath
from acp_bridge.errors import Problem

_VAR = re.compile(r"\$(?:(?P<dollar>\$)|\{(?P<body>[^}]*)(?P<close>\}?))")
_VAR_BODY = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?$", re.DOTALL)


def expand_vars(text: str, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """``text`` with ``${VAR}`` expanded; returns the result and the variables used.

    Raises ValueError with a readable reason on bad syntax or an unset variable.
    """
    used: list[str] = []

    def replace(match: re.Match[str]) -> str:
        if match["dollar"]:
            return "$"
        body = match["body"]
        if not match["close"]:
            raise ValueError(f"unterminated ${{…}} in {text!r}")
        parsed = _VAR_BODY.match(body)
        if parsed is None:
            raise ValueError(
                f"bad variable reference ${{{body}}}: write ${{NAME}} or ${{NAME:-default}}"
            )
        name, default = parsed["name"], parsed["default"]
        used.append(name)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise ValueError(
            f"environment variable {name} is not set (write ${{{name}:-}} to allow it empty)"
        )

    return _VAR.sub(replace, text), used


def _walk_strings(data: Any, path: DataPath = ()) -> Iterator[tuple[DataPath, str]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _walk_strings(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _walk_strings(value, (*path, index))
    elif isinstance(data, str):
        yield path, data


def _set(data: Any, path: DataPath, value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


def _matches(pattern: DataPath, path: DataPath) -> bool:
    if len(pattern) != len(path):
        return False
    return all(p in ("*", q) for p, q in zip(pattern, path, strict=True))


def _resolve_path(raw: str, base: Path) -> str:
    path = Path(raw).expanduser()
    return str((path if path.is_absolute() else base / path).resolve())


def expand_and_resolve(
    data: dict[str, Any],
    path_fields: tuple[DataPath, ...],
    environ: Mapping[str, str],
    base_dir_of: Any,
    problem_at: Any,
) -> tuple[list[Problem], dict[DataPath, tuple[str, ...]]]:
    """Expand ``${VAR}`` in every string and make path fields absolute, in place."""
    problems: list[Problem] = []
    env_used: dict[DataPath, tuple[str, ...]] = {}
    for path, text in list(_walk_strings(data)):
        if path == ("name",):
            continue
        try:
            value, used = expand_vars(text, environ)
        except ValueError as exc:
            problems.append(problem_at(path, str(exc)))
            continue
        if used:
            env_used[path] = tuple(used)
        if any(_matches(pattern, path) for pattern in path_fields):
            value = _resolve_path(value, base_dir_of(path))
        _set(data, path, value)
    return problems, env_used
