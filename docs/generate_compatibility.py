"""Generate the compatibility table of the built-in profiles from the matrix's results.

    python docs/generate_compatibility.py --results compat-results.jsonl  # merge a run, rewrite
    python docs/generate_compatibility.py           # rewrite the page from the committed data
    python docs/generate_compatibility.py --check   # exit 1 if the page or data are stale
    python docs/generate_compatibility.py --times compat-results.jsonl    # what the run took

The matrix (``pytest -m compat``, tests/compat) writes one JSON line per scenario of each
row (an agent as root, or as the unprivileged account). A run merges into
``docs/reference/compatibility.json`` row by row (a row run at another version replaces the
old one; a partial run keeps the cells it did not run), and the page
``docs/reference/compatibility.md`` is rendered from that data and from the profiles'
``checked:`` keys. :func:`problems` is the rule the test suite holds the profiles to: a
profile that says ``checked: V`` has both rows at version V, each cell passed or impossible
for a stated reason, and V is its pinned package's version.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "reference"
DATA = HERE / "compatibility.json"
PAGE = HERE / "compatibility.md"
SCENARIOS = (
    "start",
    "doctor",
    "plain",
    "read",
    "edit",
    "terminal",
    "refused",
    "cancel",
    "follow-up",
    "resume",
)
ACCOUNTS = ("root", "user")
GREEN = ("pass", "impossible", "not-offered")
SIGNS = {"pass": "✓", "fail": "✗", "impossible": "—", "not-offered": "—"}


def read_results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_data() -> dict[str, Any]:
    if DATA.is_file():
        data: dict[str, Any] = json.loads(DATA.read_text())
        return data
    return {"agents": {}, "rows": []}


def merge(data: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """``data`` with a run's results merged in, row by row."""
    rows = {(row["agent"], row["account"]): row for row in data["rows"]}
    agents = dict(data["agents"])
    for record in results:
        if record.get("kind") == "agent":
            agents[record["agent"]] = {
                key: record[key] for key in ("api", "env", "host_env", "files", "rules")
            }
        if record.get("kind") != "cell":
            continue
        key = (record["agent"], record["account"])
        row = rows.get(key)
        if row is None or row["version"] != record["version"]:
            row = rows[key] = {
                "agent": record["agent"],
                "account": record["account"],
                "version": record["version"],
                "protocol": None,
                "cells": {},
            }
        if record.get("protocol") is not None:
            row["protocol"] = record["protocol"]
        row["cells"][record["scenario"]] = {"outcome": record["outcome"], "note": record["note"]}
    ordered = sorted(rows.values(), key=lambda row: (row["agent"], ACCOUNTS.index(row["account"])))
    return {"agents": dict(sorted(agents.items())), "rows": ordered}


def builtin_profiles() -> dict[str, dict[str, Any]]:
    """Each built-in profile's ``checked`` and pinned version (from the package itself)."""
    sys.path.insert(0, str(HERE.parent.parent))
    from acp_bridge.config import load_config

    config = load_config(None, search=False, environ={"HOME": str(Path.home())})
    found = {}
    for name in config.profiles.names():
        profile = config.profiles.get(name).profile
        version = profile.package.version if profile.package is not None else None
        found[name] = {"checked": profile.checked, "pinned": version}
    return found


def problems(data: dict[str, Any], profiles: dict[str, dict[str, Any]]) -> list[str]:
    """Why a profile may not say ``checked`` (empty: every claim holds)."""
    found = []
    rows = {(row["agent"], row["account"]): row for row in data["rows"]}
    for name, profile in sorted(profiles.items()):
        checked = profile["checked"]
        if checked is None:
            continue
        if profile["pinned"] is not None and checked != profile["pinned"]:
            found.append(
                f"{name}: checked {checked}, but its package is pinned at {profile['pinned']}"
            )
        for account in ACCOUNTS:
            row = rows.get((name, account))
            if row is None:
                found.append(f"{name}: checked {checked}, but the table has no {account} row")
                continue
            if row["version"].split(" ")[0] != checked:
                found.append(
                    f"{name}: checked {checked}, but its {account} row is {row['version']}"
                )
            for scenario in SCENARIOS:
                cell = row["cells"].get(scenario)
                if cell is None or cell["outcome"] not in GREEN:
                    what = "not run" if cell is None else f"red: {cell['note']}"
                    found.append(f"{name}: checked {checked}, but {account} {scenario} is {what}")
    return found


