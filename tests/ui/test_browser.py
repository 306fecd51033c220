"""``acp-bridge ui`` as a person uses it: a real headless Chromium against the viewer,
started as a command, over real runs of the bundled demo agent: a run's timeline, the list
and a run followed live, a run stopped from its page, a batch followed live, a comparison,
and an agent's markup that must stay text. Marked ``browser`` (``pytest -m browser``; CI
runs them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.helpers import new_repo
from tests.runs.conftest import RunsEnv
from tests.ui.conftest import Viewer, screenshot

pytestmark = pytest.mark.browser

HOSTILE = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'


def test_a_runs_timeline_shows_its_tools_permissions_and_diff(
    runs: RunsEnv, viewer: Viewer, page: Any
) -> None:
    first = runs.demo("Reply with exactly FIRST")
    first.wait_sync(60)
    run = runs.demo(
        "write notes.txt: hello from the demo\nrun rm -rf build\nReply with exactly DONE"
    )
    run.wait_sync(60)
    page.goto(viewer.url)
    assert page.url == viewer.base + "/"  # the token left the address
    rows = page.locator("#rows tr")
    assert rows.count() == 2
    assert page.locator(f"tr[data-run='{run.id}'] .status").inner_text() == "done"
    screenshot(page, "ui-runs")
    page.click(f"a[href='/runs/{run.id}']")
    page.wait_for_url(f"**/runs/{run.id}")
    tool = page.locator("#timeline li[data-kind='tool_call']").first
    assert "write notes.txt" in tool.inner_text() and "completed" in tool.inner_text()
    permissions = page.locator("#timeline li[data-kind='permission']")
    written = permissions.nth(0).inner_text()
    assert "allowed" in written and "decided by: mode workspace-write" in written
    ran = permissions.nth(1).inner_text()  # the demo profile's own rule allows its commands
    assert "run rm -rf build" in ran and "decided by: rule 1" in ran
    assert "DONE" in page.locator("#timeline li[data-kind='message']").last.inner_text()
    assert "+hello from the demo" in page.locator("#diff .d-add").first.inner_text()
    screenshot(page, "ui-run")
    with page.expect_download() as download:
        page.click("a[href$='/transcript']")
    transcript = download.value.path().read_text()
    assert transcript and all(json.loads(line) for line in transcript.splitlines())


def test_the_list_and_a_run_follow_live_and_stop_stops_it(
    runs: RunsEnv, viewer: Viewer, page: Any
) -> None:
    page.goto(viewer.url)
    assert page.locator("#rows tr td.empty").count() == 1
    run = runs.demo("sleep 1\nsleep 120\nReply with exactly never")
    row = page.locator(f"tr[data-run='{run.id}']")
    row.wait_for()  # the list took it without a reload
    page.click(f"a[href='/runs/{run.id}']")
    page.wait_for_url(f"**/runs/{run.id}")
    page.evaluate("window.sameDocument = true")  # gone if the page were loaded again
    page.locator("#timeline li[data-kind='tool_call'][data-call='call_2']").wait_for()
    # Playwright waits for the status the live stream sets (no poll of our own)
    page.locator("#timeline li[data-call='call_1'] .status", has_text="completed").wait_for()
    assert page.evaluate("window.sameDocument") is True  # followed, not reloaded
    screenshot(page, "ui-live")
    page.click("#stop")
    # ended: the page loads itself again, with the run's end (the CSP forbids the eval a
    # wait_for_function would need: a locator waits instead)
    page.locator("#run-status", has_text="cancelled").wait_for(timeout=60_000)
    assert run.status == "cancelled"
    assert page.locator("#stop").count() == 0
    assert "call_2" in page.locator("#timeline li[data-kind='tool_call']").last.get_attribute(
        "data-call"
    )


def test_agent_markup_is_shown_as_text_and_never_runs(
    runs: RunsEnv, viewer: Viewer, page: Any
) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    run = runs.demo(f"Reply with exactly {HOSTILE}")
    run.wait_sync(60)
    page.goto(viewer.url)
    what = page.locator(f"tr[data-run='{run.id}'] td.what").inner_text()
    assert "<script>window.pwned=1</script>" in what
    page.goto(f"{viewer.base}/runs/{run.id}")
    message = page.locator("#timeline li[data-kind='message']").last
    assert HOSTILE in message.inner_text()
    assert page.locator("#timeline img, main script").count() == 0
    assert page.evaluate("window.pwned") is None
    assert dialogs == []
    envelope = page.locator("#envelope").text_content()  # folded away: not rendered
    assert "<script>window.pwned=1</script><img src=x onerror=" in envelope


def test_a_batch_is_followed_live_by_status_and_node_and_links_its_failed_task(
    runs: RunsEnv, viewer: Viewer, page: Any
) -> None:
    tasks = [
        {"key": "broken", "entry": "bash", "task": "echo no >&2; exit 3"},
        {"key": "slow", "entry": "bash", "task": "sleep 2"},
        {"key": "quick", "entry": "bash", "task": "true"},
    ]
    listed = runs.root / "tasks.jsonl"
    listed.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    command = [sys.executable, "-m", "acp_bridge", "batch", str(listed), "--concurrency", "1"]
    command += ["--out", str(runs.root / "results.jsonl")]
    said = runs.root / "batch.err"
    with said.open("w") as stderr:  # the child has its own copy
        process = subprocess.Popen(command, cwd=runs.root, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=stderr)  # fmt: skip
    try:
        page.goto(viewer.url)
        link = page.locator("a.group").first
        link.wait_for(timeout=60_000)  # the list took the batch's first task live
        link.click()
        page.wait_for_url("**/batches/batch_*")
        # followed while it runs: the page loads itself again as each task ends
        page.locator("#by-status", has_text="done 2").wait_for(timeout=60_000)
        assert process.wait(60) == 1  # one task failed
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    batch_id = page.url.rsplit("/", 1)[1]
    assert f"batch {batch_id}: acp-bridge ui shows it at /batches/{batch_id}" in said.read_text()
    page.reload()
    assert page.locator("#total").inner_text() == "3"
    assert "failed 1" in page.locator("#by-status").inner_text()
    nodes = page.locator("#nodes tbody tr")
    assert nodes.count() == 1 and "done 2" in nodes.inner_text()
    failed = page.locator("#problems tbody tr")
    assert failed.count() == 1
    assert "nonzero_exit" in failed.inner_text() and "broken" in failed.inner_text()
    screenshot(page, "ui-batch")
    failed.locator("a").click()
    page.wait_for_url("**/runs/sub_*")
    assert page.locator("#run-status").inner_text() == "failed"


def test_a_comparison_shows_its_attempts_the_pick_and_the_winners_diff(
    runs: RunsEnv, viewer: Viewer, page: Any
) -> None:
    demo = {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]}
    writes = {**demo, "session": {"system_prompt": "write expected.txt: made by the writer"}}
    runs.config({"plain": demo, "writer": writes})
    repo = new_repo(runs.root / "repo")
    config = str(runs.root / "acp-bridge.yaml")  # the search stops at the repository's top
    command = [sys.executable, "-m", "acp_bridge", "--config", config, "compare", "plain,writer"]
    command += ["Reply with exactly DONE", "--verify", "test -f expected.txt", "--json"]
    ended = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=90)
    assert ended.returncode == 0, ended.stderr
    result = json.loads(ended.stdout)
    winner = next(a for a in result["attempts"] if a["task_id"] == result["winner"])
    assert winner["agent"] == "writer"
    page.goto(viewer.url)
    page.locator(f"a[href='/comparisons/{result['id']}']").first.click()
    page.wait_for_url(f"**/comparisons/{result['id']}")
    assert page.locator("#winner").inner_text() == f"writer#1 ({winner['task_id']})"
    assert page.locator("#reason").inner_text() == result["reason"]
    rows = page.locator("#attempts tbody tr")
    assert rows.count() == 2
    won = page.locator(f"#attempts tr[data-run='{winner['task_id']}']").inner_text()
    assert "winner" in won and "passed" in won
    lost = page.locator("#attempts tbody tr:not(.winner)").inner_text()
    assert "exit 1" in lost
    assert "+made by the writer" in page.locator("#diff .d-add").last.inner_text()
    screenshot(page, "ui-comparison")


def test_without_the_token_nothing_is_shown(viewer: Viewer, page: Any) -> None:
    answer = page.goto(viewer.base + "/")
    assert answer.status == 401
    assert "unauthorized" in page.content()
    assert os.environ.get("ACP_BRIDGE_RUNS_DB")  # the viewer read this test's store
