"""Smoke suites: format errors, matrix expansion, expectation checks, JUnit validity."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import xmlschema

from acp_bridge import envelope
from acp_bridge.envelope import Meta, PermissionRecord
from acp_bridge.errors import ConfigError, ErrorCode
from acp_bridge.smoke._expect import check, subset_mismatch, workspace_failures
from acp_bridge.smoke._report import RunInfo, json_report, junit_xml, summary_lines
from acp_bridge.smoke._suite import Expect, expand, load_suite
from acp_bridge.smoke._suite_run import CaseOutcome

FIXTURES = Path(__file__).parent.parent / "fixtures"
EXAMPLES = Path(__file__).parents[2] / "examples" / "smoke"
EXPECT = re.compile(r"^# expect: (?P<line>\d+):(?P<col>\d+) (?P<message>.+)$")


@pytest.mark.parametrize(
    "path", sorted((FIXTURES / "broken_suites").glob("*.yaml")), ids=lambda p: p.stem
)
def test_broken_suite_gives_one_precise_error(path: Path) -> None:
    expect = EXPECT.match(path.read_text().splitlines()[0])
    assert expect
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    [problem] = info.value.problems
    assert problem.location is not None
    assert (problem.location.line, problem.location.column) == (
        int(expect["line"]),
        int(expect["col"]),
    ), str(problem)
    assert expect["message"] in str(problem)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_example_suites_load(path: Path) -> None:
    assert load_suite(path).cases


def test_live_check_covers_every_builtin_profile() -> None:
    from acp_bridge.config import builtin_profile_files

    [case] = load_suite(EXAMPLES / "live-acp-spawn.yaml").cases
    echo_only = {"fast-agent-passthrough"}  # it echoes the prompt: not a liveness check
    assert set(case.agents) == set(builtin_profile_files()) - echo_only


def test_defaults_and_matrix(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("""
defaults: {agents: [a, b], timeout: 9, files: {seed.txt: x}}
cases:
  - {name: one, task: hi}
  - {name: two, task: hi, agents: [c]}
  - {name: three, entry: bash, command: "true"}
