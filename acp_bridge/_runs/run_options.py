"""What the run layer adds to an entry request: its group and budgets, a named session, and
which run store (:class:`RunOptions`), checked as it is made; and the config a run was
started with (:func:`run_config`), which its supervisor and its follow-ups go on with."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from acp_bridge._entries.enveloped import check_task_id
from acp_bridge._entries.options import Offer
from acp_bridge._os.limits import MAX_COST, MAX_TOKENS
from acp_bridge._records.frozen import FrozenRecord
from acp_bridge._runs.budget import Budget
from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.errors import ConfigError

if TYPE_CHECKING:
    from acp_bridge._runs.store.run_records import RunRecord


class RunOptions(FrozenRecord):
    """What the run layer adds to a request: its group and budgets, a named session, and
    which store.

    ``max_tokens`` / ``max_cost`` limit this run (tokens and cost as the agent reports
    them); runs started with the same ``group`` share a total, ``group_max_tokens`` /
    ``group_max_cost`` (stored for the group: later runs of it need not repeat them). A run
    over a budget is cancelled and fails with ``error_code: budget``. ``session`` names an
    ACP session: the run continues the latest run of that name (``acp_spawn`` only).

    Each option is declared once, here: its type, bounds, description and the faces that
    offer it (the command line's flags, the MCP ``start`` tool's arguments and the
    references derive from these, as an entry's options derive from its options model).
    """

    # A frozen record, not a frozen dataclass: every `run` builds its flags from this class,
    # and a dataclass compiles its methods from source as its module loads.
    group: Annotated[
        str | None,
        Field(None, description="a group of runs sharing one budget"),
        Offer(cli="--group", metavar="NAME", mcp=True),
    ]
    max_tokens: Annotated[
        int | None,
        Field(None, ge=1, le=MAX_TOKENS, description="tokens this run may use"),
        Offer(cli="--max-tokens", metavar="N", mcp=True),
    ]
    max_cost: Annotated[
        float | None,
        Field(None, gt=0, le=MAX_COST, description="cost this run may reach"),
        Offer(cli="--max-cost", metavar="X", mcp=True),
    ]
    group_max_tokens: Annotated[
        int | None,
        Field(None, ge=1, le=MAX_TOKENS, description="tokens the group may use in all"),
        Offer(cli="--group-max-tokens", metavar="N", mcp=True),
    ]
    group_max_cost: Annotated[
        float | None,
        Field(None, gt=0, le=MAX_COST, description="the group's total cost"),
        Offer(cli="--group-max-cost", metavar="X", mcp=True),
    ]
    store: Annotated[
        str | Path | None,
        Field(
            None,
            description="the run store (default: $ACP_BRIDGE_RUNS_DB, else the state directory)",
        ),
        Offer(),
    ]
    session: Annotated[
        str | None,
        Field(
            None,
            description="a named session (acp_spawn): the first run of NAME opens it, later "
            "ones continue it (as send does, with the same agent)",
        ),
        Offer(cli="--session", metavar="NAME", mcp=True),
    ]
    _compared = __slots__ = (
        "group", "max_tokens", "max_cost", "group_max_tokens", "group_max_cost", "store",
        "session",
    )  # fmt: skip

    def __init__(
        self,
        group: str | None = None,
        max_tokens: int | None = None,
        max_cost: float | None = None,
        group_max_tokens: int | None = None,
        group_max_cost: float | None = None,
        store: str | Path | None = None,
        session: str | None = None,
    ) -> None:
        Budget(max_tokens, max_cost)  # validates
        Budget(group_max_tokens, group_max_cost)
        if session is not None:
            _check_name(session, "session")
        if group is not None:
            _check_name(group, "group")
        elif group_max_tokens is not None or group_max_cost is not None:
            raise ConfigError("a group budget needs a group name")
        for name, value in zip(
            self._compared,
            (group, max_tokens, max_cost, group_max_tokens, group_max_cost, store, session),
            strict=True,
        ):
            object.__setattr__(self, name, value)  # frozen: set once, here

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
