"""Transcript line shapes, and a switched-off transcript that writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from acp_bridge._acp.transcript import Transcript


def test_the_four_line_shapes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    transcript = Transcript(path)
    transcript.outgoing(b'{"id":1,"method":"initialize"}')
    transcript.incoming(b'{"id":1,"result":{}}')
    transcript.non_json(b"server listening on :8080 \xff")
    transcript.note("sent SIGTERM")
    transcript.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(line["dir"], set(line) - {"t", "dir"}) for line in lines] == [
        ("out", {"msg"}),
        ("in", {"msg"}),
        ("in", {"raw"}),
        ("note", {"note"}),
    ]
    assert lines[0]["msg"] == {"id": 1, "method": "initialize"}
    assert lines[2]["raw"] == "server listening on :8080 \ufffd"
    assert lines[3]["note"] == "sent SIGTERM"
    assert all(isinstance(line["t"], float) and line["t"] >= 0 for line in lines)
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_switched_off_transcript_writes_nothing(tmp_path: Path) -> None:
    transcript = Transcript(None)
    transcript.incoming(b'{"id":1,"result":{}}')
    transcript.note("x")
    transcript.close()
    assert transcript.path is None and not transcript.error
    assert list(tmp_path.iterdir()) == []
