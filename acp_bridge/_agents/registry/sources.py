"""Where the registry's list of agents comes from: the copy ``agents … --registry URL|FILE``
last fetched into the cache, else the dated snapshot shipped with the package.

Nothing here reaches the network unless ``--registry`` names a URL: a run, a list or a
search reads the file that is already here (a run never waits on, or changes with, a
server). A fetched registry is checked whole before it replaces the cached one, and is
written beside it and renamed: a bad or interrupted refresh leaves the old copy intact.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import anyio

from acp_bridge._agents.archive_downloads import download_to
from acp_bridge._agents.registry.agent_entries import Registry, parse_registry
from acp_bridge._os import bounded_json
from acp_bridge._os.fs.input_files import InputRefused, read_bytes, read_text
from acp_bridge._os.fs.locations import cache_dir
from acp_bridge.errors import ConfigError, StateDirError

OFFICIAL_URL = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"
"""The registry's published list (agentclientprotocol/registry builds it from its folders)."""
SNAPSHOT = Path(__file__).parent / "registry-2026-02-07.json"
"""The registry as shipped: agentclientprotocol/registry at 3de1678 (2026-02-07), each
agent's ``agent.json`` without its icon."""
SNAPSHOT_DATE = SNAPSHOT.stem.removeprefix("registry-")
REGISTRY_FILE = "an ACP registry"
MAX_REGISTRY_BYTES = 16 << 20
"""Bytes a registry file may have (the official one is ~100 KiB)."""


@dataclass(frozen=True)
class LoadedRegistry:
    registry: Registry
    origin: str  # "snapshot 2026-02-07", or the cached copy's path and where it came from


def cached_path() -> Path:
    return cache_dir() / "registry.json"


def load_registry() -> LoadedRegistry:
    """The cached copy if ``--registry`` ever fetched one, else the shipped snapshot."""
    cached = cached_path()
    if cached.is_file():
        registry = _read(cached)
        source = _source_of(cached)
        return LoadedRegistry(registry, f"{cached} (from {source})" if source else str(cached))
    return LoadedRegistry(_read(SNAPSHOT), f"snapshot {SNAPSHOT_DATE}")


async def refresh(source: str) -> LoadedRegistry:
    """Fetch the registry from ``source`` (an http(s) URL, or a file), check it and make it
    the cached copy."""
    partial = await anyio.to_thread.run_sync(_staging_file)
    try:
        if source.startswith(("http://", "https://")):
            await download_to(source, partial, "the registry")
            where = source
        else:
            where = await anyio.to_thread.run_sync(_copy_file, source, partial)
        return await anyio.to_thread.run_sync(_keep, partial, where)
    finally:
        with contextlib.suppress(FileNotFoundError):
            await anyio.Path(partial).unlink()


def _staging_file() -> Path:
    """A new file beside the cached copy, to be renamed over it once checked."""
    folder = cached_path().parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=folder, prefix=".registry-", suffix=".json")
        os.close(fd)
    except OSError as exc:
        raise StateDirError(
            f"cannot write the registry's copy in {folder}: {exc.strerror or exc}; it lives "
            "in $XDG_CACHE_HOME/acp-bridge (else ~/.cache/acp-bridge): make that folder "
            "writable, or point XDG_CACHE_HOME at one that is"
        ) from exc
    return Path(name)


def _copy_file(source: str, partial: Path) -> str:
    where = Path(source).expanduser().resolve()
    try:
        partial.write_bytes(read_bytes(where, what=REGISTRY_FILE, limit=MAX_REGISTRY_BYTES))
    except OSError as exc:  # the reader's refusal names the file itself
        said = str(exc) if isinstance(exc, InputRefused) else exc.strerror or str(exc)
        raise ConfigError(f"--registry {source}: {said}") from exc
    return str(where)


def _keep(partial: Path, where: str) -> LoadedRegistry:
    registry = _read(partial, where)  # checked whole before it replaces the copy
    cached = cached_path()
    partial.replace(cached)
    _source_file(cached).write_text(where + "\n")
    return LoadedRegistry(registry, f"{cached} (from {where})")


def _read(path: Path, where: str | None = None) -> Registry:
    where = where or str(path)
    try:
        data = bounded_json.loads(read_text(path, what=REGISTRY_FILE, limit=MAX_REGISTRY_BYTES))
    except OSError as exc:
        reason = exc.reason if isinstance(exc, InputRefused) else exc.strerror or str(exc)
        raise ConfigError(f"{where}: {reason}") from exc
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    return parse_registry(data, where)


def _source_file(cached: Path) -> Path:
    return cached.with_name("registry.source")


def _source_of(cached: Path) -> str:
    try:
        return _source_file(cached).read_text().strip()
    except OSError:
        return ""
