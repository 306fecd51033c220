"""Batches on the local executor, with real agents and commands: the Python API, workspaces,
the CLI's results file (resume, a crash, an interrupt), records, and the light paths that
must never import Ray."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from acp_bridge._batch.batch_run import batch
from acp_bridge._batch.tasks import BatchTask, Workspace
from acp_bridge._entries.request import EntryRequest
from acp_bridge._runs import foreground
from acp_bridge._runs.caller.handle import open_run
from acp_bridge._runs.store.run_store import close_stores
from acp_bridge.errors import ExecutorError
from tests.conftest import AgentHarness
from tests.helpers import run_bounded


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    db = tmp_path / "runs.db"
    monkeypatch.setenv("ACP_BRIDGE_RUNS_DB", str(db))
    yield db
    close_stores()
    foreground.close()


def test_one_envelope_per_task_in_order_and_recorded(harness: AgentHarness, store: Path) -> None:
    config = harness.config({"demo2": {"command": sys.executable,
                                       "args": ["-m", "acp_bridge._demo.agent"]}})  # fmt: skip
    seen: list[str] = []
    results = run_bounded(
        batch,
        [
            {"key": "slow", "entry": "acp_spawn", "agent": "demo2", "task": "sleep 1"},
            EntryRequest(entry="bash", task="exit 3"),
            {"entry": "acp_spawn", "agent": "demo2", "task": "Reply with exactly OK"},
            {"entry": "acp_spawn", "agent": "no-such-profile", "task": "hi"},
        ],
        config=config,
        concurrency=4,
        on_result=lambda result: seen.append(result.meta.batch["key"]),  # type: ignore[index]
        limit=60,
    )
    assert [r.meta.batch["key"] for r in results] == ["slow", "1", "2", "3"]  # type: ignore[index]
    assert [r.status for r in results] == ["done", "failed", "done", "failed"]
    assert results[1].meta.error_code == "nonzero_exit"
    assert results[3].meta.error_code == "config_error"
    assert seen[-1] == "slow" and sorted(seen) == ["1", "2", "3", "slow"]  # as they ended
    assert all(r.meta.batch["attempts"] == 1 and r.meta.node for r in results)  # type: ignore[index]
    record = open_run(results[2].task_id, store=store).record()
    assert (record.status, record.entry, record.agent) == ("done", "acp_spawn", "demo2")
    assert record.envelope is not None
    assert record.envelope["meta"]["batch"]["index"] == 2


def test_workspaces_fresh_uploaded_and_git(tmp_path: Path, store: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "data.txt").write_text("uploaded\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "tracked.txt").write_text("one\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    edit = "cat data.txt 2>/dev/null; cat tracked.txt 2>/dev/null; echo two >> tracked.txt; "
    edit += "echo new > new.txt; pwd"
    tasks = [
        BatchTask(EntryRequest(entry="bash", task=edit), workspace=Workspace(files={"a/b": "x"})),
        BatchTask(EntryRequest(entry="bash", task=edit), workspace=Workspace(upload=str(source))),
        BatchTask(EntryRequest(entry="bash", task=edit), workspace=Workspace(git=str(repo))),
    ]
    fresh, uploaded, worktree = run_bounded(batch, tasks, limit=60)
    assert fresh.meta.files_changed == ["new.txt", "tracked.txt"]
    assert uploaded.output["stdout"].startswith("uploaded\n")
    assert uploaded.meta.files_changed == ["new.txt", "tracked.txt"]
    assert worktree.output["stdout"].startswith("one\n")
    assert worktree.meta.files_changed == ["new.txt", "tracked.txt"]
    assert worktree.meta.diff is not None
    diff = Path(worktree.meta.diff).read_text()
    assert "+two" in diff
    for result in (fresh, uploaded, worktree):  # removed afterwards
        where = result.output["stdout"].splitlines()[-1]
        assert not Path(where).exists(), where
    assert (repo / "tracked.txt").read_text() == "one\n"  # the repository is untouched
    listed = subprocess.run([*git, "worktree", "list"], capture_output=True, text=True)
    assert len(listed.stdout.splitlines()) == 1


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "batch", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    return path


def envelopes(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_cli_resume_runs_only_the_missing_keys(tmp_path: Path, store: Path) -> None:
    tasks = [{"key": f"k{i}", "entry": "bash", "task": f"echo {i}"} for i in range(6)]
    first = write_tasks(tmp_path / "first.jsonl", tasks[:4])
    out = tmp_path / "results.jsonl"
    process = cli(str(first), "--out", str(out), cwd=tmp_path)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    before = {e["meta"]["batch"]["key"]: e["task_id"] for e in envelopes(out)}
    all_tasks = write_tasks(tmp_path / "all.jsonl", tasks)
    process = cli(str(all_tasks), "--out", str(out), cwd=tmp_path)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "2 tasks ran: 2 done, 0 failed; 4 already in the results file" in err
    after = envelopes(out)
    assert [e["meta"]["batch"]["key"] for e in after] == [f"k{i}" for i in range(6)]
    assert {e["meta"]["batch"]["key"]: e["task_id"] for e in after[:4]} == before
    assert [e["output"]["stdout"] for e in after] == [f"{i}\n" for i in range(6)]


def test_cli_bad_task_line_is_a_usage_error(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"entry": "bash", "task": "ls"}\n{"entry": "acp_spawn", "task": "hi"}\n')
    process = cli(str(tasks), cwd=tmp_path)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 2
    assert "tasks.jsonl:2: " in err and "acp_spawn needs an agent" in err
    assert out == ""


def test_cli_interrupt_cancels_running_tasks_and_keeps_the_file(
    tmp_path: Path, store: Path
) -> None:
    tasks = [{"key": "quick", "entry": "bash", "task": "echo quick"}] + [
        {"key": f"slow{i}", "entry": "bash", "task": "sleep 30"} for i in range(3)
    ]
    path = write_tasks(tmp_path / "tasks.jsonl", tasks)
    out = tmp_path / "results.jsonl"
    process = cli(str(path), "--out", str(out), "--concurrency", "2", cwd=tmp_path)
    journal = tmp_path / "results.jsonl.journal"
    deadline = time.monotonic() + 30
    while not (journal.exists() and journal.read_text().count("\n") >= 1):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    time.sleep(0.5)  # the next slow task has started
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    results = {e["meta"]["batch"]["key"]: e for e in envelopes(out)}
    assert results["quick"]["status"] == "done"
    cancelled = [k for k, e in results.items() if e["meta"].get("error_code") == "cancelled"]
    assert sorted(cancelled) == ["slow0", "slow1", "slow2"]
    assert all(results[k]["meta"]["batch"]["interrupted"] for k in cancelled)
    assert not journal.exists()
    # resumed: the interrupted ones run again (here quickly), the finished one does not
    write_tasks(path, [tasks[0]] + [{**t, "task": "echo again"} for t in tasks[1:]])
    process = cli(str(path), "--out", str(out), cwd=tmp_path)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "3 tasks ran: 3 done, 0 failed; 1 already in the results file" in err


def test_an_unreachable_cluster_fails_every_task_at_once(tmp_path: Path) -> None:
    path = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"key": f"k{i}", "entry": "bash", "task": "true"} for i in range(3)],
    )
    started = time.monotonic()
    process = cli(str(path), "--executor", "ray", "--address", "127.0.0.2:1", cwd=tmp_path)
    out, err = process.communicate(timeout=60)
    assert time.monotonic() - started < 15
    assert process.returncode == 1, err
    results = [json.loads(line) for line in out.splitlines()]
    assert [r["meta"]["batch"]["key"] for r in results] == ["k0", "k1", "k2"]
    for result in results:
        assert result["meta"]["error_code"] == "executor_error"
        assert "cannot reach the Ray cluster at 127.0.0.2:1" in result["error"]


RAY_PROBE = """
import sys
from acp_bridge.cli import main
code = main(sys.argv[1:])
print("RAY-IMPORTED" if "ray" in sys.modules else "NO-RAY", file=sys.stderr)
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "demo", "Reply with exactly OK"],
        ["batch", "-"],
    ],
)
def test_the_light_paths_never_import_ray(tmp_path: Path, argv: list[str]) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    task = '{"entry": "bash", "task": "true"}\n'
    done = subprocess.run(
        [sys.executable, "-c", RAY_PROBE, *argv],
        input=task,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert done.stderr.strip().endswith("NO-RAY"), done.stderr
    plain = subprocess.run(
        [sys.executable, "-c", "import sys, acp_bridge; print('ray' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert plain.stdout.strip() == "False"


def test_a_task_without_cwd_or_workspace_runs_in_a_fresh_empty_one(
    tmp_path: Path, store: Path
) -> None:
    (tmp_path / "here.txt").write_text("the driver's own directory\n")
    path = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"key": "k", "entry": "bash", "task": "pwd; ls -A; echo new > made.txt"}],
    )
    process = cli(str(path), cwd=tmp_path)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    [result] = [json.loads(line) for line in out.splitlines()]
    where, *listed = result["output"]["stdout"].splitlines()
    assert Path(where).resolve() != tmp_path.resolve()
    assert listed == []  # empty: nothing of the directory the batch was started in
    assert result["meta"]["files_changed"] == ["made.txt"]
    assert result["meta"]["batch"]["cwd"] == where
    assert not (tmp_path / "made.txt").exists()
    assert not Path(where).exists()  # removed afterwards


