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

``--check --results`` (what CI runs after the matrix) fails when the run's *claims* differ
from the committed data: a row's version or protocol, a cell's outcome, what a row adds to
its profile. A note whose wording alone changed (an error message reworded) is printed, not
failed: the outcome it explains still holds, and a rewording should not need a 13-minute
matrix run before it may land. Every difference is named, so the log says what to commit.
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
    # Copies: ``data`` stays what was committed, for ``--check`` to compare against.
    rows = {
        (row["agent"], row["account"]): {**row, "cells": dict(row["cells"])} for row in data["rows"]
    }
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


def claim_changes(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What differs between two tables: (claims that changed, notes reworded only)."""
    claims: list[str] = []
    notes: list[str] = []
    for name in sorted(set(old["agents"]) | set(new["agents"])):
        if old["agents"].get(name) != new["agents"].get(name):
            claims.append(
                f"{name}: what the row adds: {old['agents'].get(name)} -> {new['agents'].get(name)}"
            )
    before = {(row["agent"], row["account"]): row for row in old["rows"]}
    after = {(row["agent"], row["account"]): row for row in new["rows"]}
    for key in sorted(set(before) | set(after)):
        was, now = before.get(key), after.get(key)
        where = f"{key[0]} as {key[1]}"
        if was is None or now is None:
            claims.append(f"{where}: row {'added' if was is None else 'removed'}")
            continue
        for field in ("version", "protocol"):
            if was[field] != now[field]:
                claims.append(f"{where}: {field} {was[field]} -> {now[field]}")
        for scenario in SCENARIOS:
            old_cell, new_cell = was["cells"].get(scenario), now["cells"].get(scenario)
            old_outcome = None if old_cell is None else old_cell["outcome"]
            new_outcome = None if new_cell is None else new_cell["outcome"]
            if old_outcome != new_outcome:
                claims.append(f"{where} {scenario}: {old_outcome} -> {new_outcome}")
            elif (
                old_cell is not None
                and new_cell is not None
                and old_cell["note"] != new_cell["note"]
            ):
                notes.append(
                    f"{where} {scenario}: note {old_cell['note']!r} -> {new_cell['note']!r}"
                )
    return claims, notes


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


def check(
    committed: dict[str, Any], data: dict[str, Any], profiles: dict[str, dict[str, Any]]
) -> int:
    """1 if a claim changed, the files lag the committed data, or a ``checked:`` is unproved."""
    claims, notes = claim_changes(committed, data)
    for change in claims:
        print(f"the run differs from the committed table: {change}", file=sys.stderr)
    for change in notes:
        print(f"reworded (not a failure): {change}", file=sys.stderr)
    # The committed files must be exactly what the committed data renders to (a hand edit
    # is stale), whatever a run's notes say.
    lagging = _read(DATA) != dumps(committed) or _read(PAGE) != render(committed, profiles)
    if claims or lagging:
        how = " --results RESULTS" if claims else ""
        print(
            f"{PAGE} or {DATA} is out of date: run python docs/generate_compatibility.py{how}",
            file=sys.stderr,
        )
    found = problems(data, profiles)
    for problem in found:
        print(f"a profile's checked: is not proved: {problem}", file=sys.stderr)
    return 1 if claims or lagging or found else 0


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def _read(path: Path) -> str:
    return path.read_text() if path.is_file() else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, help="a matrix run's results file to merge in")
    parser.add_argument("--check", action="store_true", help="exit 1 if anything is stale")
    parser.add_argument("--times", type=Path, help="print what a run's results file took")
    options = parser.parse_args()
    if options.times:
        print(times(read_results(options.times)))
        return 0
    committed = load_data()
    data = merge(committed, read_results(options.results)) if options.results else committed
    profiles = builtin_profiles()
    if options.check:
        return check(committed, data, profiles)
    wanted = {DATA: dumps(data), PAGE: render(data, profiles)}
    stale = [path for path, text in wanted.items() if _read(path) != text]
    for path in stale:
        path.write_text(wanted[path])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
