"""What the config says about runs, in the form the run store keeps it.

The rules that govern runs must be the same in every process (a queued supervisor decides
with SQLite alone, without reading YAML), so the config's ``runs:`` section and the
profiles' ``max_concurrent`` are written into the store by whoever starts a run: lane limits
into ``limits`` (the lane ``*`` for ``runs.max_concurrent``), retention, the event cap and
how long an idle supervisor waits for more runs into ``settings``. The latest start wins: two
projects with different configs sharing one store take turns setting the rules; a removed
limit is removed.
"""

from __future__ import annotations

from acp_bridge._runs.store import lanes
from acp_bridge.config import LoadedConfig, RunsSettings


def store_settings(runs: RunsSettings) -> dict[str, str | None]:
    """``settings`` rows for the retention, the event cap (``none``: no limit) and the
    supervisors' idle time."""
    days, keep = runs.retention.days, runs.retention.keep
    return {
        "retention_days": "none" if days is None else repr(float(days)),
        "retention_keep": "none" if keep is None else str(keep),
        "max_events": str(runs.max_events),
        "supervisor_idle": repr(float(runs.supervisor_idle)),
    }


def lane_limits(loaded: LoadedConfig, lane: str, agent: str | None) -> dict[str, int | None]:
    """``limits`` rows for the global lane and ``lane``: the profile's ``max_concurrent``
    when the lane is its agent's own, else none the config could set."""
    limits: dict[str, int | None] = {lanes.GLOBAL: loaded.config.runs.max_concurrent}
    if agent is not None and lane == lanes.lane_for("acp_spawn", agent):
        limits[lane] = loaded.profiles.get(agent).profile.max_concurrent
    return limits
