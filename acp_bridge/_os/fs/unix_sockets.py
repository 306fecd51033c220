"""Unix stream sockets at a path of any length (standard library only: the services relay,
which runs inside the agent's sandbox, connects with it too).

Why unix sockets: a path crosses every sandbox the bridge builds, whatever its network
setting — bubblewrap's ``--unshare-net`` leaves the agent only a loopback of its own, and
Landlock's ``network: off`` refuses every TCP connect, but neither stops a connect to a
socket at a path the sandbox shows (measured under both; see ``RunSandbox.shared_path``).

Why the detour: ``sun_path`` holds 107 bytes, and a run's private ``/tmp`` lives under the
state directory, whose path can be longer. A longer path is reached through its directory:
opened ``O_PATH`` and named ``/proc/self/fd/N/NAME``, which the kernel resolves like the
real path (for ``bind`` and ``connect`` alike).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator

MAX_PATH_BYTES = 107
"""What ``sun_path`` holds (108 bytes with the terminating NUL)."""


@contextlib.contextmanager
def _addressable(path: str) -> Iterator[str]:
    """``path``, or an equivalent short enough for ``sun_path`` while the block runs."""
    if len(os.fsencode(path)) <= MAX_PATH_BYTES:
        yield path
        return
    folder, name = os.path.split(path)
    fd = os.open(folder or ".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{name}"
    finally:
        os.close(fd)


def listen_unix(path: str, backlog: int = 64) -> socket.socket:
    """A listening socket bound at ``path`` (which must not exist yet)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with _addressable(path) as where:
            sock.bind(where)
        os.chmod(path, 0o600)  # noqa: PTH101 (only its owner, whatever the umask)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return sock


def connect_unix(path: str, timeout: float | None = None) -> socket.socket:
    """A socket connected to the listener at ``path``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with _addressable(path) as where:
            sock.connect(where)
    except BaseException:
        sock.close()
        raise
    return sock
