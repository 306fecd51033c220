"""The viewer's batch and comparison pages (issue 35) over real runs: a batch of demo-agent
and bash tasks on the local executor, and a comparison of two demo profiles with a verifier,
each recorded in a private store and read through Starlette's test client. What they check:
every run carries its batch's id, the pages count and link them, show why a task failed, the
comparison's pick and why and the winner's diff, and a key with markup stays text."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from acp_bridge import compare
from acp_bridge._batch.batch_run import batch
from acp_bridge._compare.table import table
from acp_bridge._mcp.transport.listen import rebinding_rules
from acp_bridge._runs import foreground
from acp_bridge._runs.store.run_store import Store, close_stores
from acp_bridge._ui.access import Access, cookie_name
from acp_bridge._ui.pages import Settings, build_app
from tests.conftest import AgentHarness
from tests.helpers import new_repo, run_bounded

TOKEN = "token-of-the-test"
PORT = 8765
DEMO = {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]}
WRITES = "write expected.txt: written by the writer"
HOSTILE_KEY = "<img src=x onerror=alert(1)>"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    db = tmp_path / "runs.db"
    monkeypatch.setenv("ACP_BRIDGE_RUNS_DB", str(db))
    yield db
    close_stores()
    foreground.close()


@pytest.fixture
def viewer(store: Path) -> Iterator[TestClient]:
    app: Any = Access(build_app(Settings(store, TOKEN)), TOKEN, PORT, rebinding_rules("127.0.0.1"))
    with TestClient(app, base_url=f"http://127.0.0.1:{PORT}", follow_redirects=False) as c:
        c.cookies.set(cookie_name(PORT), TOKEN)
        yield c


def test_a_batch_page_counts_its_tasks_and_says_why_each_failed(
    harness: AgentHarness, store: Path, viewer: TestClient
) -> None:
    config = harness.config({"demo2": DEMO})
    results = run_bounded(
        batch,
        [
            {"key": HOSTILE_KEY, "entry": "acp_spawn", "agent": "demo2", "task": "Reply OK"},
            {"key": "broken", "entry": "bash", "task": "exit 3"},
            {"key": "plain", "entry": "bash", "task": "true"},
            {"key": "unknown", "entry": "acp_spawn", "agent": "no-such-profile", "task": "hi"},
        ],
        config=config,
        concurrency=4,
        limit=60,
    )
    ids = {r.meta.batch["id"] for r in results}  # type: ignore[index]
    assert len(ids) == 1
    (batch_id,) = ids
    assert batch_id.startswith("batch_")
    opened = Store(store)
    try:
        rows = opened.db.execute("SELECT id FROM runs WHERE batch_id = ?", (batch_id,))
        assert sorted(row[0] for row in rows) == sorted(r.task_id for r in results)
    finally:
        opened.close()

    page = viewer.get(f"/batches/{batch_id}")
    assert page.status_code == 200
    text = page.text
    assert '<dd id="total">4</dd>' in text
    assert "done 2</span>" in text and "failed 2</span>" in text
    problems = text.split('id="problems"')[1].split("</div>")[0]
    broken, unknown = results[1], results[3]
    assert problems.count("<tr class=") == 2
    assert f'href="/runs/{broken.task_id}"' in problems and "nonzero_exit" in problems
    assert (
        f'href="/runs/{unknown.task_id}"' in problems and str(unknown.meta.error_code) in problems
    )
    assert "no-such-profile" in problems  # the reason, from the envelope
    assert HOSTILE_KEY not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert 'data-live="1"' in text  # a batch's page follows its runs

    listing = viewer.get("/").text
    assert listing.count(f'href="/batches/{batch_id}"') == 4  # each run links its batch
    assert viewer.get("/batches/batch_000000000000").status_code == 404


def test_a_comparison_page_shows_the_attempts_the_pick_and_the_winners_diff(
    harness: AgentHarness, store: Path, viewer: TestClient, tmp_path: Path
) -> None:
    config = harness.config(
        {"plain": DEMO, "writer": {**DEMO, "session": {"system_prompt": WRITES}}}
    )
    repo = new_repo(tmp_path / "repo")
    result = run_bounded(
        compare, ["plain", "writer"], "Reply with exactly DONE", verify="test -f expected.txt",
        cwd=repo, config=config, limit=90,
    )  # fmt: skip
    assert result.id.startswith("cmp_")
    writer = result.winning
    assert writer is not None and writer.agent == "writer"
    plain = next(a for a in result.attempts if a.agent == "plain")
    assert {a.envelope.meta.batch["id"] for a in result.attempts} == {result.id}  # type: ignore[index]

    page = viewer.get(f"/comparisons/{result.id}")
    assert page.status_code == 200
    text = page.text
    attempts = text.split('id="attempts"')[1].split("</table>")[0]
    assert attempts.count("<tr class=") == 2
    assert (
        f'href="/runs/{writer.task_id}"' in attempts and f'href="/runs/{plain.task_id}"' in attempts
    )
    winner_row = attempts.split(f'data-run="{writer.task_id}"')[1].split("</tr>")[0]
    assert "winner</span>" in winner_row and "passed" in winner_row and "1 files" in winner_row
    plain_row = attempts.split(f'data-run="{plain.task_id}"')[1].split("</tr>")[0]
    assert "exit 1" in plain_row and "winner" not in plain_row
    assert f"writer#1 ({writer.task_id})" in text
    assert f'<dd id="reason">{result.reason}</dd>' in text.replace("&#39;", "'")
    assert '<span class="d-add">+written by the writer</span>' in text
    assert 'data-live="0"' in text  # decided: nothing more to follow
    listing = viewer.get("/").text
    assert listing.count(f'href="/comparisons/{result.id}"') == 2
    assert table(result)[-1] == (
        f"comparison {result.id}: acp-bridge ui shows it at /comparisons/{result.id}"
    )
