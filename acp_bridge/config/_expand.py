"""``${VAR}`` expansion and path resolution in loaded config data.

``${VAR}`` (and ``${VAR:-default}``, ``$$`` for a dollar) expands from the environment at
load; relative path fields are resolved against the directory of the file that wrote them.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from acp_bridge.config._yaml.located import DataPath
from acp_bridge.errors import Problem

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_NESTING = 8
"""Defaults inside defaults (``${A:-${B:-${C}}}``) go this deep, no deeper."""


def expand_vars(text: str, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """``text`` with ``${VAR}`` expanded; returns the result and the variables used.

    ``${NAME:-default}`` is ``default`` when NAME is not set; the default may itself hold
    references (``${A:-${B:-z}}``), expanded only when it is used, as a shell does.
    Raises ValueError with a readable reason on bad syntax or an unset variable.
    """
    if "$" not in text:  # most strings of a profile: nothing to expand, nothing to check
        return text, []
    used: list[str] = []
    _expand(text, 0, environ, used, depth=0, evaluate=False)  # syntax first, all of it
    value, _ = _expand(text, 0, environ, used, depth=0, evaluate=True)
    return value, used


def _expand(
    text: str,
    pos: int,
    environ: Mapping[str, str],
    used: list[str],
    *,
    depth: int,
    evaluate: bool,
) -> tuple[str, int]:
    """Expand from ``pos`` to the end (``depth`` 0) or to the ``}`` that closes a default
    (returned at that index). With ``evaluate`` false, only the syntax is checked."""
    out: list[str] = []
    i = pos
    while i < len(text):
        char = text[i]
        if char == "$" and text.startswith("$$", i):
            out.append("$")
            i += 2
        elif char == "$" and text.startswith("${", i):
            value, i = _reference(text, i + 2, environ, used, depth=depth, evaluate=evaluate)
            out.append(value)
        elif char == "}" and depth > 0:
            return "".join(out), i
        else:
            out.append(char)
            i += 1
    if depth > 0:
        raise ValueError(f"unterminated ${{…}} in {text!r}")
    return "".join(out), i


def _reference(
    text: str,
    pos: int,
    environ: Mapping[str, str],
    used: list[str],
    *,
    depth: int,
    evaluate: bool,
) -> tuple[str, int]:
    """One ``${…}`` whose body starts at ``pos``: its value and the index after its ``}``."""
    name_match = _NAME.match(text, pos)
    close = text.find("}", pos)
    if name_match is None:
        body = text[pos:close] if close >= 0 else text[pos:]
        if close < 0:
            raise ValueError(f"unterminated ${{…}} in {text!r}")
        raise ValueError(
            f"bad variable reference ${{{body}}}: write ${{NAME}} or ${{NAME:-default}}"
        )
    name, after = name_match.group(), name_match.end()
    if text.startswith("}", after):
        return (_lookup(name, environ, used) if evaluate else ""), after + 1
    if not text.startswith(":-", after):
        if close < 0:
            raise ValueError(f"unterminated ${{…}} in {text!r}")
        raise ValueError(
            f"bad variable reference ${{{text[pos:close]}}}: write ${{NAME}} or ${{NAME:-default}}"
        )
    if depth + 1 > MAX_NESTING:
        raise ValueError(f"defaults nested deeper than {MAX_NESTING} levels in {text!r}")
    is_set = evaluate and name in environ
    if evaluate:
        used.append(name)
    default, end = _expand(
        text, after + 2, environ, used, depth=depth + 1, evaluate=evaluate and not is_set
    )
    return (environ[name] if is_set else default), end + 1


def _lookup(name: str, environ: Mapping[str, str], used: list[str]) -> str:
    used.append(name)
    if name in environ:
        return environ[name]
    raise ValueError(
        f"environment variable {name} is not set (write ${{{name}:-}} to allow it empty)"
    )


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
    """``raw`` made absolute, symlinks resolved. Raises ValueError saying why it cannot be
    (a symlink loop, a path the system refuses): the caller locates it."""
    path = Path(raw).expanduser()
    try:
        return str((path if path.is_absolute() else base / path).resolve())
    except RuntimeError:  # Python before 3.13 on a symlink loop
        raise ValueError(f"{raw}: a symlink loop") from None
    except OSError as exc:
        why = "a symlink loop" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        raise ValueError(f"{raw}: {why}") from None


_NUL = "must not contain a NUL character (\\0): no program, argument, path or variable can"


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
        is_path = any(_matches(pattern, path) for pattern in path_fields)
        try:
            value, used = _expanded(text, environ, base_dir_of(path) if is_path else None)
        except ValueError as exc:
            problems.append(problem_at(path, str(exc)))
            continue
        if used:
            env_used[path] = tuple(used)
        _set(data, path, value)
    problems += [problem_at(path, f"this key {_NUL} carry one") for path in _nul_keys(data)]
    return problems, env_used


def _expanded(text: str, environ: Mapping[str, str], base: Path | None) -> tuple[str, list[str]]:
    """``text`` with its variables expanded (and resolved against ``base``, for a path
    field), and the variables it used. ValueError says why it cannot be used."""
    value, used = expand_vars(text, environ)
    if "\0" in value:  # the OS takes none in a path, an argument or the environment
        raise ValueError(f"{_NUL} carry one")
    return (value if base is None else _resolve_path(value, base)), used


def _nul_keys(data: Any, path: DataPath = ()) -> Iterator[DataPath]:
    """The paths of the mapping keys that hold a NUL character."""
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str) and "\0" in key:
                yield (*path, key)
            yield from _nul_keys(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _nul_keys(value, (*path, index))
