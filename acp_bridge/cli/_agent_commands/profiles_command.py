"""``acp-bridge profiles …``: list, show (with provenance, secrets redacted), validate,
schema."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from acp_bridge._acp.agent_executable import find_command
from acp_bridge._os.redact import Redactor, shown
from acp_bridge.cli._printing import EXIT_OK, EXIT_USAGE, err, out, out_json
from acp_bridge.cli._safe_text import one_line
from acp_bridge.config import (
    LoadedConfig,
    config_json_schema,
    load_config,
    profile_json_schema,
    schema_problems,
    validate_files,
)
from acp_bridge.config._yaml.located import field_name
from acp_bridge.errors import ConfigError, Problem


def load(args: argparse.Namespace) -> LoadedConfig:
    return load_config(args.config)


def cmd_profiles_list(args: argparse.Namespace) -> int:
    loaded = load(args)
    catalog = loaded.profiles
    catalog.resolve_all()
    rows: list[dict[str, Any]] = []
    for name in catalog.names():
        if name in catalog.errors:
            rows.append(_error_row(name, None, catalog.errors[name].problems))
            continue
        profile = catalog.get(name).profile
        rows.append(
            {
                "name": name,
                "installed": find_command(profile) is not None,
                "description": profile.description,
                "command": " ".join([profile.command, *profile.args]),
                "install": profile.install,
            }
        )
    # A file of a profiles folder that is not a profile at all is a row too, by its file.
    rows += [_error_row(None, path, found) for path, found in catalog.unreadable.items()]
    if args.json:
        out_json(rows, pretty=True)
        return EXIT_OK
    width = max((len(r["name"] or r["file"]) for r in rows), default=4)
    out(f"{'NAME':<{width}}  {'READY':<5}  DESCRIPTION")
    for row in rows:
        label = one_line(row["name"] or row["file"])
        if "error" in row:
            first, *more = row["problems"]
            out(f"{label:<{width}}  {'ERROR':<5}  {one_line(first)}")
            for problem in more:  # each problem on its own line, under the first
                out(f"{'':<{width}}  {'':<5}  {one_line(problem)}")
            continue
        ready = "yes" if row["installed"] else "no"
        out(f"{label:<{width}}  {ready:<5}  {one_line(row['description'])}")
    shown = {str(p) for r in rows for p in r.get("problems", [])}
    for problem in loaded.problems:
        if str(problem) not in shown:
            err(f"warning: {problem}")
    config = loaded.path or "none (built-in profiles only)"
    err(f"config: {config}. READY: the agent's command is installed (agents install, or on PATH).")
    return EXIT_OK


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when below it (as problems show it)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _error_row(name: str | None, path: Path | None, problems: list[Problem]) -> dict[str, Any]:
    """A profile (by ``name``) or a file (by ``path``) that cannot be used, with why."""
    texts = [str(p) for p in problems] or ["unusable"]
    return {
        "name": name,
        "file": _shown(path) if path is not None else None,
        "installed": None,
        "description": "",
        "error": texts[0],
        "problems": texts,
    }


def _leaves(
    value: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from _leaves(child, (*path, key))
    else:
        yield path, value


def cmd_profiles_show(args: argparse.Namespace) -> int:
    loaded = load(args)
    resolved = loaded.profiles.get(args.name)
    data = resolved.profile.model_dump(mode="json")
    secrets = Redactor(resolved.profile.secret_values())  # the one redaction policy
    rows: list[tuple[str, Any, str]] = []
    for path, value in _leaves(data):
        source = resolved.source_of(path)
        display = shown(value) if secrets.is_secret(value) else value
        rows.append((field_name(path), display, str(source)))
    if args.json:
        out_json(
            {"profile": {k: v for k, v, _ in rows}, "sources": {k: s for k, _, s in rows}},
            pretty=True,
        )
        return EXIT_OK
    out(f"# profile {resolved.profile.name}; config: {one_line(str(loaded.path or 'none'))}")
    key_width = max(len(k) for k, _, _ in rows)
    value_width = min(48, max(len(json.dumps(v)) for _, v, _ in rows))
    for key, value, where in rows:
        out(
            f"{one_line(key):<{key_width}}  {json.dumps(value):<{value_width}}  # {one_line(where)}"
        )
    return EXIT_OK


def cmd_profiles_validate(args: argparse.Namespace) -> int:
    if not args.files:
        loaded = load(args)
        problems = list(loaded.problems)
        for error in loaded.profiles.resolve_all().values():
            problems.extend(error.problems)
        problems += schema_problems(loaded)
        for problem in problems:
            out(str(problem))
        count = len(loaded.profiles.names())
        where = loaded.path or "no config file"
        err(
            f"{count} profiles checked ({where}): "
            + ("all valid" if not problems else f"{len(problems)} problem(s)")
        )
        return EXIT_USAGE if problems else EXIT_OK

    missing = [f for f in args.files if not f.exists()]
    if missing:
        raise ConfigError([Problem("no such file or directory", field=str(m)) for m in missing])
    results = validate_files(args.files)
    bad = 0
    for path, problems in results.items():
        bad += bool(problems)
        for problem in problems:
            out(str(problem))
        if not problems and args.verbose:
            out(f"{path}: ok")
    err(f"{len(results)} file(s) checked: " + ("all valid" if not bad else f"{bad} with errors"))
    return EXIT_USAGE if bad else EXIT_OK


def cmd_profiles_schema(args: argparse.Namespace) -> int:
    schema = profile_json_schema() if args.profile else config_json_schema()
    out_json(schema, pretty=True)
    return EXIT_OK
