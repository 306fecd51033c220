"""YAML documents whose every key and value knows its ``file:line:column``.

Operators edit these files by hand, so every complaint about them must point at the exact
spot. :func:`load_yaml` parses with ruamel.yaml (YAML 1.2: ``yes`` stays a string), turns
the tree into plain Python data and keeps a position index beside it;
:func:`problems_from_validation` maps pydantic's errors back onto that index and words them
for people (``must be a positive number, got "ten"``). Every input is held to the limits of
bounds.py (regular files only, size, depth, alias expansion, tags).
"""

from __future__ import annotations

import datetime
import difflib
import json
import math
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from acp_bridge._os.fs.input_files import InputRefused, decode, read_bytes
from acp_bridge.config._yaml import cache as yamlcache
from acp_bridge.config._yaml.bounds import (
    MAX_DEPTH,
    MAX_YAML_BYTES,
    YAML_FILE,
    YamlSizeBudget,
    flow_depth_exceeds,
    tag_of,
)
from acp_bridge.errors import ConfigError, Problem, SourceLocation

DataPath = tuple[str | int, ...]


def field_name(path: Iterable[str | int]) -> str:
    """A data path as people write it: ``acp.agents[1].timeouts.run``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class YamlDocument:
    """Plain data from one YAML file plus where each key and value sits in it."""

    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = ("data", "keys", "path", "values")

    def __init__(
        self,
        path: Path,
        data: Any,
        values: dict[DataPath, SourceLocation] | None = None,
        keys: dict[DataPath, SourceLocation] | None = None,
    ) -> None:
        self.path = path
        self.data = data
        self.values: dict[DataPath, SourceLocation] = {} if values is None else values
        self.keys: dict[DataPath, SourceLocation] = {} if keys is None else keys

    def __repr__(self) -> str:
        return f"YamlDocument(path={self.path!r}, data={self.data!r})"

    def locate(self, path: DataPath) -> SourceLocation:
        """Where the value at ``path`` is, or its nearest enclosing value that exists."""
        for end in range(len(path), -1, -1):
            found = self.values.get(path[:end])
            if found is not None:
                return found
        return SourceLocation(self.path, 1, 1)

    def locate_key(self, path: DataPath) -> SourceLocation:
        """Where the key naming ``path`` is written (falls back to the value)."""
        return self.keys.get(path) or self.locate(path)

    def problem(self, path: DataPath, message: str, *, at_key: bool = False) -> Problem:
        where = self.locate_key(path) if at_key else self.locate(path)
        return Problem(message, where, field_name(path))


def load_yaml(path: Path) -> YamlDocument:
    """Parse ``path``; a read or syntax error becomes a :class:`ConfigError` with position.

    An unchanged file is served from the parse cache (see cache.py); within a process,
    as the same document object (which nobody changes)."""
    try:
        content = read_bytes(path, what=YAML_FILE, limit=MAX_YAML_BYTES)
        known = yamlcache.remembered(path, content)
        if isinstance(known, YamlDocument):
            return known
        cached = yamlcache.load(path, content)
        if cached is not None:
            data, values, keys = cached
            doc = YamlDocument(path=path, data=data, values=values, keys=keys)
            yamlcache.remember(path, content, doc)
            return doc
        text = decode(content, str(path))
    except OSError as exc:
        where = SourceLocation(path, 1, 1)
        if isinstance(exc, InputRefused) and exc.line is not None:
            where = SourceLocation(path, exc.line, exc.column or 1)
        reason = exc.strerror or str(exc)
        raise ConfigError([Problem(f"cannot read file: {reason}", where)]) from exc
    doc = parse_yaml(text, path)
    yamlcache.store(path, content, doc.data, doc.values, doc.keys)
    yamlcache.remember(path, content, doc)
    return doc


def _location_at(text: str, position: int, path: Path) -> SourceLocation:
    """The line and column of character index ``position`` of ``text``."""
    before = text[: max(0, position)]
    line = before.count("\n") + 1
    return SourceLocation(path, line, position - (before.rfind("\n") + 1) + 1)


def parse_yaml(text: str, path: Path) -> YamlDocument:
    """Parse YAML text that came from ``path`` (used in error positions)."""
    # Imported here, not at module top: the CLI's fast paths never read YAML twice.
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.reader import ReaderError

    if flow_depth_exceeds(text):
        top = SourceLocation(path, 1, 1)
        raise ConfigError([Problem(f"more than {MAX_DEPTH} nested [ or {{ brackets", top)])
    yaml = YAML(typ="rt")
    try:
        root = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = SourceLocation(path, mark.line + 1, mark.column + 1) if mark else None
        message = (exc.problem or exc.context or "invalid YAML").strip()
        raise ConfigError([Problem(f"invalid YAML: {message}", where)]) from exc
    except ReaderError as exc:  # a character YAML does not allow: a control character
        where = _location_at(text, exc.position, path)
        char = (
            exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or " ")
        )
        message = (
            f"invalid YAML: the control character U+{char:04X} is not allowed in a YAML "
            "file (write it as an escape in a double-quoted string)"
        )
        raise ConfigError([Problem(message, where)]) from exc
    except YAMLError as exc:  # any other complaint of the parser, without a position
        message = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        raise ConfigError(
            [Problem(f"invalid YAML: {message}", SourceLocation(path, 1, 1))]
        ) from exc
    except RecursionError as exc:  # the composer recurses once per level
        where = SourceLocation(path, 1, 1)
        raise ConfigError([Problem("invalid YAML: nested far too deeply", where)]) from exc
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        where = SourceLocation(path, 1, 1)
        raise ConfigError([Problem(f"invalid YAML: {exc}", where)]) from exc
    doc = YamlDocument(path=path, data=None)
    lc = getattr(root, "lc", None)  # a root collection knows where it starts (after comments)
    doc.values[()] = (
        SourceLocation(path, lc.line + 1, lc.col + 1) if lc else SourceLocation(path, 1, 1)
    )
    doc.data = _plain(root, (), doc, YamlSizeBudget())
    return doc


def _plain(node: Any, path: DataPath, doc: YamlDocument, budget: YamlSizeBudget) -> Any:
    """ruamel's round-trip node as plain Python data, recording positions on the way;
    within the budget of bounds.py (depth, values, tags)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar

    def at(position: Any) -> SourceLocation:
        if not position:  # merged keys and tagged nodes may have no position of their own
            return doc.locate(path)
        return SourceLocation(doc.path, position[0] + 1, position[1] + 1)

    too_much = budget.spend(len(path))
    if too_much:
        raise ConfigError([doc.problem(path, too_much)])
    tag = tag_of(node)
    if tag is not None:
        raise ConfigError([doc.problem(path, f"unsupported YAML tag {tag}")])
    if isinstance(node, CommentedMap):
        out: dict[str, Any] = {}
        positions = node.lc.data or {}
        for key in node:
            child = (*path, str(key))
            own = key in positions  # a key merged in with << has no position here
            doc.keys[child] = at(node.lc.key(key) if own else None)
            doc.values[child] = at(node.lc.value(key) if own else None)
            if not isinstance(key, str):
                raise ConfigError(
                    [doc.problem(child, f"keys must be strings, got {key!r}", at_key=True)]
                )
            out[key] = _plain(node[key], child, doc, budget)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        positions = node.lc.data or {}
        for index, item in enumerate(node):
            child = (*path, index)
            doc.values[child] = at(node.lc.item(index) if index in positions else None)
            items.append(_plain(item, child, doc, budget))
        return items
    if isinstance(node, TaggedScalar):  # a core tag (!!str 1): the value as a string
        return str(node.value)
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, str):
        return str(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, datetime.date):  # a plain string in YAML 1.2: read it as one
        return node.isoformat()
    what = type(node).__name__
    raise ConfigError([doc.problem(path, f"unsupported YAML value ({what}); quote it")])


