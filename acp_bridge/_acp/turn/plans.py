"""The agent's plan as ``meta.plan``: the whole-plan ``plan`` update (stable v1) and plan
operations (``plan_update`` / ``plan_removed``, unstable v1 and v2).

A ``plan`` update replaces the one unnamed plan. Plan operations address plans by id: an
``items`` plan is its entries, a ``markdown`` plan one entry holding its text, a ``file``
plan one entry holding its URI; ``plan_removed`` drops that plan. ``meta.plan`` lists the
entries of every live plan in the order the plans first appeared, each entry of a named
plan carrying its ``plan_id``. Bounded: :data:`MAX_PLANS` plans of :data:`MAX_ENTRIES`
entries, texts cut to :data:`TEXT_CHARS`. A plan past the cap, or with an id longer than
:data:`MAX_ID_CHARS`, is dropped and counted (``_records/bounded.py``): its updates and its
removal never touch another plan.
"""

from __future__ import annotations

from typing import Any

from acp_bridge._acp.wire.schema import PlanUpdate
from acp_bridge._records.bounded import BoundedTable

MAX_PLANS = 32
MAX_ENTRIES = 512
MAX_ID_CHARS = 256
TEXT_CHARS = 64 * 1024
_UNNAMED = ""


class Plans:
    """Every live plan of a turn, by id (the unnamed one is the v1 ``plan``)."""

    def __init__(self) -> None:
        self._plans: BoundedTable[str, list[dict[str, Any]]] = BoundedTable(
            "plans", MAX_PLANS, MAX_ID_CHARS
        )
        self.entries_dropped = 0
        """Entries of plans past MAX_ENTRIES, not kept."""

    def replace(self, update: dict[str, Any]) -> list[dict[str, Any]]:
        """A v1 ``plan`` update: the unnamed plan, whole."""
        plan = PlanUpdate.model_validate(update)
        self._plans.put(_UNNAMED, [e.model_dump() for e in self._cut(plan.entries)])
        return self.entries()

    def _cut(self, entries: list[Any]) -> list[Any]:
        self.entries_dropped += max(0, len(entries) - MAX_ENTRIES)
        return entries[:MAX_ENTRIES]

    def update(self, update: dict[str, Any]) -> list[dict[str, Any]]:
        """A ``plan_update``: one named plan, whole."""
        plan = update.get("plan")
        if not isinstance(plan, dict) or not isinstance(plan.get("planId"), str):
            raise TypeError("plan_update.plan needs a planId")
        plan_id, shape = plan["planId"], plan.get("type")
        if not self._plans.admits(plan_id):  # past the cap, or an id too long: counted
            return self.entries()
        if shape == "items":
            entries = PlanUpdate.model_validate({"entries": plan.get("entries")}).entries
            kept = [{"plan_id": plan_id, **e.model_dump()} for e in self._cut(entries)]
        elif shape == "markdown" and isinstance(plan.get("content"), str):
            kept = [
                {"plan_id": plan_id, "format": "markdown", "content": plan["content"][:TEXT_CHARS]}
            ]
        elif shape == "file" and isinstance(plan.get("uri"), str):
            kept = [{"plan_id": plan_id, "format": "file", "uri": plan["uri"][:TEXT_CHARS]}]
        else:  # a newer plan shape: kept by id, its content unknown
            kept = [{"plan_id": plan_id, "format": str(shape)[:64]}]
        self._plans[plan_id] = kept  # admitted above
        return self.entries()

    def remove(self, update: dict[str, Any]) -> list[dict[str, Any]]:
        plan_id = update.get("planId")
        if not isinstance(plan_id, str):
            raise TypeError("plan_removed needs a planId")
        self._plans.pop(plan_id, None)  # an id never kept removes nothing
        return self.entries()

    def entries(self) -> list[dict[str, Any]]:
        return [entry for plan in self._plans.values() for entry in plan]

    def clear(self) -> None:
        self._plans.reset()
        self.entries_dropped = 0

    def warnings(self) -> list[str]:
        out = [w for w in (self._plans.warning(),) if w]
        if self.entries_dropped:
            out.append(
                f"plans: kept the first {MAX_ENTRIES} entries of each, "
                f"{self.entries_dropped} more not kept"
            )
        return out
