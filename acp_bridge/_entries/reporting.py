"""The run reporter hook: where the entry wrapper reports every run as it starts and ends.

Every entry path goes through :func:`~acp_bridge._entries.enveloped.run_enveloped`; when a
reporter is installed, each run there gets a :class:`RunReport`: ``begin`` once the config
is loaded (a blocking call the wrapper makes in a worker thread, beside the run, so its cost
stays off the run's critical path), then ``ended`` with the final envelope, or ``abandoned``
when the caller's own scope cancelled the run and no envelope exists.

Why a hook and not an import: the run store sits above the entries (it runs them detached:
docs/explanation/architecture.md, layers), so the entries cannot import it; the store plugs itself
in from above (``acp_bridge._runs.foreground.install``: the CLI, smoke, the supervisor and the
public entry functions of ``acp_bridge`` install it). A reporter must never fail a run: its methods
swallow and log their own errors.
"""

from typing import NamedTuple, Protocol

from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import Entry, SubtaskResult


class RunStart(NamedTuple):
    """What the reporter learns about a run as it starts."""

    task_id: str
    entry: Entry
    task: str
    """The prompt, or the command line for ``bash``."""
    agent: str | None
    cwd: str
    """Absolute: as the caller gave it, else the caller's working directory."""
    batch_id: str | None = None
    """The batch (``batch_…``) or comparison (``cmp_…``) the run is a task of."""


class RunReport(Protocol):
    """One run as its reporter follows it."""

    def begin(self, config: LoadedConfig | None) -> None:
        """Record the run as running (blocking I/O; the wrapper calls it in a worker
        thread). ``config``: the run's config, None when it could not be loaded."""

    def ended(self, result: SubtaskResult) -> None:
        """Record the final envelope (after :meth:`begin` returned, or instead of it)."""

    def abandoned(self) -> None:
        """The caller's scope cancelled the run: no envelope will come."""


class RunReporter(Protocol):
    def record(self, run: RunStart) -> RunReport | None:
        """A record for ``run`` (no I/O here), or None to leave it out."""


_installed: list[RunReporter] = []


def install_reporter(reporter: RunReporter | None) -> None:
    """Report every run of this process to ``reporter`` from now on (None: to nobody)."""
    _installed[:] = [] if reporter is None else [reporter]


def installed_reporter() -> RunReporter | None:
    return _installed[0] if _installed else None
