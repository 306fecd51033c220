"""What a smoke run leaves behind: JUnit XML for CI, a JSON report with every envelope, and
the summary table people read.

The JUnit XML follows the Jenkins xunit plugin's ``junit-10.xsd`` (the tests validate
against it): one ``<testsuite>`` per suite file, one ``<testcase>`` per case run (the
writer, :func:`junit_document`, also serves ``compare``: one case per attempt); unmet
expectations are ``<failure>``, cases that could not run ``<error>``, skipped ones
``<skipped>``; the envelope goes into ``<system-out>``.
"""

from __future__ import annotations

import json
import os
import socket
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp_bridge.smoke._runner import CaseOutcome, CaseVerdict


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


@dataclass(frozen=True)
class JUnitCase:
    """One ``<testcase>``: a smoke case run, a compared attempt (its verifier the test)."""

    name: str
    classname: str
    duration: float
    verdict: CaseVerdict
    reason: str = ""
    detail: str = ""
    output: str = ""
    """Its ``<system-out>`` (an envelope as JSON)."""


@dataclass(frozen=True)
class JUnitSuite:
    """One ``<testsuite>``: its cases, and the file they came from."""

    name: str
    file: str
    cases: Sequence[JUnitCase]


def _case_element(case: JUnitCase) -> ET.Element:
    element = ET.Element(
        "testcase",
        {"name": case.name, "classname": case.classname, "time": _seconds(case.duration)},
    )
    if case.verdict == "failed":
        attributes = {"type": "expectation", "message": case.reason}
        ET.SubElement(element, "failure", attributes).text = case.detail
    elif case.verdict == "error":
        ET.SubElement(
            element, "error", {"type": "error", "message": case.reason}
        ).text = case.detail
    elif case.verdict == "skipped":
        ET.SubElement(element, "skipped", {"message": case.reason})
    if case.output:
        ET.SubElement(element, "system-out").text = case.output
    return element


def junit_document(
    title: str, suites: Sequence[JUnitSuite], started: datetime, duration: float
) -> bytes:
    """The JUnit XML of ``suites`` (the module docstring says which schema)."""
    root = ET.Element("testsuites", {"name": title, "time": _seconds(duration)})
    hostname = socket.gethostname()
    every: list[JUnitCase] = []
    for group in suites:
        counts = _verdicts(group.cases)
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": group.name,
                "tests": str(counts["total"]),
                "failures": str(counts["failed"]),
                "errors": str(counts["error"]),
                "skipped": str(counts["skipped"]),
                "time": _seconds(sum(case.duration for case in group.cases)),
                "timestamp": started.strftime("%Y-%m-%dT%H:%M:%S"),
                "hostname": hostname,
                "file": group.file,
            },
        )
        for case in group.cases:
            suite.append(_case_element(case))
        every += group.cases
    counts = _verdicts(every)
    root.set("tests", str(counts["total"]))
    root.set("failures", str(counts["failed"]))
    root.set("errors", str(counts["error"]))
    ET.indent(root)
    return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True)) + b"\n"


def _verdicts(cases: Sequence[JUnitCase]) -> Counter[str]:
    counts: Counter[str] = Counter(case.verdict for case in cases)
    counts["total"] = len(cases)
    return counts


def _junit_case(outcome: CaseOutcome) -> JUnitCase:
    run = outcome.run
    return JUnitCase(
        name=run.name,
        classname=f"{run.suite.name}.{run.case.entry}",
        duration=outcome.duration,
        verdict=outcome.verdict,
        reason=outcome.reason,
        detail="\n".join(outcome.failures),
        output=outcome.envelope.to_json(indent=2) if outcome.envelope is not None else "",
    )


def junit_xml(outcomes: Sequence[CaseOutcome], info: RunInfo) -> bytes:
    by_suite: dict[Path, list[CaseOutcome]] = {}
    for outcome in outcomes:
        by_suite.setdefault(outcome.run.suite.path, []).append(outcome)
    suites = [
        JUnitSuite(
            group[0].run.suite.name,
            os.path.relpath(path) if path.is_absolute() else str(path),
            [_junit_case(outcome) for outcome in group],
        )
        for path, group in by_suite.items()
    ]
    return junit_document("acp-bridge smoke", suites, info.started, info.duration)


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


def summary_lines(outcomes: Sequence[CaseOutcome], info: RunInfo) -> list[str]:
    """The table people read at the end of a run."""
    width = max((len(o.run.id) for o in outcomes), default=4)
    lines = [f"{'CASE':<{width}}  {'RESULT':<7}  {'TIME':>7}  DETAIL"]
    for o in outcomes:
        lines.append(
            f"{o.run.id:<{width}}  {o.verdict.upper():<7}  {o.duration:>6.2f}s  {o.reason}"
        )
    counts = totals(outcomes)
    parts = [f"{counts[k]} {k}" for k in ("passed", "failed", "error", "skipped") if counts[k]]
    tail = " (interrupted)" if info.interrupted else ""
    lines.append(
        f"{counts['total']} case(s): {', '.join(parts) or 'none'} in {info.duration:.2f}s{tail}"
    )
    return lines


def report_json_bytes(outcomes: Sequence[CaseOutcome], info: RunInfo) -> bytes:
    return json.dumps(json_report(outcomes, info), indent=2, ensure_ascii=False).encode() + b"\n"
