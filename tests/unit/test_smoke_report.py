"""JUnit XML stays XML whatever the cases carry (smoke/_report.py): names, reasons, agent
output with controls, lone surrogates and non-characters, generated, and parsed back by a
strict parser; the shapes of a table also validate against the Jenkins schema. Report
paths that cannot be written are refused before anything runs."""

from __future__ import annotations

import os
import re
import stat
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import pytest
import xmlschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_bridge import envelope
from acp_bridge.errors import ConfigError
from acp_bridge.smoke._report import RunInfo, check_report_path, junit_xml, write_report
from acp_bridge.smoke._suite import Case, CaseRun, Suite
from acp_bridge.smoke._suite_run import CaseOutcome

SCHEMA = Path(__file__).parent.parent / "fixtures" / "junit" / "junit-10.xsd"
# Any code point, lone surrogates too (hypothesis's characters() never draws those).
ANY_CHAR = st.characters(codec=None, exclude_categories=()) | st.integers(0xD800, 0xDFFF).map(chr)
ANY_TEXT = st.text(ANY_CHAR, max_size=60)
# What XML 1.0 allows in a document (https://www.w3.org/TR/xml/#charsets).
_XML_CHAR = re.compile("[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*")
SHAPES = [
    "nul\x00byte",
    "esc\x1b[31mred",
    "osc\x1b]52;c;aGk=\x07",
    "c1\x9b2J",
    "lone\ud800surrogate",
    "low\udfffsurrogate",
    "non\ufffecharacter\uffff",
    "vt\x0bff\x0c",
    "del\x7f",
    'markup <testcase name="x"/> & ]]> --> <!--',
    "bidi\u202eevil",
    "cr\rlf\nend",
]


def _outcomes(name: str, suite: str, agent: str, reason: str, output: str) -> list[CaseOutcome]:
    # Constructed: a suite file cannot carry a lone surrogate, an agent's output can.
    case = Case.model_construct(name=name or "x", entry="bash", command="true")
    run = CaseRun(Suite(suite or "s", Path("suite.yaml"), [case], {}), case, agent or None)
    result = envelope.done(output)
    return [
        CaseOutcome(run, "passed", [], result, 0.5),
        CaseOutcome(run, "failed", [reason, output], result, 1.0),
        CaseOutcome(run, "error", [reason], None, 2.0),
        CaseOutcome(run, "skipped", [reason]),
    ]


def _info() -> RunInfo:
    return RunInfo(datetime.now(UTC), 3.0, [Path("suite.yaml")])


@given(ANY_TEXT, ANY_TEXT, ANY_TEXT, ANY_TEXT, ANY_TEXT)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_any_text_makes_well_formed_xml(
    name: str, suite: str, agent: str, reason: str, output: str
) -> None:
    data = junit_xml(_outcomes(name, suite, agent, reason, output), _info())
    root = ET.fromstring(data)  # expat: refuses anything that is not well-formed XML
    assert _XML_CHAR.fullmatch(data.decode())
    assert len(root.findall("./testsuite/testcase")) == 4


@pytest.mark.parametrize("shape", SHAPES)
def test_hostile_shapes_validate_and_stay_readable(tmp_path: Path, shape: str) -> None:
    data = junit_xml(_outcomes(shape, shape, shape, shape, shape), _info())
    (tmp_path / "out.xml").write_bytes(data)
    xmlschema.XMLSchema(SCHEMA).validate(tmp_path / "out.xml")
    case = ET.fromstring(data).find("./testsuite/testcase")
    assert case is not None
    shown = case.get("name", "")
    # What XML can carry is kept as is; the rest is shown as an escape, not dropped.
    for char in shape:
        if _XML_CHAR.fullmatch(char) and not 0x7F <= ord(char) <= 0x9F:
            assert char in shown or char in "\r\n\t", (char, shown)  # attribute whitespace
        else:
            assert f"\\x{ord(char):02x}" in shown or f"\\u{ord(char):04x}" in shown, shown


def test_a_report_path_that_cannot_be_written_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    (tmp_path / "folder").mkdir()
    refused = {
        tmp_path / "folder": "is a directory",
        tmp_path / "file" / "out.xml": "a part of its folder is a file",
        tmp_path / "file" / "deeper" / "out.xml": "a part of its folder is a file",
        Path("/proc/out.xml"): "cannot write there",
    }
    for path, reason in refused.items():
        with pytest.raises(ConfigError, match=reason):
            check_report_path(path, "--junit")
    check_report_path(tmp_path / "new" / "out.xml", "--junit")  # made as needed
    assert not list((tmp_path / "new").iterdir())  # the probe is gone
    (tmp_path / "link.xml").symlink_to(tmp_path / "elsewhere.xml")
    write_report(tmp_path / "link.xml", b"<x/>\n")  # replaces the link, never writes through
    assert not (tmp_path / "elsewhere.xml").exists()
    with pytest.raises(ConfigError, match="cannot write the report"):
        write_report(tmp_path / "folder", b"<x/>\n", "--junit")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    check_report_path(fifo, "--junit")  # a stream: written into, not replaced
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    write_report(fifo, b"<x/>\n")
    assert os.read(reader, 100) == b"<x/>\n" and stat.S_ISFIFO(fifo.lstat().st_mode)
    os.close(reader)
