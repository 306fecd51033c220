"""A built-in profile's ``checked:`` is a claim the compatibility matrix proved: both of its
rows in ``docs/reference/compatibility.json`` are at that version with no red cell, and it is
the pinned package's version. The page is rendered from that data (never stale), and the
matrix has a row for every built-in profile."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from acp_bridge.config import load_config
from tests.compat.agents import AGENTS, SCENARIOS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "generate_compatibility", DOCS / "generate_compatibility.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(agent: str, account: str, version: str, **outcomes: str) -> dict[str, Any]:
    cells = {scenario: {"outcome": "pass", "note": ""} for scenario in SCENARIOS}
    cells |= {
        scenario.replace("_", "-"): {"outcome": o, "note": "why"}
        for scenario, o in outcomes.items()
    }
    return {"agent": agent, "account": account, "version": version, "protocol": 1, "cells": cells}


def test_the_page_and_its_data_are_current_and_every_checked_claim_holds() -> None:
    done = subprocess.run(
        [sys.executable, str(DOCS / "generate_compatibility.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_a_checked_profile_with_a_red_or_missing_cell_is_refused() -> None:
    problems = generator().problems
    profile = {"claude": {"checked": "1.0.0", "pinned": "1.0.0"}}
    green = {"agents": {}, "rows": [row("claude", "root", "1.0.0"), row("claude", "user", "1.0.0")]}
    assert problems(green, profile) == []
    impossible = row("claude", "user", "1.0.0", resume="impossible", follow_up="not-offered")
    assert problems({"agents": {}, "rows": [green["rows"][0], impossible]}, profile) == []

    red = {"agents": {}, "rows": [green["rows"][0], row("claude", "user", "1.0.0", edit="fail")]}
    (found,) = problems(red, profile)
    assert found == "claude: checked 1.0.0, but user edit is red: why"

    unrun = row("claude", "user", "1.0.0")
    del unrun["cells"]["cancel"]
    (found,) = problems({"agents": {}, "rows": [green["rows"][0], unrun]}, profile)
    assert found == "claude: checked 1.0.0, but user cancel is not run"

    (found,) = problems({"agents": {}, "rows": [green["rows"][0]]}, profile)
    assert found == "claude: checked 1.0.0, but the table has no user row"

    bumped = {"claude": {"checked": "1.0.0", "pinned": "1.1.0"}}
    assert problems(green, bumped) == ["claude: checked 1.0.0, but its package is pinned at 1.1.0"]
    older = {"agents": {}, "rows": [row("claude", "root", "0.9.0"), green["rows"][1]]}
    assert problems(older, profile) == ["claude: checked 1.0.0, but its root row is 0.9.0"]
    assert problems(red, {"claude": {"checked": None, "pinned": "1.0.0"}}) == []


def test_the_table_has_a_column_for_every_scenario_of_the_matrix() -> None:
    assert generator().SCENARIOS == SCENARIOS


def test_the_matrix_has_a_row_for_every_builtin_profile() -> None:
    builtin = set(load_config(None, search=False, environ={}).profiles.names())
    assert set(AGENTS) == builtin


def test_a_run_differs_from_the_table_by_its_claims_and_a_reworded_note_is_only_named() -> None:
    module = generator()
    committed = {"agents": {}, "rows": [row("claude", "root", "1.0.0", edit="impossible")]}

    def cell(scenario: str, outcome: str, note: str, version: str = "1.0.0") -> dict[str, Any]:
        return {
            "kind": "cell",
            "agent": "claude",
            "account": "root",
            "scenario": scenario,
            "outcome": outcome,
            "note": note,
            "version": version,
            "protocol": 1,
        }

    reworded = module.merge(committed, [cell("edit", "impossible", "put otherwise")])
    assert module.claim_changes(committed, reworded) == (
        [],
        ["claude as root edit: note 'why' -> 'put otherwise'"],
    )
    assert committed["rows"][0]["cells"]["edit"]["note"] == "why", "merge copies"
    red = module.merge(committed, [cell("plain", "fail", "broke")])
    assert module.claim_changes(committed, red) == (["claude as root plain: pass -> fail"], [])
    newer = module.merge(committed, [cell("plain", "pass", "", version="1.1.0")])
    claims, _ = module.claim_changes(committed, newer)
    assert claims[0] == "claude as root: version 1.0.0 -> 1.1.0"
    assert "claude as root edit: impossible -> None" in claims