def test_a_second_driver_on_the_same_results_file_is_refused_naming_the_first(
    tmp_path: Path, store: Path
) -> None:
    # The task waits for a file the test makes: the first driver holds the results file
    # for as long as the test wants.
    wait = "touch started; while [ ! -e go ]; do sleep 0.05; done; echo ran"
    task = {"key": "k", "entry": "bash", "task": wait, "cwd": str(tmp_path)}
    path = write_tasks(tmp_path / "tasks.jsonl", [task])
    out = tmp_path / "results.jsonl"
    first = cli(str(path), "--out", str(out), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "started").exists():
            assert time.monotonic() < deadline and first.poll() is None, "the task never started"
            time.sleep(0.05)
        second = cli(str(path), "--out", str(out), cwd=tmp_path)
        second_out, second_err = second.communicate(timeout=60)
        assert second.returncode == 2, second_err
        assert f"{out}: another batch is writing it (pid {first.pid} on " in second_err
        assert second_out == ""
    finally:
        (tmp_path / "go").touch()
    _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    [result] = envelopes(out)
    assert result["output"]["stdout"] == "ran\n"
    assert not (tmp_path / "results.jsonl.lock").exists()
    # once the first has ended, the file is anyone's: a resume finds the task done
    again = cli(str(path), "--out", str(out), cwd=tmp_path)
    _, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert "0 tasks ran: 0 done, 0 failed; 1 already in the results file" in err


