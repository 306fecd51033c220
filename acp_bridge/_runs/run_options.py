"""What the run layer adds to an entry request: its group and budgets, a named session, and
which run store (:class:`RunOptions`), checked as it is made; and the config a run was
started with (:func:`run_config`), which its supervisor and its follow-ups go on with."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from acp_bridge._entries.enveloped import check_task_id
from acp_bridge._runs.budget import Budget
from acp_bridge._runs.store.run_records import RunRecord
from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.errors import ConfigError


@dataclass(frozen=True)
class RunOptions:
    """What the run layer adds to a request: its group and budgets, and which store.

    ``max_tokens`` / ``max_cost`` limit this run (tokens and cost as the agent reports
    them); runs started with the same ``group`` share a total, ``group_max_tokens`` /
    ``group_max_cost`` (stored for the group: later runs of it need not repeat them). A run
    over a budget is cancelled and fails with ``error_code: budget``. ``session`` names an
    ACP session: the run continues the latest run of that name (``acp_spawn`` only).
    """

    group: str | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    group_max_tokens: int | None = None
    group_max_cost: float | None = None
    store: str | Path | None = None
    """The run store (default: ``$ACP_BRIDGE_RUNS_DB``, else the state directory)."""
    session: str | None = None

    def __post_init__(self) -> None:
        Budget(self.max_tokens, self.max_cost)  # validates
        Budget(self.group_max_tokens, self.group_max_cost)
        if self.session is not None:
            _check_name(self.session, "session")
        if self.group is not None:
            _check_name(self.group, "group")
        elif self.group_max_tokens is not None or self.group_max_cost is not None:
            raise ConfigError("a group budget needs a group name")

    @property
    def group_budget(self) -> tuple[int | None, float | None] | None:
        if self.group_max_tokens is None and self.group_max_cost is None:
            return None
        return self.group_max_tokens, self.group_max_cost


def _check_name(name: str, what: str) -> None:
    try:
        check_task_id(name)
    except ConfigError:
        shown = repr(name) if len(repr(name)) <= 80 else f"{repr(name)[:80]}…"
        raise ConfigError(
            f"{what} must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or "
            f"digit; got {shown}"
        ) from None


def run_config(run: RunRecord) -> LoadedConfig:
    """The config ``run`` was started with: its file, else what its caller's directory found
    (the supervisor runs it with this, and a follow-up continues with it, wherever it is
    sent from)."""
    path = Path(run.config_path) if run.config_path else None
    return load_config(path, cwd=Path(run.caller_cwd))