def render(data: dict[str, Any], profiles: dict[str, dict[str, Any]]) -> str:
    notes: dict[str, int] = {}

    def sign(cell: dict[str, Any] | None) -> str:
        if cell is None:
            return "?"
        mark = SIGNS.get(cell["outcome"], "?")
        note = cell["note"] if cell["outcome"] != "not-offered" else f"not offered: {cell['note']}"
        if not note:
            return mark
        number = notes.setdefault(note, len(notes) + 1)
        return f"{mark} [{number}](#note-{number})"

    lines = [
        "# Reference: compatibility of the built-in profiles",
        "",
        "<!-- Generated by docs/generate_compatibility.py from compatibility.json, the merged",
        "results of the matrix (tests/compat): do not edit by hand. -->",
        "",
        "Every built-in profile, installed by `acp-bridge agents install` at its pinned version",
        "and run through `acp-bridge` as a user runs it, under the **default sandbox and the",
        "default policy**, against the fake model endpoint on 127.0.0.1 (`tests/fake_models.py`),",
        "as root and as an unprivileged account (`user`), each with HOME where users have it.",
        "How to run it: [the README](../../README.md#compatibility-matrix); what each scenario",
        "does: `tests/compat/test_matrix.py`.",
        "",
        "✓ passed, ✗ failed, — impossible offline or not offered (the note says why), ? not run.",
        "**checked** is the profile's `checked:` key: the version the matrix proved, every cell",
        "✓ or — in both rows (a test holds the profiles to it).",
        "",
        "| agent | version | checked | protocol | as | " + " | ".join(SCENARIOS) + " |",
        "|---|---|---|---|---|" + "---|" * len(SCENARIOS),
    ]
    for row in data["rows"]:
        checked = profiles.get(row["agent"], {}).get("checked") or ""
        cells = [sign(row["cells"].get(scenario)) for scenario in SCENARIOS]
        protocol = "" if row["protocol"] is None else str(row["protocol"])
        lines.append(
            f"| {row['agent']} | {row['version']} | {checked} | {protocol} | {row['account']} | "
            + " | ".join(cells)
            + " |"
        )
    lines += ["", "## Notes", ""]
    for note, number in notes.items():
        lines.append(f'<a id="note-{number}"></a>{number}. {note}')
        lines.append("")
    lines += [
        "## What each row adds to the built-in profile",
        "",
        "Only what a user adds: the model endpoint and key (in the config's `env`, in the shell,",
        "or in a config file of the agent's own), and rules where a scenario needs them:",
        "`terminal` adds the row's rules (none where its profile allows commands already);",
        "`follow-up` adds `timeouts: {idle: 120}` (the agent is kept for the follow-up). The",
        "fake endpoint's URL is `http://127.0.0.1:PORT`.",
        "",
        "| agent | model API | config `env` | shell | files | `terminal` rules |",
        "|---|---|---|---|---|---|",
    ]

    def names(items: list[str]) -> str:
        return ", ".join(f"`{item}`" for item in items) or ""

    for name, agent in data["agents"].items():
        rules = ", ".join("`" + json.dumps(rule).replace('"', "") + "`" for rule in agent["rules"])
        lines.append(
            f"| {name} | {agent['api']} | {names(agent['env'])} | {names(agent['host_env'])} | "
            f"{names(agent['files'])} | {rules} |"
        )
    lines.append("")
    return "\n".join(lines)


def times(results: list[dict[str, Any]]) -> str:
    """What a run took: installs (fresh ones counted apart) and each row's scenarios."""
    out = []
    installs = [r for r in results if r.get("kind") == "install"]
    fresh = [r for r in installs if r["fresh"]]
    out.append(
        f"installs: {len(installs)}, {len(fresh)} fresh taking "
        f"{sum(r['seconds'] for r in fresh):.0f} s in all"
    )
    out += [f"  {r['agent']} as {r['account']}: {r['seconds']:.0f} s" for r in fresh]
    per_row: dict[tuple[str, str], float] = defaultdict(float)
    for record in results:
        if record.get("kind") == "cell":
            per_row[(record["agent"], record["account"])] += record["seconds"]
    out.append(f"scenarios: {sum(per_row.values()):.0f} s of runs in all (before parallelism)")
    out += [
        f"  {agent} as {account}: {sec:.0f} s" for (agent, account), sec in sorted(per_row.items())
    ]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, help="a matrix run's results file to merge in")
    parser.add_argument("--check", action="store_true", help="exit 1 if anything is stale")
    parser.add_argument("--times", type=Path, help="print what a run's results file took")
    options = parser.parse_args()
    if options.times:
        print(times(read_results(options.times)))
        return 0
    data = load_data()
    if options.results:
        data = merge(data, read_results(options.results))
    profiles = builtin_profiles()
    wanted = {
        DATA: json.dumps(data, indent=1, ensure_ascii=False) + "\n",
        PAGE: render(data, profiles),
    }
    stale = [
        path for path, text in wanted.items() if not path.is_file() or path.read_text() != text
    ]
    if options.check:
        for path in stale:
            print(
                f"{path} is out of date: run python docs/generate_compatibility.py", file=sys.stderr
            )
        for problem in problems(data, profiles):
            print(f"a profile's checked: is not proved: {problem}", file=sys.stderr)
        return 1 if stale or problems(data, profiles) else 0
    for path in stale:
        path.write_text(wanted[path])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