def test_cli_refuses_duplicate_task_ids_and_text_that_is_not_utf8(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        '{"entry": "bash", "task": "true", "task_id": "same"}\n\n'
        '{"entry": "bash", "task": "true", "task_id": "other"}\n'
        '{"entry": "bash", "task": "true", "task_id": "same"}\n'
    )
    process = cli(str(tasks), cwd=tmp_path)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 2, err
    assert "tasks.jsonl:4: task_id 'same' is also line 1's" in err
    assert out == ""
    tasks.write_bytes(b'{"entry": "bash", "task": "true"}\n{"entry": "bash", "task": "caf\xe9"}\n')
    process = cli(str(tasks), cwd=tmp_path)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 2, err
    assert "tasks.jsonl:2:31: not UTF-8" in err, err  # line and column (the byte)
    assert out == ""


class _RefusesEverything:
    """An executor no task can run on, like a cluster where no node offers the agent: every
    task ends at once, all together, without an attempt."""

    name = "refusing"
    default_concurrency = None

    @contextlib.asynccontextmanager
    async def open(self, config: Any) -> AsyncIterator[_RefusesEverything]:
        yield self

    def refusal(self, task: BatchTask) -> ExecutorError:
        return ExecutorError("no live node offers the agent 'no-such-agent'")

    async def run(self, task: BatchTask, task_id: str, **how: Any) -> Any:
        raise AssertionError("a refused task was run")


def test_tasks_refused_all_at_once_each_end_in_their_row(store: Path) -> None:
    """Rows begun and ended together from many threads: each row ends with its envelope's
    status (the end of a row still queued for another thread's write once found no row, and
    the row, written after, was found ``lost``: 11 642 of 100 000)."""
    foreground.install()
    tasks = [{"entry": "acp_spawn", "agent": "no-such-agent", "task": "hi"}] * 2000
    results = run_bounded(batch, tasks, executor=_RefusesEverything(), limit=100)
    assert {r.meta.error_code for r in results} == {"executor_error"}
    rows = dict(sqlite3.connect(store).execute("SELECT id, status FROM runs").fetchall())
    assert rows == {r.task_id: r.status for r in results}


@pytest.mark.parametrize(
    "count",
    [500, pytest.param(10_000, marks=[pytest.mark.slow, pytest.mark.timeout(900)])],
)
def test_cli_store_rows_agree_with_the_results_file(
    tmp_path: Path, store: Path, count: int
) -> None:
    """A real CLI batch of many tasks (an agent no profile names: each ends at once): every
    task's row in the run store ends with the status of its envelope in ``--out``."""
    path = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"entry": "acp_spawn", "agent": "no-such-agent", "task": "hi"}] * count,
    )
    out = tmp_path / "results.jsonl"
    env = {**os.environ, "ACP_BRIDGE_RUNS_DB": str(store)}
    process = cli(str(path), "--out", str(out), cwd=tmp_path, env=env)
    _, err = process.communicate(timeout=count / 5 + 60)
    assert process.returncode == 1, err[-2000:]
    written = envelopes(out)
    assert len(written) == count
    assert {e["meta"]["error_code"] for e in written} == {"config_error"}
    rows = dict(sqlite3.connect(store).execute("SELECT id, status FROM runs").fetchall())
    assert rows == {e["task_id"]: e["status"] for e in written}
