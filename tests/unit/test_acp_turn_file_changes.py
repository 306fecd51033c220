"""Reported file changes beside the measured ones (issue 33): agents report a path relative
to the session's cwd (opencode 1.18) or absolute (codex), the sandbox measures absolute
paths; and only a tool call that completed made its change (a refused edit did not)."""

from __future__ import annotations

from acp_bridge._acp.turn.file_changes import FileChanges, disagreements


def test_a_relative_report_matches_the_absolute_measurement() -> None:
    reported = [{"operation": "modify", "path": "notes.txt", "tool_call_id": "t1"}]
    assert disagreements(reported, ["/w/notes.txt"], "/w") == []


def test_an_absolute_report_matches_the_absolute_measurement() -> None:
    reported = [{"operation": "add", "path": "/w/new.txt", "tool_call_id": "t1"}]
    assert disagreements(reported, ["/w/new.txt"], "/w/") == []


def test_differences_are_named_once_each_relative_to_the_cwd() -> None:
    reported = [{"operation": "add", "path": "/tmp/out.txt", "tool_call_id": "t1"}]
    assert disagreements(reported, ["/w/sub/a.py"], "/w") == [
        "the agent reported changes the sandbox did not measure: /tmp/out.txt",
        "files changed that the agent did not report: sub/a.py",
    ]


def test_only_the_changes_of_calls_that_were_made_are_reported() -> None:
    changes = FileChanges()
    diff = {"type": "diff", "path": "/w/a.py", "oldText": "x", "newText": "y"}
    changes.content("refused", [diff])
    changes.content("done", [diff])
    v2 = {"type": "diff", "changes": [{"operation": "add", "path": "/w/b.py"}],
          "patch": {"format": "git_patch", "text": "+b\n"}}  # fmt: skip
    changes.content("refused-too", [v2])
    assert changes.records({"done"}) == [
        {"operation": "modify", "path": "/w/a.py", "tool_call_id": "done"}
    ]
    assert changes.patch_text({"done"}) == ""
    assert changes.patch_text({"done", "refused-too"}) == "+b\n"
    assert changes.records(set()) == []