""")
    suite = load_suite(path)
    assert suite.name == "s" and [c.timeout for c in suite.cases] == [9, 9, 9]
    assert suite.cases[2].agents == []  # agents only fill acp_spawn cases
    runs, filtered = expand([suite])
    assert [r.id for r in runs] == ["s::one [a]", "s::one [b]", "s::two [c]", "s::three"]
    runs, filtered = expand([suite], agents=["b"])
    assert [r.id for r in runs] == ["s::one [b]", "s::three"] and filtered == 2


def test_subset_match() -> None:
    actual = {"a": 1, "meta": {"subtasks": [{"x": 1, "y": 2}, {"x": 3}]}}
    assert subset_mismatch({"meta": {"subtasks": [{"x": 1}]}}, actual) is None
    assert (
        subset_mismatch({"meta": {"subtasks": [{"x": 2}]}}, actual)
        == "envelope.meta.subtasks[0].x: expected 2, got 1"
    )
    assert "missing" in (subset_mismatch({"b": 1}, actual) or "")
    assert "at least 3 item" in (subset_mismatch({"meta": {"subtasks": [1, 2, 3]}}, actual) or "")


def test_check_reports_every_miss(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("written\n")
    result = envelope.done(
        "The answer is 42",
        meta=Meta(
            permissions=[
                PermissionRecord(
                    tool_call_id="t", title="write out.txt", kind="edit", decision="allowed"
                )
            ]
        ),
    )
    good = Expect.model_validate(
        {
            "status": "done",
            "output": " The answer is 42\n",
            "output_contains": "42",
            "output_regex": r"answer is \d+",
            "files": {"out.txt": "written\n", "gone.txt": {"exists": False}},
            "permissions": [{"kind": "edit", "title": "write *", "decision": "allowed"}],
            "max_duration": 5,
        }
    )
    assert (
        check(
            result,
            good,
            file_failures=workspace_failures(good.files, tmp_path),
            suite_dir=tmp_path,
            duration=1,
        )
        == []
    )
    bad = Expect.model_validate(
        {
            "status": "failed",
            "output_contains": ["43"],
            "json": {"a": 1},
            "files": {"out.txt": {"contains": "nope"}, "missing.txt": "x"},
            "permissions": [{"decision": "rejected"}],
            "max_duration": 0.5,
        }
    )
    failures = check(
        result,
        bad,
        file_failures=workspace_failures(bad.files, tmp_path),
        suite_dir=tmp_path,
        duration=1,
    )
    assert len(failures) == 7, failures
    assert failures[0] == "status done, expected failed"
    assert any(f.startswith("output is not JSON") for f in failures)


def test_json_and_schema_checks(tmp_path: Path) -> None:
    (tmp_path / "schema.json").write_text(json.dumps({"type": "object", "required": ["ok"]}))
    result = envelope.done({"ok": True}, output_kind="json", output_schema="x")
    assert (
        check(
            result,
            Expect.model_validate({"json": {"ok": True}, "json_schema": "schema.json"}),
            file_failures=[],
            suite_dir=tmp_path,
            duration=0,
        )
        == []
    )
    text = envelope.done('{"no": 1}')
    [failure] = check(
        text,
        Expect.model_validate({"json_schema": "schema.json"}),
        file_failures=[],
        suite_dir=tmp_path,
        duration=0,
    )
    assert "'ok' is a required property" in failure
    assert check(
        text,
        Expect.model_validate({"json": None}),
        file_failures=[],
        suite_dir=tmp_path,
        duration=0,
    ) == ['JSON output {"no": 1}, expected null']


def outcomes_of_every_kind(tmp_path: Path) -> list[CaseOutcome]:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "cases:\n"
        + "".join(f"  - {{name: 'c{i} <&\">', entry: bash, command: 'true'}}\n" for i in range(4))
    )
    runs, _ = expand([load_suite(path)])
    result = envelope.done('ok <done> & "quoted"\x1b[31m')
    return [
        CaseOutcome(runs[0], "passed", [], result, 0.123456),
        CaseOutcome(runs[1], "failed", ["status done, expected failed", "second"], result, 2),
        CaseOutcome(runs[2], "error", ["did not finish"], None, 90.5),
        CaseOutcome(runs[3], "skipped", ["codex-acp is not installed"]),
    ]


def test_junit_validates_against_the_jenkins_schema(tmp_path: Path) -> None:
    outcomes = outcomes_of_every_kind(tmp_path)
    data = junit_xml(outcomes, RunInfo(datetime.now(UTC), 93.2, [tmp_path / "suite.yaml"]))
    schema = xmlschema.XMLSchema(FIXTURES / "junit" / "junit-10.xsd")
    (tmp_path / "out.xml").write_bytes(data)
    schema.validate(tmp_path / "out.xml")
    text = data.decode()
    assert 'tests="4" failures="1" errors="1"' in text and 'skipped="1"' in text
    assert "<failure" in text and "<error" in text and "<skipped" in text


def test_json_report_and_summary(tmp_path: Path) -> None:
    outcomes = outcomes_of_every_kind(tmp_path)
    info = RunInfo(datetime.now(UTC), 3.0, [tmp_path / "suite.yaml"])
    report = json_report(outcomes, info)
    assert report["totals"] == {"passed": 1, "failed": 1, "error": 1, "skipped": 1, "total": 4}
    assert report["cases"][0]["envelope"]["output"].startswith("ok")
    lines = summary_lines(outcomes, info)
    assert lines[-1] == "4 case(s): 1 passed, 1 failed, 1 error, 1 skipped in 3.00s"


def test_error_codes_in_expectations_are_plain_strings() -> None:
    result = envelope.failed("slow", ErrorCode.TIMEOUT)
    assert (
        check(
            result,
            Expect(error_code="timeout"),
            file_failures=[],
            suite_dir=Path("/"),
            duration=0,
        )
        == []
    )