# --- validation errors, worded for people --------------------------------------------

Locator = Callable[[DataPath, bool], tuple[SourceLocation | None, str]]
"""Maps a data path (and whether the key, not the value, is meant) to position and name."""


def describe(value: Any) -> str:
    """A value as it reads in an error: strings quoted, containers named."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str | int | float | bool) or value is None:
        return json.dumps(value, ensure_ascii=False)
    return type(value).__name__


def _allowed_keys(model: type[BaseModel], path: DataPath) -> list[str]:
    """The keys a mapping at ``path`` inside ``model`` accepts (for 'unknown key' errors)."""
    current: Any = model
    for part in path:
        current = _step_into(current, part)
        if current is None:
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [info.alias or name for name, info in current.model_fields.items()]
    return []


def _step_into(annotation: Any, part: str | int) -> Any:
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        for name, info in annotation.model_fields.items():
            if part in (name, info.alias):
                return info.annotation
        return None
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list and isinstance(part, int) and args:
        return args[0]
    if origin is dict and isinstance(part, str) and len(args) == 2:
        return args[1]
    return None


def _unwrap(annotation: Any) -> Any:
    """Optional[X] / Annotated[X, …] → X (the first model-ish member of a union)."""
    while True:
        origin = get_origin(annotation)
        if origin is typing.Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(annotation) if a is not type(None)]
            annotation = (
                members[0]
                if len(members) == 1
                else next(
                    (m for m in members if isinstance(m, type) and issubclass(m, BaseModel)),
                    members[0],
                )
            )
        else:
            return annotation


def _phrase(error: ErrorDetails, model: type[BaseModel]) -> str:
    """Plain words for one pydantic error: what is wrong and what is allowed."""
    kind, ctx, got = error["type"], error.get("ctx") or {}, describe(error.get("input"))
    loc = tuple(error["loc"])
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc[:-1])
        hint = f"; allowed keys: {', '.join(allowed)}" if allowed else ""
        return f"unknown key{hint}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '?')}; got {got}"
    raw = error.get("input")
    if isinstance(raw, float) and not math.isfinite(raw):
        return f"must be a finite number, got {got}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = {
            "greater_than": ("gt", "greater than"),
            "greater_than_equal": ("ge", "at least"),
            "less_than": ("lt", "less than"),
            "less_than_equal": ("le", "at most"),
        }[kind]
        limit = ctx.get(bound[0])
        if kind == "greater_than" and limit == 0:
            return f"must be a positive number, got {got}"
        shown = f"{limit:g}" if isinstance(limit, float) else limit
        return f"must be {bound[1]} {shown}, got {got}"
    wanted = {
        "int_parsing": "a whole number",
        "int_type": "a whole number",
        "int_from_float": "a whole number",
        "float_parsing": "a number",
        "float_type": "a number",
        "bool_parsing": "true or false",
        "bool_type": "true or false",
        "string_type": "a string",
        "list_type": "a list",
        "dict_type": "a mapping",
        "model_type": "a mapping",
        "model_attributes_type": "a mapping",
    }.get(kind)
    if wanted:
        return f"must be {wanted}, got {got}"
    if kind == "string_pattern_mismatch":
        return f"must match the pattern {ctx.get('pattern')}, got {got}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "value_error":
        return str(ctx.get("error") or error["msg"]).removeprefix("Value error, ")
    message = error["msg"]
    return message[:1].lower() + message[1:] + f", got {got}"


def _typo_fixes(errors: list[ErrorDetails], model: type[BaseModel]) -> dict[DataPath, str]:
    """Unknown keys that are near-misses of a missing required key: unknown → intended."""
    missing = {tuple(e["loc"]) for e in errors if e["type"] == "missing"}
    fixes: dict[DataPath, str] = {}
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] != "extra_forbidden" or not loc or not isinstance(loc[-1], str):
            continue
        candidates = [k for k in _allowed_keys(model, loc[:-1]) if (*loc[:-1], k) in missing]
        close = difflib.get_close_matches(loc[-1], candidates, n=1, cutoff=0.6)
        if close:
            fixes[loc] = close[0]
    return fixes


def problems_from_validation(
    exc: ValidationError, model: type[BaseModel], locate: Locator
) -> list[Problem]:
    """Every pydantic error as a located :class:`Problem`, in document order.

    A misspelt required key is one problem ("did you mean"), not an unknown key plus a
    missing one.
    """
    errors = exc.errors(include_url=False)
    typos = _typo_fixes(errors, model)
    intended = {(*loc[:-1], fix) for loc, fix in typos.items()}
    problems = []
    seen: set[tuple[str, str]] = set()
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] == "missing" and loc in intended:
            continue
        on_key = loc[-1:] == ("[key]",)
        if on_key:  # a dict key failed its own validation: point at the key
            loc = loc[:-1]
        where, name = locate(loc, on_key or error["type"] == "extra_forbidden")
        message = _phrase(error, model)
        if loc in typos:
            message = f"unknown key; did you mean {typos[loc]!r}?"
        if (name, message) in seen:  # unions report the same miss once per member
            continue
        seen.add((name, message))
        problems.append(Problem(message, where, name))
    problems.sort(key=lambda p: (p.location.line, p.location.column) if p.location else (0, 0))
    return problems


def validate_located(model: type[BaseModel], data: Any, locate: Locator) -> Any:
    """``model.model_validate(data)``; failures become one :class:`ConfigError`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(problems_from_validation(exc, model, locate)) from exc
