"""The file changes an agent reports in its tool calls, to set beside what was measured.

v2 diffs are structured: ``changes`` (operation, path, and for move/copy the old path) with
an optional ``patch`` (``git_patch`` text); v1 diffs name one ``path`` with its old and new
text. Both become records for ``meta.reported_changes``; the patch text is kept, bounded,
for ``meta.reported_patch``. Only the changes of tool calls that completed are reported: a
diff shown with a permission request that was refused (or a call that failed) describes a
change never made (codex-acp's refused edits). :func:`disagreements` compares the reported
paths with the sandbox's own ``files_changed``: a path reported but not changed, or changed
but not reported by an agent that reports changes, is flagged in ``meta.warnings`` — the
measurement is the fact, the report is the agent's word. Agents report a path relative to
the session's cwd (opencode 1.18) or absolute (codex), the sandbox measures absolute ones:
both are compared absolute.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

MAX_CHANGES = 2048
MAX_PATCH_CHARS = 256 * 1024
PATH_CHARS = 4096


class FileChanges:
    """Every file change the agent's tool calls reported, in order, without duplicates."""

    def __init__(self) -> None:
        self.changes: dict[tuple[str, str, str], dict[str, Any]] = {}
        """By tool call, operation and path: each call's own, until only the made count."""
        self.patch: list[tuple[str, str]] = []  # (tool call id, git_patch text)
        self._patch_chars = 0

    def content(self, tool_call_id: str, items: list[Any]) -> None:
        """A tool call's content items (or one streamed item): keep what its diffs say."""
        for item in items:
            if isinstance(item, dict) and item.get("type") == "diff":
                self._diff(tool_call_id, item)

    def _diff(self, tool_call_id: str, diff: dict[str, Any]) -> None:
        changes = diff.get("changes")
        if isinstance(changes, list):  # v2: structured
            for change in changes:
                if isinstance(change, dict) and isinstance(change.get("path"), str):
                    operation = change.get("operation")
                    self._add(
                        tool_call_id, str(operation)[:32], change["path"], change.get("oldPath")
                    )
            patch = diff.get("patch")
            if isinstance(patch, dict) and isinstance(patch.get("text"), str):
                self._keep_patch(tool_call_id, patch["text"])
        elif isinstance(diff.get("path"), str):  # v1: one file, old and new text
            operation = "add" if diff.get("oldText") is None else "modify"
            self._add(tool_call_id, operation, diff["path"], None)

    def _add(self, tool_call_id: str, operation: str, path: str, old: Any) -> None:
        key = (tool_call_id, operation, path[:PATH_CHARS])
        if key in self.changes or len(self.changes) >= MAX_CHANGES:
            return
        record = {"operation": operation, "path": path[:PATH_CHARS], "tool_call_id": tool_call_id}
        if isinstance(old, str):
            record["old_path"] = old[:PATH_CHARS]
        self.changes[key] = record

    def _keep_patch(self, tool_call_id: str, text: str) -> None:
        room = MAX_PATCH_CHARS - self._patch_chars
        if room > 0:
            self.patch.append((tool_call_id, text[:room]))
            self._patch_chars += min(len(text), room)

    def records(self, made: Collection[str]) -> list[dict[str, Any]]:
        """The changes of the tool calls in ``made`` (those that completed), each operation
        on a path once (the first call that reported it)."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for (call_id, operation, path), record in self.changes.items():
            if call_id in made:
                out.setdefault((operation, path), record)
        return list(out.values())

    def patch_text(self, made: Collection[str]) -> str:
        return "".join(text for call_id, text in self.patch if call_id in made)

    def clear(self) -> None:
        self.changes.clear()
        self.patch.clear()
        self._patch_chars = 0


def disagreements(reported: list[dict[str, Any]], measured: list[str], cwd: str) -> list[str]:
    """Warnings where the agent's reported changes and the measured ones differ."""
    if not reported:
        return []
    root = os.path.normpath(cwd)
    prefix = root.rstrip("/") + "/"

    def absolute(path: str) -> str:
        return os.path.normpath(Path(root, path))  # an absolute path stays itself

    def shown(path: str) -> str:
        return path[len(prefix) :] if path.startswith(prefix) else path

    said = {absolute(c["path"]) for c in reported}
    said |= {absolute(c["old_path"]) for c in reported if "old_path" in c}
    seen = {absolute(path) for path in measured}
    out = []
    if only_said := sorted(shown(path) for path in said - seen):
        out.append(
            f"the agent reported changes the sandbox did not measure: {', '.join(only_said[:20])}"
        )
    if only_seen := sorted(shown(path) for path in seen - said):
        out.append(f"files changed that the agent did not report: {', '.join(only_seen[:20])}")
    return out
