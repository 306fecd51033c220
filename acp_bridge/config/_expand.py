"""``${VAR}`` expansion and path resolution in loaded config data.

``${VAR}`` (and ``${VAR:-default}``, ``$$`` for a dollar) expands from the environment at
load; relative path fields are resolved against the directory of the file that wrote them.

A profile's ``sandbox.state`` and ``sandbox.readable`` are the exception
(:func:`expand_for_agent`): they name where the *agent* writes and reads, and an agent
relocates its state by its own environment (``${CODEX_HOME:-~/.codex}``), so they expand
from the environment the agent gets — its base variables, ``env_passthrough`` and ``env``
— not from the host's alone.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from acp_bridge._os.process.environment import constructed_env
from acp_bridge.config._yaml.located import DataPath
from acp_bridge.errors import Problem

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_NESTING = 8
"""Defaults inside defaults (``${A:-${B:-${C}}}``) go this deep, no deeper."""


def expand_vars(
    text: str, environ: Mapping[str, str], fallback: Mapping[str, str] | None = None
) -> tuple[str, list[str]]:
    """``text`` with ``${VAR}`` expanded; returns the result and the variables used.

    ``${NAME:-default}`` is ``default`` when NAME is not set; the default may itself hold
    references (``${A:-${B:-z}}``), expanded only when it is used, as a shell does.
    ``fallback``: where a ``${NAME}`` without a default that ``environ`` lacks is read (a
    reference with a default never reads it: unset in ``environ`` is unset).
    Raises ValueError with a readable reason on bad syntax or an unset variable.
    """
    if "$" not in text:  # most strings of a profile: nothing to expand, nothing to check
        return text, []
    used: list[str] = []
    where = _Lookup(environ, fallback)
    _expand(text, 0, where, used, depth=0, evaluate=False)  # syntax first, all of it
    value, _ = _expand(text, 0, where, used, depth=0, evaluate=True)
    return value, used


class _Lookup:
    """The environment a reference reads, and the one a required reference falls back to."""

    __slots__ = ("environ", "fallback")

    def __init__(self, environ: Mapping[str, str], fallback: Mapping[str, str] | None) -> None:
        self.environ = environ
        self.fallback = fallback


def _expand(
    text: str,
    pos: int,
    environ: _Lookup,
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
    environ: _Lookup,
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
    is_set = evaluate and name in environ.environ
    if evaluate:
        used.append(name)
    default, end = _expand(
        text, after + 2, environ, used, depth=depth + 1, evaluate=evaluate and not is_set
    )
    return (environ.environ[name] if is_set else default), end + 1


def _lookup(name: str, where: _Lookup, used: list[str]) -> str:
    used.append(name)
    if name in where.environ:
        return where.environ[name]
    if where.fallback is not None and name in where.fallback:
        return where.fallback[name]
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


AGENT_PATH_KEYS = (("sandbox", "state"), ("sandbox", "readable"), ("auth", "files"))
"""The path lists of a profile that expand from the agent's environment: where it writes
and reads, and where it keeps its login (``doctor`` looks there)."""


def expand_for_agent(
    data: dict[str, Any], environ: Mapping[str, str]
) -> dict[DataPath, tuple[str, ...]]:
    """Expand a profile's ``sandbox.state``, ``sandbox.readable`` and ``auth.files``
    entries, in place, from the environment its agent gets (:func:`agent_environ`); the
    variables each used.

    ``${NAME:-default}`` reads only that environment: a variable the agent is not given is
    unset for it, and so the default, as the agent itself decides (``CODEX_HOME`` set on
    the host but not passed through: codex writes ``~/.codex``). ``${NAME}`` without a
    default that the agent is not given is read from the host (``${LAB}/state``: the
    operator's own variable). A leading ``~`` is the agent's ``HOME``. What this pass
    cannot expand is left as it is: the pass over the whole profile reports it where it is
    written. The result is written with ``$`` doubled, for that pass to read as it is."""
    entries = [
        (section, key, index, text)
        for section, key in AGENT_PATH_KEYS
        if isinstance(data.get(section), dict) and isinstance(data[section].get(key), list)
        for index, text in enumerate(data[section][key])
        if isinstance(text, str) and ("$" in text or text.startswith("~"))
    ]
    if not entries:
        return {}
    agent = agent_environ(data, environ)
    used: dict[DataPath, tuple[str, ...]] = {}
    for section, key, index, text in entries:
        try:
            value, names = expand_vars(text, agent, fallback=environ)
        except ValueError:
            continue
        home = agent.get("HOME")
        if home and (value == "~" or value.startswith("~/")):
            value = home + value[1:]
        data[section][key][index] = value.replace("$", "$$")
        if names:
            used[(section, key, index)] = tuple(names)
    return used


def agent_environ(data: dict[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """The environment the agent of the profile ``data`` gets (its values expanded from
    ``environ``, the host's), as ``_os/process/environment.py`` constructs it for a run."""
    env, names = data.get("env"), data.get("env_passthrough")
    extra: dict[str, str] = {}
    for name, value in env.items() if isinstance(env, dict) else ():
        if isinstance(name, str) and isinstance(value, str):
            try:
                extra[name] = expand_vars(value, environ)[0]
            except ValueError:  # reported by the pass over the whole profile
                continue
    passthrough = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    return constructed_env(depth=0, extra=extra, passthrough=passthrough, environ=environ)
