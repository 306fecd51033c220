"""The Python API page (``docs/reference/api.md``), made from the code: every name in
``acp_bridge.__all__``, filed in the section of its concept, with its signature and the first
paragraph of its own docstring, and each options model's options. Used by
``generate_reference.py``.

The page is the public API's table of contents, so it refuses to be incomplete:
:func:`filing_problems` lists every exported name filed in no section, every filed name that
is not exported, and every name without a docstring of its own (a class that has none would
show its base's, such as ``typing.Protocol``'s "Base class for protocol classes.");
:func:`api` raises :class:`FilingError` with them, and the generator then fails.
"""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import json
import re
import typing
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import typing_extensions

import acp_bridge
from acp_bridge._compare.compare_options import NOT_FOR_COMPARE
from acp_bridge._entries.options import options_of


class Section(NamedTuple):
    """One public concept: its heading, a sentence on what it is for, and its names."""

    title: str
    intro: str
    names: tuple[str, ...]


SECTIONS: tuple[Section, ...] = (
    Section(
        "Entry points",
        "The four ways to run a subtask, each returning one envelope (a `SubtaskResult`) and "
        "each with a blocking `_sync` form; `run_entry` runs any of them from an "
        "`EntryRequest`, the shape every front end uses.",
        ("acp_spawn", "acp_spawn_sync", "bash", "bash_sync", "spawn", "spawn_sync", "ask",
         "ask_sync", "run_entry", "EntryRequest", "CommandResult"),
    ),
    Section(
        "Entry options",
        "Each entry's keyword options, declared once in its options model: the Python API "
        "takes them as keywords, `EntryRequest` as fields, and the command line, the MCP "
        "tools and the loop's built-in tools offer the subset shown.",
        ("AcpSpawnOptions", "BashOptions", "SpawnOptions", "AskOptions"),
    ),
    Section(
        "The envelope",
        "What every run returns, whatever happened: `SubtaskResult` and the records in its "
        "`meta` (the keys and error codes: [envelope.md](envelope.md)).",
        ("SubtaskResult", "Meta", "Status", "OutputKind", "Entry", "PermissionRecord",
         "ToolCallRecord", "TerminalRecord", "RefusalRecord", "ElicitationRecord"),
    ),
    Section(
        "Events",
        "What a run reports while it runs, to its `on_event` handler, filtered by an observe "
        "profile.",
        ("Event", "EventKind", "EventHandler", "ObserveProfile"),
    ),
    Section(
        "Permission and elicitation hooks",
        "How a host answers an ACP agent's questions during a run: the permission requests "
        "its profile's rules leave to `ask`, and the questions it asks the user.",
        ("PermissionHook", "PermissionQuestion", "PermissionOption", "ElicitationHook",
         "ElicitationQuestion", "ElicitationAnswer"),
    ),
    Section(
        "Durable runs",
        "The run store records every run of every entry: `start_run` starts one detached (it "
        "outlives its caller), and a `RunHandle` waits for, follows, stops or continues any "
        "run by id, from any process.",
        ("start_run", "start_run_sync", "RunOptions", "RunHandle", "RunEvent", "RunRecord",
         "RunStatus", "open_run", "list_runs"),
    ),
    Section(
        "Batches and executors",
        "Many requests at once, one envelope each in their order, on an executor: this "
        "process (`LocalExecutor`) or a Ray cluster (`RayExecutor`).",
        ("batch", "batch_sync", "BatchTask", "Workspace", "Executor", "LocalExecutor",
         "RayExecutor"),
    ),
    Section(
        "Compare",
        "One task on several agents, each attempt in a worktree of its own, optionally "
        "verified; the winner picked, its changes applied on request.",
        ("compare", "compare_sync", "CompareOptions", "CompareResult", "AttemptResult",
         "VerifierResult"),
    ),
    Section(
        "Configuration and profiles",
        "The config file and the agent profiles, loaded and checked (every key: "
        "[config-keys.md](config-keys.md)).",
        ("load_config", "LoadedConfig", "Config", "AgentProfile", "ToolKind"),
    ),
    Section(
        "Tools for a host loop",
        "The tools a host's own model loop (and `spawn`, `ask`) may call, and the output "
        "schemas an answer may be held to.",
        ("ToolRegistry", "ToolSet", "Tool", "Selection", "SchemaRegistry"),
    ),
    Section(
        "Errors",
        "The one exception tree, `BridgeError` and below (each error's `code` is an "
        "`ErrorCode`, the envelope's `meta.error_code`), and the parts of a `ConfigError`.",
        ("BridgeError", "ConfigError", "ProfileError", "UnknownProfileError", "NotOffered",
         "DirtyWorkingTree", "StateDirError", "DepthLimitError", "OutputSchemaError",
         "SandboxViolation", "LimitExceeded", "RunTimeout", "RunCancelled", "RunStoreError",
         "TurnLimitError", "ExecutorError", "NodeLost", "ModelError", "AgentError",
         "SpawnError", "AgentExitedError", "ProtocolError", "AuthRequiredError",
         "AgentRequestError", "ErrorCode", "Problem", "SourceLocation"),
    ),
    Section("The package", "", ("__version__",)),
)  # fmt: skip
"""Every public name, filed once by concept; :func:`filing_problems` keeps it complete."""

