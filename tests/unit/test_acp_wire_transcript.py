"""Transcript line shapes, a switched-off transcript that writes nothing, and pruning: the
newest ``keep`` by modification time stay, each pruned run's diff goes with its transcript."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from acp_bridge._acp.wire.transcript import (
    JOINED_BYTES,
    Transcript,
    default_transcript_dir,
    prune,
    run_transcript,
)
from acp_bridge._os.redact import Redactor
from acp_bridge.config import TranscriptSettings


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


def _made(path: Path, mtime: float) -> Path:
    path.write_text("{}\n")
    os.utime(path, (mtime, mtime))
    return path


def test_the_oldest_go_by_time_not_by_name_and_their_diffs_with_them(tmp_path: Path) -> None:
    # Names in the opposite order of age: a follow-up writes to an older run's transcript.
    for n, name in enumerate(["z", "y", "x", "w", "v"]):
        _made(tmp_path / f"{name}.jsonl", 1_000_000 + n)
        _made(tmp_path / f"{name}.diff", 1_000_000 + n)
    (tmp_path / "notes.txt").write_text("not a transcript")
    prune(tmp_path, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "notes.txt",
        "v.diff",
        "v.jsonl",
        "w.diff",
        "w.jsonl",
    ]


def test_nothing_goes_while_there_are_no_more_than_keep(tmp_path: Path) -> None:
    for n in range(3):
        _made(tmp_path / f"{n}.jsonl", 1_000_000 + n)
    prune(tmp_path, 3)
    assert len(list(tmp_path.glob("*.jsonl"))) == 3


def test_a_missing_directory_is_no_error(tmp_path: Path) -> None:
    prune(tmp_path / "never-made", 1)


def test_a_transcript_written_to_since_the_last_prune_is_aged_afresh(tmp_path: Path) -> None:
    # The ages seen by one prune are remembered for the next: a transcript still written
    # to (a held session's) moves on, and must not go as the oldest it once was.
    for n in range(4):
        _made(tmp_path / f"{n}.jsonl", 1_000_000 + n)
    prune(tmp_path, 3)
    assert sorted(p.stem for p in tmp_path.glob("*.jsonl")) == ["1", "2", "3"]
    os.utime(tmp_path / "1.jsonl", (1_000_010, 1_000_010))
    _made(tmp_path / "4.jsonl", 1_000_004)
    (tmp_path / "3.jsonl").unlink()  # another process pruned it meanwhile
    _made(tmp_path / "5.jsonl", 1_000_005)
    prune(tmp_path, 3)
    assert sorted(p.stem for p in tmp_path.glob("*.jsonl")) == ["1", "4", "5"]


def test_the_folder_is_checked_again_when_it_changed_since_the_last_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The folder's walk is remembered by its identity and mode: a folder widened since is
    # narrowed again, one swapped for a link (to elsewhere) refused, never written through.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    folder = default_transcript_dir()
    first = Transcript(folder / "a.jsonl")
    first.close()
    assert not first.error and (folder / "a.jsonl").is_file()
    folder.chmod(0o755)
    Transcript(folder / "b.jsonl").close()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(folder)
    folder.symlink_to(elsewhere)
    third = Transcript(folder / "c.jsonl")
    third.close()
    assert "symlink" in third.error, third.error
    assert list(elsewhere.iterdir()) == []


def test_runs_keep_the_newest_keep_between_listings_of_the_folder(tmp_path: Path) -> None:
    # A run's prune lists the folder at most once a second: in between, what this process
    # wrote is counted, so every run still leaves `keep` (the newest), never more.
    settings = TranscriptSettings(dir=tmp_path, keep=2)
    for n in range(5):
        transcript = run_transcript(settings, f"run{n}", Redactor())
        transcript.note("written")
        transcript.close()
        os.utime(tmp_path / f"run{n}.jsonl", (1_000_000 + n, 1_000_000 + n))
        assert len(list(tmp_path.glob("*.jsonl"))) == min(n + 1, 2)
    assert sorted(p.stem for p in tmp_path.glob("*.jsonl")) == ["run3", "run4"]


def _message(size: int, i: int) -> bytes:
    return b'{"id":%d,"text":"%b"}' % (i, b"x" * size)


@pytest.mark.parametrize("sizes", [[10, 20], [JOINED_BYTES, 10], [10, 3 * JOINED_BYTES, 10]])
@pytest.mark.parametrize("max_bytes", [64 << 20, 2 * JOINED_BYTES])
def test_one_read_is_the_same_lines_joined_or_written_apart(
    tmp_path: Path, sizes: list[int], max_bytes: int
) -> None:
    """The messages of one read, small (one joined block) or large (written in pieces):
    the same lines, and the cap cuts where it falls, with its one note."""
    path = tmp_path / "t.jsonl"
    transcript = Transcript(path, max_bytes=max_bytes)
    sent = [_message(size, i) for i, size in enumerate(sizes)]
    for message in sent:
        transcript.incoming(message)
    transcript.end_read()
    transcript.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    kept = [line["msg"] for line in lines if line["dir"] == "in"]
    fits = [json.loads(m) for m in sent if len(m) + 40 < max_bytes - 512]
    assert kept == fits[: len(kept)] and len(kept) >= len(fits) - 1
    notes = [line for line in lines if line["dir"] == "note"]
    assert len(notes) == (len(kept) < len(sent))
