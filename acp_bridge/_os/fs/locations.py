"""Where the bridge keeps its own files, by the XDG base directory rules.

State (transcripts, diffs, worktrees, the run store) under ``$XDG_STATE_HOME/acp-bridge``,
else ``~/.local/state/acp-bridge`` (the run store: ``$ACP_BRIDGE_RUNS_DB`` if set); the
config under ``$XDG_CONFIG_HOME/acp-bridge``, else ``~/.config/acp-bridge``; agents that
``acp-bridge agents install`` installed under ``$XDG_DATA_HOME/acp-bridge/agents``, else
``~/.local/share/acp-bridge/agents``; what may be fetched again (the ACP registry's list of
agents) under ``$XDG_CACHE_HOME/acp-bridge``, else ``~/.cache/acp-bridge``. The sandbox
hides state and config, and the run store, from agents (other runs' transcripts and the
operator's keys are none of their business).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path

from acp_bridge._os.process.environment import host_environ


def _base(variable: str, fallback: str, environ: Mapping[str, str] | None) -> Path:
    env = host_environ() if environ is None else environ
    base = env.get(variable) or os.path.join(env.get("HOME", "~"), fallback)  # noqa: PTH118
    # `~` is the process's HOME (what expanduser reads), whatever `environ` says.
    home = os.environ.get("HOME") if base.startswith("~") else None
    return _folder(base, home)


@functools.lru_cache(maxsize=64)
def _folder(base: str, home: str | None) -> Path:
    """``Path(base, "acp-bridge").expanduser()``, made once for the same texts (every run
    asks for these several times; the answer depends on the texts alone)."""
    del home  # part of the key only
    return Path(base, "acp-bridge").expanduser()


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    return _base("XDG_STATE_HOME", ".local/state", environ)


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    return _base("XDG_CONFIG_HOME", ".config", environ)


def agents_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where ``acp-bridge agents install`` puts agents: ``$XDG_DATA_HOME/acp-bridge/agents``,
    else ``~/.local/share/acp-bridge/agents`` (data, not state: reinstalling costs minutes
    and network)."""
    return _base("XDG_DATA_HOME", ".local/share", environ) / "agents"


def registry_profiles_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The profiles ``acp-bridge agents install`` derived from ACP registry entries, one file
    per installed agent (read with the built-in profiles)."""
    return agents_dir(environ) / "profiles"


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    return _base("XDG_CACHE_HOME", ".cache", environ)


RUNS_DB_ENV = "ACP_BRIDGE_RUNS_DB"


def run_store_path(environ: Mapping[str, str] | None = None) -> Path:
    """The run store: ``$ACP_BRIDGE_RUNS_DB``, else ``runs.db`` in the state directory."""
    env = host_environ() if environ is None else environ
    explicit = env.get(RUNS_DB_ENV)
    return Path(explicit) if explicit else state_dir(env) / "runs.db"


RUN_LOGS = "run-logs"
"""Beside the run store: what detached runs' supervisors print (normally nothing)."""


def run_store_files(environ: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The run store, SQLite's companion files and the supervisors' logs (absolute). A
    process holding the store open must never open and close the store's files itself:
    closing any descriptor of a file drops every POSIX lock the process holds on it,
    SQLite's included — another process could then reset the write-ahead log under it and
    lose its commits. Readers of whole trees (change measurement) skip these; the sandbox
    hides them."""
    store = run_store_path(environ)
    # The cwd too: a relative $ACP_BRIDGE_RUNS_DB is made absolute against it.
    return _store_files(str(store), None if store.is_absolute() else os.getcwd())  # noqa: PTH109


@functools.lru_cache(maxsize=16)
def _store_files(store_text: str, cwd: str | None) -> tuple[Path, ...]:
    """:func:`run_store_files` of a store path (and the cwd a relative one is in)."""
    store = Path(store_text).absolute()
    companions = (store.with_name(store.name + suffix) for suffix in SQLITE_SUFFIXES)
    return (store, *companions, store.with_name(RUN_LOGS))


SQLITE_SUFFIXES = ("-wal", "-shm", "-journal")