OPTIONS_MODELS = {"RunOptions"}
"""Options models that are no typed dicts (the run layer's): listed as a table of options too."""
ADDED_TO = {"CompareOptions": ("AcpSpawnOptions", NOT_FOR_COMPARE)}
"""Options models that add to another's: their tables list only their own options."""


class FilingError(Exception):
    """The page cannot be made: a public name is unfiled, filed twice, not exported or
    undocumented (the message lists each)."""


def filing_problems() -> list[str]:
    """What keeps :data:`SECTIONS` from being the public API, one line each (none: it is)."""
    filed = [name for section in SECTIONS for name in section.names]
    exported = set(acp_bridge.__all__)
    problems = [f"{n}: exported but filed in no section" for n in sorted(exported - set(filed))]
    problems += [f"{n}: filed but not exported" for n in sorted(set(filed) - exported)]
    problems += [f"{n}: filed twice" for n in sorted({n for n in filed if filed.count(n) > 1})]
    problems += [
        f"{n}: no docstring of its own" for n in filed if n in exported and not _own_doc(n)
    ]
    return problems


def _statements(body: list[ast.stmt]) -> Iterator[tuple[ast.stmt, ast.stmt | None]]:
    """A module's statements with the one after each, those under ``if`` (``TYPE_CHECKING``)
    included."""
    for index, node in enumerate(body):
        yield node, body[index + 1] if index + 1 < len(body) else None
        if isinstance(node, ast.If):
            yield from _statements(node.body)


def _assignment(module_name: str, name: str) -> tuple[str, str] | None:
    """Where ``name`` is assigned (a type alias, a value): the assignment as written, and the
    string right after it (its attribute docstring), found through the imports from
    ``module_name``."""
    source = inspect.getsource(importlib.import_module(module_name))
    tree = ast.parse(source)
    for node, following in _statements(tree.body):
        imported = isinstance(node, ast.ImportFrom) and node.module and node.level == 0
        if imported and any(a.name == name and a.asname in (None, name) for a in node.names):
            return _assignment(node.module, name)
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            assert isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            doc = ""
            if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
                doc = str(following.value.value)
            return ast.get_source_segment(source, node) or "", doc
    return None


def _is_alias(obj: Any) -> bool:
    """A type alias or a plain value: no docstring of its own at run time."""
    return not inspect.isclass(obj) and not inspect.isroutine(obj)


def _own_doc(name: str) -> str:
    """``name``'s own docstring, never one inherited from a base class."""
    obj = getattr(acp_bridge, name)
    if _is_alias(obj):
        found = _assignment("acp_bridge", name)
        text = found[1] if found else ""
    elif inspect.isclass(obj):
        text = obj.__dict__.get("__doc__") or ""
    else:
        text = obj.__doc__ or ""
    return inspect.cleandoc(text)


def _paragraph(name: str) -> str:
    """The first paragraph of ``name``'s own docstring, Sphinx roles as code."""
    text = " ".join(_own_doc(name).split("\n\n")[0].split())
    return re.sub(r":\w+:`~?([\w.]+)`", lambda m: f"`{m.group(1).split('.')[-1]}`", text)


