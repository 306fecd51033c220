"""Envelope rules: summaries, failure shape, output_schema parsing and validation."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_bridge import envelope
from acp_bridge._entries.bash import CommandResult
from acp_bridge._output_schema.schema_check import check_structured_output
from acp_bridge._output_schema.structured_output import (
    SchemaRegistry,
    parse_structured_output,
    strip_code_fence,
    structured_output_instruction,
)
from acp_bridge.envelope import SUMMARY_LIMIT, new_task_id
from acp_bridge.errors import ConfigError, ErrorCode, OutputSchemaError


def test_task_ids_are_unique_and_well_formed() -> None:
    ids = {new_task_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 16 and i.startswith("sub_") for i in ids)


def test_summary_is_first_non_blank_line_capped() -> None:
    result = envelope.done("\n\n  hello world  \nsecond")
    assert result.summary == "hello world"
    long = envelope.done("x" * 500)
    assert len(long.summary) == SUMMARY_LIMIT and long.summary.endswith("…")


def test_notes_survive_truncation() -> None:
    result = envelope.done("y" * 500, notes=["3 permission requests refused"])
    assert len(result.summary) <= SUMMARY_LIMIT
    assert result.summary.endswith("[3 permission requests refused]")


def test_failed_error_is_one_line_and_keeps_partial_output() -> None:
    result = envelope.failed("boom\n  at line 3", ErrorCode.AGENT_EXITED, output="half")
    assert result.error == "boom at line 3"
    assert result.output == "half"
    assert result.meta.error_code == ErrorCode.AGENT_EXITED
    assert result.to_dict()["meta"] == {"error_code": "agent_exited"}


def test_bash_result_shapes() -> None:
    ok = CommandResult(exit_code=0, stdout="", stderr="warn\n").envelope()
    assert ok.status == "done" and ok.summary == "warn"
    assert ok.output_schema == "subtask.bash.result.v1" and ok.output_kind == "json"
    bad = CommandResult(exit_code=3).envelope()
    assert bad.error == "bash exited with code 3"
    late = CommandResult(exit_code=124, timed_out_after=1.5).envelope()
    assert late.error == "bash timed out after 1.5s" and late.meta.error_code == "timeout"


@pytest.mark.parametrize(
    ("raw", "body"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('  \n```json\n{"a": 1}\n```\n ', '{"a": 1}'),
        ("```\n[1, 2]\n```", "[1, 2]"),
        ("```JSON \n42```", "42"),
        ("text ```json\n{}\n```", "text ```json\n{}\n```"),  # only an enclosing fence is removed
    ],
)
def test_strip_code_fence(raw: str, body: str) -> None:
    assert strip_code_fence(raw) == body


def test_parse_structured_output_requires_json() -> None:
    assert parse_structured_output('```json\n{"ok": true, "value": 42}\n```', "x", None) == {
        "ok": True,
        "value": 42,
    }
    with pytest.raises(OutputSchemaError, match="not valid JSON"):
        parse_structured_output("Sure! {ok}", "demo.v1", None)
    with pytest.raises(OutputSchemaError, match="empty"):
        parse_structured_output("  ", "demo.v1", None)


def _registry(tmp_path: Path, schema: object) -> SchemaRegistry:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    return SchemaRegistry({"demo.v1": path})


def check(text: str, label: str, registry: SchemaRegistry | None) -> object:
    return anyio.run(lambda: check_structured_output(text, label, registry, timeout=20))


def test_registered_schema_is_enforced(tmp_path: Path) -> None:
    registry = _registry(
        tmp_path,
        {
            "type": "object",
            "required": ["ok", "value"],
            "properties": {"ok": {"type": "boolean"}, "value": {"type": "integer"}},
        },
    )
    assert check('{"ok": true, "value": 42}', "demo.v1", registry)
    with pytest.raises(OutputSchemaError, match=r"at \$.value: 'x' is not of type 'integer'"):
        check('{"ok": true, "value": "x"}', "demo.v1", registry)
    with pytest.raises(OutputSchemaError, match="at the answer: 'value' is a required"):
        check('{"ok": true}', "demo.v1", registry)
    # An unregistered label is still a JSON contract, just without a shape.
    assert check("[1]", "other.v1", registry) == [1]
    assert registry.schema("other.v1") is None
    assert registry.schema("demo.v1") is not None


def test_broken_schema_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        _registry(tmp_path, {"type": "no-such-type"}).resources("demo.v1")
    path = tmp_path / "bad.json"
    path.write_text("{nope")
    with pytest.raises(ConfigError, match=r"bad.json:1:2: output schema 'x': not valid JSON"):
        SchemaRegistry({"x": path}).resources("x")


def test_instruction_names_the_label_and_schema() -> None:
    text = structured_output_instruction("demo.v1", {"type": "object"})
    assert "demo.v1" in text and '"type": "object"' in text


def test_repr_stays_small_for_huge_outputs() -> None:
    big = envelope.done("x" * 10_000_000)
    assert len(repr(big)) < 2000 and "task_id=" in repr(big)
    data = envelope.done({"rows": list(range(100_000))}, output_kind="json")
    assert len(repr(data)) < 2000


LINE_TEXT = st.text(
    alphabet=st.sampled_from(list("ab \t\n\r\x0b\x0c\x1c\x1d\x85\u2028\u2029\u3000é")), max_size=400
)


@settings(max_examples=500)
@given(LINE_TEXT, st.integers(2, 200))
def test_first_line_is_the_first_non_blank_line_without_splitting_everything(
    text: str, limit: int
) -> None:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    expected = line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    assert envelope.first_line(text, limit) == expected


def test_the_summary_of_a_24_mib_answer_of_short_lines_costs_no_list_of_lines() -> None:
    text = "\n" * 1000 + "  first line  \n" + "ab\n" * (8 << 20)
    tracemalloc.start()
    try:
        assert envelope.done(text).summary == "first line"
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak  # splitlines() made 8M strings: hundreds of MB


@settings(max_examples=300)
@given(st.text(), st.sampled_from([None, 2]), st.booleans(), st.integers(1, 9))
def test_json_pieces_join_to_json_dumps(
    text: str, indent: int | None, ascii_only: bool, piece: int
) -> None:
    from acp_bridge._records import json_pieces

    data = envelope.done(text).to_dict()
    original = json_pieces.JSON_PIECE_CHARS
    json_pieces.JSON_PIECE_CHARS = piece
    try:
        joined = "".join(json_pieces.json_pieces(data, indent=indent, ensure_ascii=ascii_only))
    finally:
        json_pieces.JSON_PIECE_CHARS = original
    assert joined == json.dumps(data, indent=indent, ensure_ascii=ascii_only)
