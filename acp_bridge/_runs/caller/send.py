"""Follow-up turns, the caller's side: ``acp-bridge send ID TEXT``, ``RunHandle.send``
(which wraps the run id queued here in a handle).

A follow-up is a new detached run (its own id, envelope, events, budget) that continues the
ACP session of run ``ID``: it follows the latest run of that session (a second ``send`` to
the same id comes after the first), and waits while that run is still queued or running.
Then, in this order (docs/explanation/runs.md, follow-up turns): the supervisor still
holding the agent takes it and prompts the same live session; else it starts as a run of
its own and continues the session through ``session/resume`` or ``session/load``; else the
run fails with a clear refusal, never a silent fresh session.

What is checked before anything starts: the run exists, is an ``acp_spawn`` run, and has a
session to continue (or may still open one: it has not ended). What the follow-up inherits
from the run it follows: the agent, the working directory, the observe profile, the session
settings (mode, model, options), isolation, the group. Its own: the text, its timeout (the
profile's by default), its budget.
"""

from __future__ import annotations

from pathlib import Path

from acp_bridge._entries.entry_table import session_setting_names
from acp_bridge._entries.enveloped import resolve_timeout
from acp_bridge._entries.request import EntryRequest
from acp_bridge._runs.caller.queue import queue_run
from acp_bridge._runs.run_options import RunOptions, run_config
from acp_bridge._runs.store.run_records import RunRecord
from acp_bridge._runs.store.run_store import open_store
from acp_bridge._runs.store.session_chains import chain_tail, session_to_continue
from acp_bridge._runs.watch import get_checked
from acp_bridge.config import LoadedConfig
from acp_bridge.errors import ConfigError

INHERITED = session_setting_names()
"""What a follow-up's request takes from the run it follows (the rest is its own)."""


def queue_follow_up(
    run_id: str,
    text: str,
    *,
    timeout: float | None = None,
    options: RunOptions | None = None,
    config: LoadedConfig | None = None,
) -> tuple[str, Path]:
    """Queue ``text`` as the next turn of run ``run_id``'s session; the follow-up's run id
    and its store, at once. Raises :class:`~acp_bridge.ConfigError` when there is nothing to
    continue."""
    options = options or RunOptions()
    if options.session is not None:
        raise ConfigError("send continues the run's own session: it takes no session name")
    if not text:
        raise ConfigError("send: the follow-up text is empty")
    if timeout is not None:
        resolve_timeout(timeout, timeout)  # a bad one is an error now, not a failed run later
    store = open_store(options.store)
    target = get_checked(store, run_id)
    if target.entry != "acp_spawn":
        raise ConfigError(
            f"run {run_id} is a {target.entry} run: only acp_spawn runs have an ACP session "
            "to continue"
        )
    head = get_checked(store, chain_tail(store.db, run_id))
    if head.finished:  # a run still queued or running may yet open its session
        session_to_continue(store.db, head.id)
    # The session's own config, not whatever the sender's directory would find: a profile
    # defined in the project's file must still name the same agent.
    loaded = config if config is not None else run_config(head)
    request = follow_up_request(head, text, timeout)
    if options.group is None and head.group is not None:
        options = options.replaced(group=head.group)
    follow_up = queue_run(
        store, request, options, loaded, follows=head.id, session_name=head.session_name
    )
    return follow_up, store.path


def follow_up_request(head: RunRecord, text: str, timeout: float | None) -> EntryRequest:
    """The request of a follow-up of ``head``: ``text`` in its session, with its settings."""
    stored = head.request or {}
    kept = {name: stored[name] for name in INHERITED if stored.get(name) is not None}
    kept.setdefault("agent", head.agent)
    return EntryRequest(entry="acp_spawn", task=text, timeout=timeout, **kept)
