"""Starting a detached run: queue an :class:`~acp_bridge.EntryRequest`, hand it to a
supervisor process, return a handle at once::

    handle = await start_run(EntryRequest(entry="acp_spawn", agent="demo", task="Hi"))
    result = await handle.wait()          # the SubtaskResult envelope

What is checked before anything starts, so a mistake is an exception here and not a failed
run later: the request itself, the config (loaded like an entry would: ``config`` or the
usual search from the current directory) and, for ``acp_spawn``, that the profile exists and
is usable; the options. What the run inherits: this process's environment and working
directory (relative ``cwd`` is made absolute now). The config's ``runs:`` section and the
profile's ``max_concurrent`` are written into the store with the run (see
:mod:`acp_bridge._runs.store.rules`).

A run of a named session (``RunOptions.session``, ``run --session NAME``) follows the latest
run of that name and continues its ACP session (:mod:`acp_bridge._runs.store.session_chains`);
the first run of a name opens the session. Follow-ups by run id are :mod:`.send`'s.
"""

from __future__ import annotations

from acp_bridge._entries.request import EntryRequest
from acp_bridge._runs.caller.handle import RunHandle
from acp_bridge._runs.caller.queue import queue_run
from acp_bridge._runs.run_options import RunOptions
from acp_bridge._runs.store.run_store import open_store
from acp_bridge._runs.store.session_chains import follows_for_name
from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.errors import ConfigError


def start_run_sync(
    request: EntryRequest,
    *,
    options: RunOptions | None = None,
    config: LoadedConfig | None = None,
) -> RunHandle:
    """Queue ``request`` as a detached run and hand it to a supervisor; returns at once (the
    run is ``queued``). Raises :class:`~acp_bridge.ConfigError` for a request, config or
    option that cannot run, :class:`~acp_bridge.SpawnError` if the supervisor cannot start,
    :class:`~acp_bridge.RunStoreError` if the store cannot be written."""
    options = options or RunOptions()
    if options.session is not None and request.entry != "acp_spawn":
        raise ConfigError(
            f"session: only acp_spawn runs have an ACP session to continue, not {request.entry}"
        )
    loaded = config if config is not None else load_config()
    store = open_store(options.store)
    follows = None
    if options.session is not None:
        follows = follows_for_name(
            store.db,
            options.session,
            entry=request.entry,
            agent=request.agent,
            resume=request.option("resume"),
        )
    run_id = queue_run(
        store, request, options, loaded, follows=follows, session_name=options.session
    )
    return RunHandle(run_id, store.path)


async def start_run(
    request: EntryRequest,
    *,
    options: RunOptions | None = None,
    config: LoadedConfig | None = None,
) -> RunHandle:
    """:func:`start_run_sync` off the event loop (it reads the config and waits a few ms for
    a shell to fork the supervisor)."""
    import anyio

    def call() -> RunHandle:
        return start_run_sync(request, options=options, config=config)

    return await anyio.to_thread.run_sync(call)
