"""The Python API page (``docs/reference/api.md``), made from the code: every name in
``acp_bridge.__all__`` with its signature and the first paragraph of its docstring, and each
entry's options from its options model. Used by ``generate_reference.py``."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import acp_bridge
from acp_bridge._entries.entry_table import ENTRY_TABLE
from acp_bridge._entries.options import options_of

GROUPS: dict[str, tuple[str, ...]] = {
    "Entry points": (
        "acp_spawn", "acp_spawn_sync", "bash", "bash_sync", "spawn", "spawn_sync", "ask",
        "ask_sync", "run_entry", "EntryRequest", "CommandResult",
    ),
    "Detached runs": (
        "start_run", "start_run_sync", "RunOptions", "RunHandle", "RunEvent", "RunRecord",
        "RunStatus", "open_run", "list_runs",
    ),
    "The envelope": (
        "SubtaskResult", "Meta", "Status", "OutputKind", "Entry", "PermissionRecord",
        "ToolCallRecord", "TerminalRecord", "RefusalRecord", "ElicitationRecord",
    ),
    "Configuration": ("load_config", "LoadedConfig", "Config", "AgentProfile", "ToolKind"),
    "Hooks and events": (
        "Event", "EventKind", "EventHandler", "ObserveProfile", "PermissionHook",
        "PermissionQuestion", "PermissionOption", "ElicitationHook", "ElicitationQuestion",
        "ElicitationAnswer",
    ),
    "Tools for a host loop": ("ToolRegistry", "ToolSet", "Tool", "Selection", "SchemaRegistry"),
}  # fmt: skip
"""Where each public name is listed (errors and options have sections of their own)."""
OPTION_TYPES = {"AcpSpawnOptions": "acp_spawn", "BashOptions": "bash", "SpawnOptions": "spawn",
                "AskOptions": "ask"}  # fmt: skip


def _paragraph(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _signature(name: str, obj: Any) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return name
    text = re.sub(r"'([^']*)'", r"\1", text)  # postponed annotations are strings
    text = re.sub(r" at 0x[0-9a-f]+", "", text)  # no addresses: the page must be stable
    return f"{name}{text}"


def _entry(name: str) -> list[str]:
    obj = getattr(acp_bridge, name)
    kind = "class" if inspect.isclass(obj) else ("function" if callable(obj) else "value")
    lines = [f"### `{name}`", ""]
    fields = getattr(obj, "model_fields", None) if kind == "class" else None
    if fields is not None:  # a pydantic model: its fields (the config's are in config-keys.md)
        lines += ["Fields: " + ", ".join(f"`{field}`" for field in fields), ""]
    elif kind == "function" or (kind == "class" and not name.endswith("Error")):
        lines += ["```python", _signature(name, obj) if callable(obj) else name, "```", ""]
    paragraph = _paragraph(obj) if kind != "value" else ""
    return [*lines, paragraph, ""] if paragraph else lines


def _options(type_name: str, entry: str, show: Callable[[Any], str]) -> list[str]:
    model = ENTRY_TABLE[entry].options
    lines = [f"### `{type_name}`", "", _paragraph(model), ""]
    lines += ["| option | type | default | offered on | description |", "|---|---|---|---|---|"]
    for option in options_of(model):
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


def api(show: Callable[[Any], str]) -> str:
    """The page; ``show`` names a type (the one the config reference uses)."""
    out = [
        "# Reference: the Python API",
        "",
        "Generated from the code by `docs/generate_reference.py` (signatures, the first",
        "paragraph of each docstring, the options models); do not edit. The public API is",
        "`acp_bridge.__all__`; every module whose name starts with `_` is private. The whole",
        "docstrings: `.venv/bin/pdoc acp_bridge` (CI builds it on every change).",
        "",
    ]
    listed: set[str] = set()
    for title, names in GROUPS.items():
        out += [f"## {title}", ""]
        for name in names:
            out += _entry(name)
            listed.add(name)
    out += [
        "## Options",
        "",
        "Each entry's keyword options, declared once in its options model: the Python API "
        "takes them as keywords, `EntryRequest` as fields, and the command line, the MCP "
        "tools and the loop's built-in tools offer the subset shown.",
        "",
    ]
    for type_name, entry in OPTION_TYPES.items():
        out += _options(type_name, entry, show)
        listed.add(type_name)
    errors = sorted(n for n in acp_bridge.__all__ if n not in listed and n != "__version__")
    out += ["## Errors", "", "The one exception tree (`BridgeError` and below):", ""]
    for name in errors:
        obj = getattr(acp_bridge, name)
        out.append(f"- `{name}`: {_paragraph(obj)}")
    return "\n".join(out).replace("\n\n\n", "\n\n") + "\n"
