"""The viewer's pages over a store of recorded runs (pages.py), through Starlette's test
client: the list and its filters and pages, a run's timeline and diff, what an agent wrote
shown as text, the downloads, and stop: only with the form token, the CLI's stop; a
comparison's page before and after its decision (tests/process/test_ui_groups.py: both
group pages over real runs)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from acp_bridge._compare.compare_result import AttemptResult, CompareResult
from acp_bridge._compare.verifier import VerifierResult
from acp_bridge._mcp.transport.listen import rebinding_rules
from acp_bridge._os.process import proc
from acp_bridge._runs.store.run_pages import record_comparison
from acp_bridge._runs.store.run_records import NewRun, Outcome
from acp_bridge._runs.store.run_store import Store, close_stores
from acp_bridge._ui.access import Access, cookie_name, form_token
from acp_bridge._ui.pages import PAGE_RUNS, Settings, build_app
from acp_bridge.envelope import done

TOKEN = "token-of-the-test"
PORT = 8765
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def new_run(n: int, task: str = "", agent: str = "demo") -> NewRun:
    return NewRun(
        id=f"sub_{n:012x}", entry="acp_spawn", agent=agent, task=task or f"task {n}",
        cwd="/tmp", caller_cwd="/", request={"entry": "acp_spawn"}, config_path=None,
        lane=f"agent:{agent}", group=None, env_key="k",
    )  # fmt: skip


def rid(n: int) -> str:
    return f"sub_{n:012x}"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "runs.db"
    close_stores()


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    opened = Store(db)
    yield opened
    opened.close()


@pytest.fixture
def browser(db: Path, store: Store) -> Iterator[TestClient]:
    app: Any = Access(build_app(Settings(db, TOKEN)), TOKEN, PORT, rebinding_rules("127.0.0.1"))
    with TestClient(app, base_url=f"http://127.0.0.1:{PORT}", follow_redirects=False) as c:
        c.cookies.set(cookie_name(PORT), TOKEN)
        yield c


def ended(store: Store, n: int, envelope: dict[str, Any], status: str = "done") -> None:
    outcome = Outcome(status, envelope, str(envelope.get("summary", "")), None)  # type: ignore[arg-type]
    with store.write() as conn:
        assert store.finish(conn, rid(n), outcome)


def test_the_list_pages_filters_and_shows_agent_text_as_text(
    store: Store, browser: TestClient
) -> None:
    me = proc.own_identity()
    for n in range(PAGE_RUNS + 5):
        store.create(new_run(n, HOSTILE if n == 53 else "", "other" if n == 4 else "demo"), me,
                     detached=False)  # fmt: skip
    page = browser.get("/")
    assert page.status_code == 200
    assert page.text.count('<tr class="s-running"') == PAGE_RUNS
    assert "<script>alert" not in page.text and "&lt;script&gt;alert(&#34;x&#34;)" in page.text
    older = page.text.split('id="older" href="')[1].split('"')[0].replace("&amp;", "&")
    rest = browser.get(older)
    assert rest.text.count('<tr class="s-running"') == 5 and rid(0) in rest.text
    only = browser.get("/", params={"agent": "other"})
    assert only.text.count("<tr class=") == 1 and rid(4) in only.text
    rows = browser.get("/runs/rows", params={"q": "alert"})
    assert rows.text.count("<tr class=") == 1 and rid(53) in rows.text
    bad = browser.get("/", params={"status": "bogus"})
    assert bad.status_code == 400 and "status: &#39;bogus&#39; is none of" in bad.text
    assert browser.get("/", params={"before": "1e9"}).status_code == 400


def test_a_runs_page_shows_its_timeline_diff_and_envelope(
    tmp_path: Path, store: Store, browser: TestClient
) -> None:
    me = proc.own_identity()
    store.create(new_run(1), me, detached=False)
    events = [
        {"kind": "message", "text": "Hello "},
        {"kind": "message", "text": HOSTILE},
        {"kind": "tool_call", "tool_call_id": "c1", "title": "run ls", "tool_kind": "execute"},
        {"kind": "permission", "tool_call_id": "c1", "title": "run ls", "decision": "rejected",
         "reason": "rule 2: reject execute 'ls'"},
        {"kind": "tool_update", "tool_call_id": "c1", "status": "failed"},
        {"kind": "plan", "entries": [{"status": "pending", "content": "step <one>"}]},
        {"kind": "terminal", "state": "exited", "command": "echo hi", "exit_code": 0},
        {"kind": "subagent", "id": "s1", "status": "completed", "title": "child <x>"},
    ]  # fmt: skip
    store.add_events(rid(1), [json.dumps({"task_id": rid(1), **e}) for e in events], 0)
    diff = tmp_path / "run.diff"
    diff.write_text("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new <b>\n")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"dir": "in"}\n')
    meta = {"diff": str(diff), "files_changed": ["x"]}
    ended(store, 1, {"status": "done", "summary": "ok", "output": HOSTILE, "meta": meta})
    with store.write() as conn:
        conn.execute("UPDATE runs SET transcript = ? WHERE id = ?", (str(transcript), rid(1)))
    page = browser.get(f"/runs/{rid(1)}").text
    assert "Hello &lt;script&gt;" in page and "<script>alert" not in page
    assert page.count('data-kind="tool_call"') == 1 and "st-failed" in page
    assert "decided by: rule 2: reject execute &#39;ls&#39;" in page
    assert "step &lt;one&gt;" in page and "exit 0" in page and "child &lt;x&gt;" in page
    assert '<span class="d-add">+new &lt;b&gt;</span>' in page
    assert 'data-live="0"' in page and 'id="stop"' not in page  # ended: nothing to follow
    fragment = browser.get(f"/runs/{rid(1)}/timeline", params={"after": 5})
    assert fragment.headers["x-last"] == "8" and fragment.text.count("<li class=") == 3
    download = browser.get(f"/runs/{rid(1)}/transcript")
    assert download.text == '{"dir": "in"}\n'
    assert "attachment" in download.headers["content-disposition"]
    envelope = browser.get(f"/runs/{rid(1)}/envelope.json")
    assert envelope.json()["output"] == HOSTILE
    assert browser.get(f"/runs/{rid(2)}").status_code == 404
    assert browser.get(f"/runs/{rid(2)}/transcript").status_code == 404


def test_stop_needs_the_form_token_and_stops_as_the_cli_does(
    store: Store, browser: TestClient
) -> None:
    me = proc.own_identity()
    store.create(new_run(1), me, detached=True)  # queued: stop ends it here and now
    page = browser.get(f"/runs/{rid(1)}").text
    assert 'id="stop"' in page and 'data-live="1"' in page
    refused = browser.post(f"/runs/{rid(1)}/stop", data={"form": "guess"})
    assert refused.status_code == 403 and store.get(rid(1)).status == "queued"  # type: ignore[union-attr]
    stopped = browser.post(f"/runs/{rid(1)}/stop", data={"form": form_token(TOKEN)})
    assert stopped.status_code == 303 and stopped.headers["location"] == f"/runs/{rid(1)}"
    assert store.get(rid(1)).status == "cancelled"  # type: ignore[union-attr]
    store.create(new_run(2), me, detached=False)  # foreground: its caller stops it
    refused = browser.post(f"/runs/{rid(2)}/stop", data={"form": form_token(TOKEN)})
    assert refused.status_code == 409 and "foreground run" in refused.text
    assert browser.get(f"/runs/{rid(1)}/stop").status_code == 405


def test_an_ended_runs_live_stream_says_its_last_event_and_that_it_ended(
    store: Store, browser: TestClient
) -> None:
    me = proc.own_identity()
    store.create(new_run(1), me, detached=False)
    store.add_events(rid(1), [json.dumps({"kind": "message", "text": "x"})] * 3, 0)
    ended(store, 1, {"status": "done"}, "failed")
    with browser.stream("GET", f"/runs/{rid(1)}/live", params={"after": 1}) as answer:
        assert answer.headers["content-type"].startswith("text/event-stream")
        text = "".join(answer.iter_text())
    assert "event: events\r\ndata: 3" in text and "event: ended\r\ndata: failed" in text


def test_an_envelope_naming_any_other_file_as_its_diff_shows_none(
    tmp_path: Path, store: Store, browser: TestClient
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("+not a diff, a private file\n")
    store.create(new_run(1), proc.own_identity(), detached=False)
    ended(store, 1, {"status": "done", "meta": {"diff": str(secret)}})
    page = browser.get(f"/runs/{rid(1)}").text
    assert 'id="diff"' not in page and "private file" not in page


def test_a_batch_tasks_row_shows_its_key_retries_node_and_error_code(
    store: Store, browser: TestClient
) -> None:
    me = proc.own_identity()
    store.create(new_run(1), me, detached=False)
    batch = {"key": "task-<7>", "index": 7, "attempts": 2}
    envelope = {"status": "failed", "meta": {"batch": batch, "node": "node-b"}}
    outcome = Outcome("failed", envelope, "lost twice", "node_lost")
    with store.write() as conn:
        assert store.finish(conn, rid(1), outcome)
    row = browser.get("/").text
    assert "task-&lt;7&gt;, 2 attempts @ node-b" in row
    assert '<span class="code">node_lost</span>' in row


def test_a_comparison_page_follows_until_decided_and_shows_its_verifiers_output_as_text(
    store: Store, browser: TestClient
) -> None:
    me = proc.own_identity()
    cmp_id = "cmp_0123456789ab"
    store.create(new_run(1)._replace(batch_id=cmp_id), me, detached=False)
    page = browser.get(f"/comparisons/{cmp_id}").text
    assert "Still running" in page and 'data-live="1"' in page and rid(1) in page
    shown = page.split('data-mark="')[1].split('"')[0]
    with browser.stream("GET", f"/live/batches/{cmp_id}", params={"mark": "stale"}) as answer:
        first = next(answer.iter_text())  # a change since the page was rendered: told at once
    assert "event: changed" in first
    ended(store, 1, {"status": "done", "meta": {"batch": {"id": cmp_id, "key": "demo#1"}}})
    envelope = done("ok", task_id=rid(1))
    verifier = VerifierResult(command="make test", passed=False, exit_code=2, output=HOSTILE)
    attempt = AttemptResult(agent="demo", attempt=1, task_id=rid(1), status="done",
                            envelope=envelope, verifier=verifier, files=0)  # fmt: skip
    result = CompareResult(
        id=cmp_id, task=HOSTILE, agents=["demo"], n=1, verify="make test", pick="verified",
        repository="/r", base="abc", attempts=[attempt], winner=None,
        reason="no attempt passed the verifier",
    )  # fmt: skip
    record_comparison(store, cmp_id, result.to_json())
    page = browser.get(f"/comparisons/{cmp_id}").text
    assert 'data-live="0"' in page and "Still running" not in page
    assert page.split('data-mark="')[1].split('"')[0] != shown  # it ended, and was decided
    assert '<dd id="reason">no attempt passed the verifier</dd>' in page
    assert "exit 2" in page and "demo#1" in page and 'id="diff"' not in page
    assert "<script>alert" not in page and page.count("&lt;script&gt;alert") == 2  # task, output
    record_comparison(store, cmp_id, '{"winner": 1}')  # another version's document
    assert "its recorded result cannot be read" in browser.get(f"/comparisons/{cmp_id}").text
    assert browser.get("/comparisons/cmp_ffffffffffff").status_code == 404
    with browser.stream("GET", "/live/batches/cmp_ffffffffffff") as answer:
        assert answer.status_code == 404


def test_the_lists_live_stream_tells_a_change_since_the_page_was_rendered(
    store: Store, browser: TestClient
) -> None:
    me = proc.own_identity()
    store.create(new_run(1), me, detached=False)
    page = browser.get("/").text
    shown = page.split('data-mark="')[1].split('"')[0]
    store.create(new_run(2), me, detached=False)  # between the page and its stream
    with browser.stream("GET", "/live/runs", params={"mark": shown}) as answer:
        first = next(answer.iter_text())  # told at once, not lost in the gap
    assert "event: changed" in first
    assert browser.get("/").text.split('data-mark="')[1].split('"')[0] != shown
