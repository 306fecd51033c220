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

Bounded: :data:`MAX_CHANGES` changes, paths (and operations) of :data:`PATH_CHARS`
characters, :data:`MAX_PATCH_CHARS` of patch text; what does not fit is dropped and counted
— a path is never cut (a cut path names another file).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from acp_bridge._records.bounded import BoundedTable

MAX_CHANGES = 2048
MAX_PATCH_CHARS = 256 * 1024
PATH_CHARS = 4096


class FileChanges:
    """Every file change the agent's tool calls reported, in order, without duplicates."""

    def __init__(self) -> None:
        self.changes: BoundedTable[tuple[str, str, str], dict[str, Any]] = BoundedTable(
            "file changes reported", MAX_CHANGES, PATH_CHARS
        )
        """By tool call, operation and path: each call's own, until only the made count."""
        self.patch: list[tuple[str, str]] = []  # (tool call id, git_patch text)
        self._patch_chars = 0
        self.patch_dropped = 0
        """Characters of patch text past MAX_PATCH_CHARS, not kept."""

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
                    self._add(tool_call_id, str(operation), change["path"], change.get("oldPath"))
            patch = diff.get("patch")
            if isinstance(patch, dict) and isinstance(patch.get("text"), str):
                self._keep_patch(tool_call_id, patch["text"])
        elif isinstance(diff.get("path"), str):  # v1: one file, old and new text
            operation = "add" if diff.get("oldText") is None else "modify"
            self._add(tool_call_id, operation, diff["path"], None)

    def _add(self, tool_call_id: str, operation: str, path: str, old: Any) -> None:
        old_path = old if isinstance(old, str) else ""
        key = (tool_call_id, operation, path)
        if key in self.changes:
            return
        if len(old_path) > PATH_CHARS:  # as a path of the key would be: dropped, counted
            self.changes.oversize += 1
            return
        record = {"operation": operation, "path": path, "tool_call_id": tool_call_id}
        if old_path:
            record["old_path"] = old_path
        self.changes.put(key, record)

    def _keep_patch(self, tool_call_id: str, text: str) -> None:
        room = MAX_PATCH_CHARS - self._patch_chars
        if room > 0:
            self.patch.append((tool_call_id, text[:room]))
            self._patch_chars += min(len(text), room)
        self.patch_dropped += max(0, len(text) - max(room, 0))

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
        self.changes.reset()
        self.patch.clear()
        self._patch_chars = self.patch_dropped = 0

    def warnings(self) -> list[str]:
        out = [w for w in (self.changes.warning(),) if w]
        if self.patch_dropped:
            out.append(
                f"reported patch text: kept the first {MAX_PATCH_CHARS} characters, "
                f"{self.patch_dropped} more not kept"
            )
        return out


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
