"""What a smoke run leaves behind: JUnit XML for CI, a JSON report with every envelope, and
the summary table people read.

The JUnit XML follows the Jenkins xunit plugin's ``junit-10.xsd`` (the tests validate
against it): one ``<testsuite>`` per suite file, one ``<testcase>`` per case run (the
writer, :func:`junit_document`, also serves ``compare``: one case per attempt); unmet
expectations are ``<failure>``, cases that could not run ``<error>``, skipped ones
``<skipped>``; the envelope goes into ``<system-out>``.

Case names, reasons and envelopes carry text from suites and agents, and XML 1.0 has
characters no document may contain (C0 controls but tab, newline and carriage return; lone
surrogates; U+FFFE and U+FFFF): a report with one is not XML, and CI drops it whole. Every
text and attribute value goes through :func:`xml_text`, which shows those — and DEL and the
C1 controls, which XML discourages and terminals obey — as ``\\xNN`` / ``\\uNNNN``
escapes, so the report is well-formed whatever the cases carry, and safe to ``cat``.

Report paths are checked before the first case runs (:func:`check_report_path`): a
directory, a missing or read-only folder is a config error then, not a traceback after an
hour of cases. A report replaces its file atomically (a new file, renamed over it); a
character device or a FIFO (``--junit /dev/stdout``) is written into instead.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import socket
import stat
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp_bridge.errors import ConfigError
from acp_bridge.smoke._suite_run import CaseOutcome, CaseVerdict


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


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _escape(match: re.Match[str]) -> str:
    point = ord(match.group())
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 forbids or discourages shown as an escape."""
    return _NOT_XML.sub(_escape, text)


def _element(parent: ET.Element | None, tag: str, attributes: dict[str, str]) -> ET.Element:
    clean = {name: xml_text(value) for name, value in attributes.items()}
    return ET.Element(tag, clean) if parent is None else ET.SubElement(parent, tag, clean)


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
    element = _element(
        None,
        "testcase",
        {"name": case.name, "classname": case.classname, "time": _seconds(case.duration)},
    )
    detail = xml_text(case.detail)
    if case.verdict == "failed":
        attributes = {"type": "expectation", "message": case.reason}
        _element(element, "failure", attributes).text = detail
    elif case.verdict == "error":
        _element(element, "error", {"type": "error", "message": case.reason}).text = detail
    elif case.verdict == "skipped":
        _element(element, "skipped", {"message": case.reason})
    if case.output:
        _element(element, "system-out", {}).text = xml_text(case.output)
    return element


def junit_document(
    title: str, suites: Sequence[JUnitSuite], started: datetime, duration: float
) -> bytes:
    """The JUnit XML of ``suites`` (the module docstring says which schema)."""
    root = _element(None, "testsuites", {"name": title, "time": _seconds(duration)})
    hostname = socket.gethostname()
    every: list[JUnitCase] = []
    for group in suites:
        counts = _verdicts(group.cases)
        suite = _element(
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


def check_report_path(path: Path, option: str) -> None:
    """Refuse, as a config error, a report path that cannot be written: a directory, a
    folder that is missing or not a folder, or one that refuses a new file (read-only,
    full, not ours). Tried for real: a temporary file is made there and removed."""
    if path.is_dir():
        raise ConfigError(f"{option} {path}: is a directory; name a file in it")
    if _is_stream(path):  # /dev/stdout, a FIFO: written as it is
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = _temporary(path)
        os.close(fd)
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot write there: {_reason(exc)}") from None


def write_report(path: Path, data: bytes, option: str = "report") -> None:
    """Write atomically: a failed write leaves an older report intact. A failure is a
    ConfigError that names the path."""
    probe = None
    try:
        if _is_stream(path):  # /dev/stdout, a FIFO: no rename over it, a write into it
            with path.open("wb") as stream:
                stream.write(data)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = _temporary(path)
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        probe.replace(path)
    except OSError as exc:
        if probe is not None:
            with contextlib.suppress(OSError):
                probe.unlink()
        raise ConfigError(f"{option} {path}: cannot write the report: {_reason(exc)}") from None


def _is_stream(path: Path) -> bool:
    """Whether ``path`` (links followed) is a character device or a FIFO."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _temporary(path: Path) -> tuple[int, Path]:
    """A new file beside ``path`` (never an existing one, never through a symlink)."""
    probe = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(probe, flags, 0o666), probe


def _reason(exc: OSError) -> str:
    if exc.errno == errno.EISDIR:
        return "it is a directory"
    if exc.errno in (errno.EEXIST, errno.ENOTDIR):  # from mkdir, or the open under a file
        return "a part of its folder is a file, not a directory"
    return exc.strerror or str(exc)


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
