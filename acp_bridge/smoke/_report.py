"""What a smoke run leaves behind: JUnit XML for CI, a JSON report with every envelope, and
the summary table people read.

The JUnit XML follows the Jenkins xunit plugin's ``junit-10.xsd`` (the tests validate
against it): one ``<testsuite>`` per suite file, one ``<testcase>`` per case run; unmet
expectations are ``<failure>``, cases that could not run ``<error>``, skipped ones
``<skipped>``; the envelope goes into ``<system-out>``.
"""

from __future__ import annotations

import json
import os
import socket
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp_bridge.smoke._runner import CaseOutcome


@dataclass(frozen=True)
class RunInfo:
    started: datetime
    duration: float
    suites: list[Path]
    interrupted: bool = False


def totals(outcomes: Sequence[CaseOutcome]) -> Counter[str]:
    counts: Counter[str] = Counter(o.verdict for o in outcomes)
    counts["total"] = len(outcomes)
    return counts


def _seconds(value: float) -> str:
    return f"{value:.3f}"  # the schema allows at most three decimals


def _case_element(outcome: CaseOutcome) -> ET.Element:
    run = outcome.run
    element = ET.Element(
        "testcase",
        {
            "name": run.name,
            "classname": f"{run.suite.name}.{run.case.entry}",
            "time": _seconds(outcome.duration),
        },
    )
    detail = "\n".join(outcome.failures)
    if outcome.verdict == "failed":
        ET.SubElement(
            element, "failure", {"type": "expectation", "message": outcome.reason}
        ).text = detail
    elif outcome.verdict == "error":
        ET.SubElement(element, "error", {"type": "error", "message": outcome.reason}).text = detail
    elif outcome.verdict == "skipped":
        ET.SubElement(element, "skipped", {"message": outcome.reason})
    if outcome.envelope is not None:
        ET.SubElement(element, "system-out").text = outcome.envelope.to_json(indent=2)
    return element


def junit_xml(outcomes: Sequence[CaseOutcome], info: RunInfo) -> bytes:
    root = ET.Element("testsuites", {"name": "acp-bridge smoke", "time": _seconds(info.duration)})
    by_suite: dict[Path, list[CaseOutcome]] = {}
    for outcome in outcomes:
        by_suite.setdefault(outcome.run.suite.path, []).append(outcome)
    hostname = socket.gethostname()
    for path, group in by_suite.items():
        counts = totals(group)
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": group[0].run.suite.name,
                "tests": str(counts["total"]),
                "failures": str(counts["failed"]),
                "errors": str(counts["error"]),
                "skipped": str(counts["skipped"]),
                "time": _seconds(sum(o.duration for o in group)),
                "timestamp": info.started.strftime("%Y-%m-%dT%H:%M:%S"),
                "hostname": hostname,
                "file": os.path.relpath(path) if path.is_absolute() else str(path),
            },
        )
        for outcome in group:
            suite.append(_case_element(outcome))
    counts = totals(outcomes)
    root.set("tests", str(counts["total"]))
    root.set("failures", str(counts["failed"]))
    root.set("errors", str(counts["error"]))
    ET.indent(root)
    return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True)) + b"\n"


def json_report(outcomes: Sequence[CaseOutcome], info: RunInfo) -> dict[str, Any]:
    return {
        "started": info.started.astimezone(UTC).isoformat(),
        "duration_s": round(info.duration, 3),
        "interrupted": info.interrupted,
        "suites": [str(p) for p in info.suites],
        "totals": dict(totals(outcomes)),
        "cases": [
            {
                "id": o.run.id,
                "suite": o.run.suite.name,
                "case": o.run.case.name,
                "agent": o.run.agent,
                "entry": o.run.case.entry,
                "verdict": o.verdict,
                "failures": o.failures,
                "duration_s": round(o.duration, 3),
                "workspace": str(o.workspace) if o.workspace and o.workspace.exists() else None,
                "envelope": o.envelope.to_dict() if o.envelope else None,
            }
            for o in outcomes
        ],
    }


def write_report(path: Path, data: bytes) -> None:
    """Write atomically: a failed write leaves an older report intact."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_bytes(data)
    temp.replace(path)


def summary_lines(
    outcomes: Sequence[CaseOutcome], info: RunInfo, shown: Callable[[str], str] = str
) -> list[str]:
    """The table people read at the end of a run; ``shown`` writes a case's name and
    reason for where the table goes (the CLI: on one line, controls made visible)."""
    width = max((len(shown(o.run.id)) for o in outcomes), default=4)
    lines = [f"{'CASE':<{width}}  {'RESULT':<7}  {'TIME':>7}  DETAIL"]
    for o in outcomes:
        name, reason = shown(o.run.id), shown(o.reason)
        lines.append(f"{name:<{width}}  {o.verdict.upper():<7}  {o.duration:>6.2f}s  {reason}")
    counts = totals(outcomes)
    parts = [f"{counts[k]} {k}" for k in ("passed", "failed", "error", "skipped") if counts[k]]
    tail = " (interrupted)" if info.interrupted else ""
    lines.append(
        f"{counts['total']} case(s): {', '.join(parts) or 'none'} in {info.duration:.2f}s{tail}"
    )
    return lines


def report_json_bytes(outcomes: Sequence[CaseOutcome], info: RunInfo) -> bytes:
    return json.dumps(json_report(outcomes, info), indent=2, ensure_ascii=False).encode() + b"\n"
