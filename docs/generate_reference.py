"""Generate the reference pages that must never drift from the code.

    python docs/generate_reference.py          # rewrite docs/reference/{config-keys,cli,api}.md
    python docs/generate_reference.py --check  # exit 1 if they are out of date (CI, tests)

Every config key comes from the pydantic models (type, default, limits, description); every
command and option from the argument parser; the Python API from the signatures, docstrings
and options models (``api_reference.py``). Edit those, not the generated pages.
"""

from __future__ import annotations

import argparse
import os
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from acp_bridge.cli._parser import build_parser
from acp_bridge.config import AgentProfile, Config

sys.path.insert(0, str(Path(__file__).parent))
from api_reference import FilingError, api  # beside this script, not in a package

HERE = Path(__file__).parent / "reference"
_MODEL_TYPES = (BaseModel,)


def _type_name(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args if a is not type(None)) + (
            " or null" if type(None) in args else ""
        )
    if origin is list:
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"mapping of {_type_name(args[0])} to {_type_name(args[1])}" if args else "mapping"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    return {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )


def _limits(info: FieldInfo) -> str:
    words = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤", "min_length": "length ≥"}
    found = []
    for item in info.metadata:
        for name, sign in words.items():
            value = getattr(item, name, None)
            if value is not None:
                found.append(f"{sign} {value:g}" if isinstance(value, float) else f"{sign} {value}")
    return ", ".join(found)


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value: Any = info.default_factory()  # type: ignore[call-arg]
        if isinstance(value, BaseModel):
            return "(see below)"
    elif info.default is PydanticUndefined:
        return "required"
    else:
        value = info.default
    if value is None:
        return "none"
    return f"`{value}`" if not isinstance(value, list | dict) or value else "empty"


def _nested_model(annotation: Any) -> tuple[type[BaseModel], str] | None:
    """The model a field holds (directly, in a list, or as mapping values) and how its keys
    are spelled below the field."""
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate, "."
        origin, args = get_origin(candidate), get_args(candidate)
        inner = args[-1] if args else None
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            if origin is list:
                return inner, "[]."
            if origin is dict:
                return inner, ".<name>."
    return None


def _rows(model: type[BaseModel], prefix: str) -> list[str]:
    rows, nested = [], []
    for name, info in model.model_fields.items():
        key = f"{prefix}{name}"
        limits = _limits(info)
        description = (info.description or "").replace("\n", " ").replace("|", "\\|")
        if limits:
            description = f"{description} ({limits})" if description else f"({limits})"
        rows.append(
            f"| `{key}` | {_type_name(info.annotation)} | {_default(info)} | {description} |"
        )
        inner = _nested_model(info.annotation)
        if inner is not None:
            nested.append((inner[0], f"{key}{inner[1]}"))
    for inner, inner_prefix in nested:
        rows += _rows(inner, inner_prefix)
    return rows


def config_keys() -> str:
    head = "| key | type | default | meaning |\n|---|---|---|---|"
    return "\n".join(
        [
            "# Reference: every configuration key",
            "",
            "Generated from the models by `docs/generate_reference.py`; do not edit by hand.",
            "How the file is found and how profiles layer: "
            "[how-to/configure.md](../how-to/configure.md).",
            "",
            "## The config file",
            "",
            "`acp.agents` is a list of agent profiles (next section).",
            "",
            head,
            *[r for r in _rows(Config, "") if not r.startswith("| `acp.agents")],
            "",
            "## An agent profile",
            "",
            "A profile file under `profiles_dirs`, or an entry of `acp.agents`.",
            "",
            head,
            *_rows(AgentProfile, ""),
            "",
        ]
    )


def _options(parser: argparse.ArgumentParser) -> list[str]:
    lines = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        flags = (
            ", ".join(f"`{o}`" for o in action.option_strings)
            or f"`{action.metavar or action.dest}`"
        )
        if action.metavar and action.option_strings:
            flags += f" {action.metavar}"
        default = (
            f" (default: `{action.default}`)"
            if action.default not in (None, False, argparse.SUPPRESS)
            else ""
        )
        lines.append(f"- {flags}: {action.help or ''}{default}")
    return lines


def cli() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps usage lines at the terminal's width
    parser = build_parser()
    out = [
        "# Reference: the command line",
        "",
        "Generated from the argument parser by `docs/generate_reference.py`; do not edit.",
        "",
        "```",
        parser.format_usage().strip(),
        "```",
        "",
        *_options(parser),
    ]
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            out += ["", f"## `acp-bridge {name}`", "", sub.description or "", ""]
            out += ["```", sub.format_usage().strip(), "```", "", *_options(sub)]
            for inner in sub._actions:
                if isinstance(inner, argparse._SubParsersAction):
                    for inner_name, leaf in inner.choices.items():
                        out += ["", f"### `acp-bridge {name} {inner_name}`", ""]
                        out += [leaf.description or "", "", "```", leaf.format_usage().strip()]
                        out += ["```", "", *_options(leaf)]
    return "\n".join(out).replace("\n\n\n", "\n\n") + "\n"


PAGES = {"config-keys.md": config_keys, "cli.md": cli, "api.md": lambda: api(_type_name)}


def main(argv: list[str]) -> int:
    stale = []
    for name, render in PAGES.items():
        try:
            text = render()
        except FilingError as exc:
            print(f"cannot make {name}: {exc}", file=sys.stderr)
            return 1
        path = HERE / name
        if "--check" in argv:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            path.write_text(text)
    if stale:
        print("out of date (run python docs/generate_reference.py):", *stale, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