class _Shown:
    """An annotation as written (postponed annotations are strings): shown without quotes."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _unquoted(annotation: Any) -> Any:
    if isinstance(annotation, typing.ForwardRef):  # a named tuple's postponed annotation
        return _Shown(annotation.__forward_arg__)
    return _Shown(annotation) if isinstance(annotation, str) else annotation


MODULE_PATH = re.compile(r"\b(?:acp_bridge\.[\w.]*|typing|collections\.abc|pathlib)\.(?=\w)")
"""Where a type shown in full comes from: left out (the page names types as the code does)."""


def _signature(name: str, obj: Any) -> str:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return name
    parameters = [
        p.replace(annotation=_unquoted(p.annotation)) for p in signature.parameters.values()
    ]
    shown = signature.replace(
        parameters=parameters, return_annotation=_unquoted(signature.return_annotation)
    )
    text = re.sub(r" at 0x[0-9a-f]+", "", str(shown))  # no addresses: the page must be stable
    text = MODULE_PATH.sub("", text)
    return f"{name}{text}"


def _protocol(name: str, obj: Any) -> list[str]:
    """A protocol as the members a class must have to be one."""
    lines = [f"class {name}(Protocol):"]
    hints = getattr(obj, "__annotations__", {})
    for member in sorted(typing_extensions.get_protocol_members(obj)):
        if member in hints:
            lines.append(f"    {member}: {hints[member]}")
        else:
            lines.append(f"    def {_signature(member, getattr(obj, member))}")
    return lines


def _code(name: str) -> list[str]:
    """How ``name`` is written: a signature, a protocol's members, an alias's value."""
    obj = getattr(acp_bridge, name)
    if _is_alias(obj):
        found = _assignment("acp_bridge", name)
        # Not the version's value: the page would go stale with every release.
        return [found[0]] if found and name != "__version__" else []
    if inspect.isclass(obj) and getattr(obj, "_is_protocol", False):
        return _protocol(name, obj)
    if inspect.isclass(obj) and issubclass(obj, enum.Enum):
        return [f"class {name}({obj.__mro__[1].__name__}):"] + [
            f"    {member.name} = {json.dumps(member.value)}" for member in obj
        ]
    return [_signature(name, obj)]


def _entry(name: str) -> list[str]:
    obj = getattr(acp_bridge, name)
    lines = [f"### `{name}`", ""]
    fields = getattr(obj, "model_fields", None) if inspect.isclass(obj) else None
    if fields is not None:  # a pydantic model: its fields (the config's are in config-keys.md)
        lines += ["Fields: " + ", ".join(f"`{field}`" for field in fields), ""]
    elif code := _code(name):
        lines += ["```python", *code, "```", ""]
    return [*lines, _paragraph(name), ""]


def _options(name: str, show: Callable[[Any], str]) -> list[str]:
    model = getattr(acp_bridge, name)
    options = options_of(model)
    lines = [f"### `{name}`", "", _paragraph(name), ""]
    if name in ADDED_TO:
        base, left_out = ADDED_TO[name]
        inherited = {option.name for option in options_of(getattr(acp_bridge, base))}
        options = tuple(option for option in options if option.name not in inherited)
        lines += [
            f"Every option of `{base}` but "
            + ", ".join(f"`{option}`" for option in left_out)
            + ", and these:",
            "",
        ]
    lines += ["| option | type | default | offered on | description |", "|---|---|---|---|---|"]
    for option in options:
        offer = option.offer
        faces = [f"`{offer.cli}`" if offer.cli else ""] + [
            face for face in ("mcp", "tool") if getattr(offer, face)
        ]
        shown = ", ".join(face for face in ["Python", *faces] if face)
        default = "—" if option.default is None else f"`{option.default!r}`"
        lines.append(
            f"| `{option.name}` | {show(option.annotation)} | {default} | {shown} | "
            f"{option.description} |"
        )
    return [*lines, ""]


def _error_tree(names: tuple[str, ...]) -> list[str]:
    """The exceptions among ``names`` as a nested list under their nearest public base;
    the other names after them."""
    errors = [n for n in names if inspect.isclass(getattr(acp_bridge, n))
              and issubclass(getattr(acp_bridge, n), BaseException)]  # fmt: skip

    def parent(name: str) -> str | None:
        bases = getattr(acp_bridge, name).__mro__[1:]
        return next((b.__name__ for b in bases if b.__name__ in errors), None)

    def branch(name: str, depth: int) -> list[str]:
        lines = [f"{'  ' * depth}- `{name}`: {_paragraph(name)}"]
        for child in (n for n in errors if parent(n) == name):
            lines += branch(child, depth + 1)
        return lines

    lines = [line for root in errors if parent(root) is None for line in branch(root, 0)]
    lines.append("")
    for name in names:
        if name not in errors:
            lines += _entry(name)
    return lines


def api(show: Callable[[Any], str]) -> str:
    """The page; ``show`` names a type (the one the config reference uses).
    :class:`FilingError` when :func:`filing_problems` finds any."""
    problems = filing_problems()
    if problems:
        raise FilingError("docs/api_reference.py SECTIONS: " + "; ".join(problems))
    out = [
        "# Reference: the Python API",
        "",
        "Generated from the code by `docs/generate_reference.py` (signatures, the first",
        "paragraph of each docstring, the options models); do not edit. The public API is",
        "`acp_bridge.__all__`, every name of it filed below under its concept; every module",
        "whose name starts with `_` is private. The whole docstrings: `.venv/bin/pdoc",
        "acp_bridge` (CI builds it on every change).",
        "",
        *(f"- [{s.title}](#{s.title.lower().replace(' ', '-')})" for s in SECTIONS),
        "",
    ]
    for section in SECTIONS:
        out += [f"## {section.title}", ""]
        out += [section.intro, ""] if section.intro else []
        if section.title == "Errors":
            out += _error_tree(section.names)
            continue
        for name in section.names:
            obj = getattr(acp_bridge, name)
            options = name in OPTIONS_MODELS or (
                inspect.isclass(obj) and typing_extensions.is_typeddict(obj)
            )
            out += _options(name, show) if options else _entry(name)
    return "\n".join(out).replace("\n\n\n", "\n\n") + "\n"
