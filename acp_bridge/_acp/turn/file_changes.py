"""The file changes an agent reports in its tool calls, to set beside what was measured.

v2 diffs are structured: ``changes`` (operation, path, and for move/copy the old path) with
an optional ``patch`` (``git_patch`` text); v1 diffs name one ``path`` with its old and new
text. Both become records for ``meta.reported_changes``; the patch text is kept, bounded,
for ``meta.reported_patch``. :func:`disagreements` compares the reported paths with the
sandbox's own ``files_changed``: a path reported but not changed, or changed but not
reported by an agent that reports changes, is flagged in ``meta.warnings`` — the
measurement is the fact, the report is the agent's word.
"""

from __future__ import annotations

from typing import Any

MAX_CHANGES = 2048
MAX_PATCH_CHARS = 256 * 1024
PATH_CHARS = 4096


class FileChanges:
    """Every file change the agent's tool calls reported, in order, without duplicates."""

    def __init__(self) -> None:
        self.changes: dict[tuple[str, str], dict[str, Any]] = {}
        self.patch: list[str] = []
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
                self._keep_patch(patch["text"])
        elif isinstance(diff.get("path"), str):  # v1: one file, old and new text
            operation = "add" if diff.get("oldText") is None else "modify"
            self._add(tool_call_id, operation, diff["path"], None)

    def _add(self, tool_call_id: str, operation: str, path: str, old: Any) -> None:
        key = (operation, path[:PATH_CHARS])
        if key in self.changes or len(self.changes) >= MAX_CHANGES:
            return
        record = {"operation": operation, "path": path[:PATH_CHARS], "tool_call_id": tool_call_id}
        if isinstance(old, str):
            record["old_path"] = old[:PATH_CHARS]
        self.changes[key] = record

    def _keep_patch(self, text: str) -> None:
        room = MAX_PATCH_CHARS - self._patch_chars
        if room > 0:
            self.patch.append(text[:room])
            self._patch_chars += min(len(text), room)

    def records(self) -> list[dict[str, Any]]:
        return list(self.changes.values())

    def clear(self) -> None:
        self.changes.clear()
        self.patch.clear()
        self._patch_chars = 0


def disagreements(reported: list[dict[str, Any]], measured: list[str], cwd: str) -> list[str]:
    """Warnings where the agent's reported changes and the measured ones differ."""
    if not reported:
        return []
    prefix = cwd.rstrip("/") + "/"

    def relative(path: str) -> str:
        return path[len(prefix) :] if path.startswith(prefix) else path

    said = {relative(c["path"]) for c in reported}
    said |= {relative(c["old_path"]) for c in reported if "old_path" in c}
    seen = set(measured)
    out = []
    if only_said := sorted(said - seen):
        out.append(
            f"the agent reported changes the sandbox did not measure: {', '.join(only_said[:20])}"
        )
    if only_seen := sorted(seen - said):
        out.append(f"files changed that the agent did not report: {', '.join(only_seen[:20])}")
    return out
