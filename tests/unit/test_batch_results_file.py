"""The results file: resume, a torn journal, refusing a file of something else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from acp_bridge._batch.results_file import ResultsFile
from acp_bridge.envelope import SubtaskResult, done, failed
from acp_bridge.errors import ConfigError, ErrorCode


def envelope(key: str, *, interrupted: bool = False, ok: bool = True) -> dict[str, object]:
    batch = {"key": key, "index": 0, "node": "n", "attempts": 1}
    if interrupted:
        batch["interrupted"] = True
    result = done("x") if ok else failed("stop", ErrorCode.CANCELLED)
    data = result.to_dict()
    data["meta"]["batch"] = batch
    return data


def test_results_file_resumes_and_survives_a_torn_journal(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text(json.dumps(envelope("a")) + "\n")
    journal = tmp_path / "out.jsonl.journal"
    journal.write_text(
        json.dumps(envelope("b"))
        + "\n"
        + json.dumps(envelope("c", interrupted=True, ok=False))
        + "\n"
        + json.dumps(envelope("d"))[:40]  # a crash mid-line
    )
    results = ResultsFile(path)
    assert set(results.load()) == {"a", "b", "c"}
    assert results.done_keys() == {"a", "b"}  # c was ended by an interrupt: it runs again
    assert results.write(["c", "b", "a"]) == 3
    assert not journal.exists()
    keys = [json.loads(line)["meta"]["batch"]["key"] for line in path.read_text().splitlines()]
    assert keys == ["c", "b", "a"]


def test_results_file_refuses_a_file_that_is_not_results(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"entry": "bash", "task": "ls"}\n')
    with pytest.raises(ConfigError, match=r"tasks\.jsonl:1: not an envelope"):
        ResultsFile(path).load()


def test_one_process_at_a_time_holds_a_results_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "out.jsonl"
    first, second = ResultsFile(path), ResultsFile(path)
    first.lock()
    holder = json.loads((tmp_path / "deep" / "out.jsonl.lock").read_text())
    assert holder["pid"] == os.getpid()
    # a lock of its own open file: refused as another process would be
    with pytest.raises(ConfigError, match=rf"another batch is writing it \(pid {os.getpid()} on "):
        second.lock()
    first.unlock()
    assert not (tmp_path / "deep" / "out.jsonl.lock").exists()
    second.lock()  # free again
    second.unlock()


def _result(key: str, answer: str = "x", *, interrupted: bool = False) -> SubtaskResult:
    result = done(answer)
    batch: dict[str, object] = {"key": key, "index": 0, "node": "n", "attempts": 1}
    if interrupted:
        batch["interrupted"] = True
    return result.model_copy(update={"meta": result.meta.model_copy(update={"batch": batch})})


def test_results_are_copied_from_the_journal_line_by_line_in_task_order(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text(json.dumps(envelope("old")) + "\n")
    journal = tmp_path / "out.jsonl.journal"
    journal.write_text(json.dumps(envelope("torn"))[:30])  # a crashed run's last line
    results = ResultsFile(path)
    assert results.load() == {"old"}
    big = "é" * 300_000 + '\n"quoted"'  # not ASCII, escapes: the bytes as written
    results.append(_result("b", big))
    results.append(_result("a"))
    results.append(_result("c", interrupted=True))
    assert results.statuses() == {"old": "done", "b": "done", "a": "done", "c": "done"}
    assert results.done_keys() == {"old", "a", "b"}
    assert results.write(["a", "b", "c"]) == 4
    lines = path.read_text(encoding="utf-8").splitlines()
    keys = [json.loads(line)["meta"]["batch"]["key"] for line in lines]
    assert keys == ["a", "b", "c", "old"]
    assert json.loads(lines[1])["output"] == big
    assert not journal.exists()
    # written again (a second write of the same object): the lines are read from the new file
    results.append(_result("d"))
    assert results.write(["d", "c"]) == 5
    again = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [e["meta"]["batch"]["key"] for e in again] == ["d", "c", "a", "b", "old"]
    assert again[3]["output"] == big
    fresh = ResultsFile(path)
    assert fresh.load() == {"a", "b", "c", "d", "old"}
    assert fresh.done_keys() == {"a", "b", "d", "old"}
