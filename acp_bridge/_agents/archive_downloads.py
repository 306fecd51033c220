"""An archive an agent is installed from (an ACP registry ``binary`` entry): downloaded
within bounds, its sha256 taken (checked when the entry gives one, recorded either way), and
unpacked with nothing landing outside its folder. Part of an install (install.py)."""

from __future__ import annotations

import hashlib
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import anyio

from acp_bridge._acp.agent_executable import ARCHIVE_DIR
from acp_bridge._agents.package_managers import INSTALL_TIMEOUT, InstallError
from acp_bridge.config._package import PackageSpec

SOCKET_TIMEOUT = 60.0
"""Seconds a download may wait for the server at once (a connection, one read)."""
MAX_DOWNLOAD = 2 * 1024**3
"""Bytes an archive may have: a server that never stops sending fills no disk."""


async def archive_install(spec: PackageSpec, prefix: Path) -> dict[str, Any]:
    url = spec.archive or ""  # a binary spec has one (PackageSpec checks)
    download = prefix / "download"
    digest = await download_to(url, download, f"{spec}'s archive")
    if spec.sha256 is not None and digest != spec.sha256:
        raise InstallError(
            f"{spec}: the archive from {url} has sha256 {digest}, not the "
            f"{spec.sha256} its entry gives: refused"
        )
    await anyio.to_thread.run_sync(_unpack, download, url, prefix / ARCHIVE_DIR)
    await anyio.Path(download).unlink()
    command = prefix / ARCHIVE_DIR / (spec.cmd or "")
    if await anyio.Path(command).is_file():  # the entry says it runs: a zip may not say so
        await anyio.Path(command).chmod((await anyio.Path(command).stat()).st_mode | 0o111)
    checked = "checked" if spec.sha256 is not None else "not given by the entry: recorded"
    return {"archive": url, "sha256": digest, "sha256_check": checked}


async def download_to(url: str, dest: Path, what: str) -> str:
    """Download ``url`` (http or https) into ``dest``; its sha256. Bounded: the server may
    wait :data:`SOCKET_TIMEOUT` at once, the whole download :data:`INSTALL_TIMEOUT` (checked
    between reads, in the thread: a blocking read cannot be cancelled from outside)."""
    if not url.startswith(("http://", "https://")):
        raise InstallError(f"{what}: only http and https URLs are downloaded: got {url!r}")
    return await anyio.to_thread.run_sync(_download, url, dest, what)


def _download(url: str, dest: Path, what: str) -> str:
    deadline = time.monotonic() + INSTALL_TIMEOUT
    digest = hashlib.sha256()
    size = 0
    try:
        with urllib.request.urlopen(url, timeout=SOCKET_TIMEOUT) as response, dest.open("wb") as f:
            while chunk := response.read(1 << 16):
                size += len(chunk)
                if size > MAX_DOWNLOAD or time.monotonic() > deadline:
                    raise InstallError(
                        f"{what}: {url} sent more than {MAX_DOWNLOAD} bytes or took longer "
                        f"than {INSTALL_TIMEOUT:g}s"
                    )
                digest.update(chunk)
                f.write(chunk)
    except urllib.error.HTTPError as exc:
        raise InstallError(f"{what}: {url} answered {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise InstallError(f"{what}: cannot download {url}: {reason}") from exc
    return digest.hexdigest()


def _unpack(archive: Path, url: str, into: Path) -> None:
    """Unpack a .zip or a tar (gzip, xz, bzip2) archive; nothing may land outside ``into``
    (absolute names, ``..``, links out of it: refused)."""
    into.mkdir()
    if url.lower().endswith(".zip") or zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zipped:
            for member in zipped.infolist():
                target = (into / member.filename).resolve()
                if not target.is_relative_to(into.resolve()):
                    raise InstallError(f"{url}: {member.filename!r} would land outside its folder")
                zipped.extract(member, into)
                mode = (member.external_attr >> 16) & 0o777
                if mode and not member.is_dir():
                    target.chmod(mode)  # zipfile drops the mode: the command must stay runnable
        return
    try:
        with tarfile.open(archive) as tarred:
            tarred.extractall(into, filter="data")
    except tarfile.FilterError as exc:
        raise InstallError(f"{url}: {exc}") from exc
    except tarfile.TarError as exc:
        raise InstallError(f"{url}: not a .zip or tar archive: {exc}") from exc
