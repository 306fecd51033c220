"""Unix sockets at paths longer than ``sun_path`` holds: bound and connected through their
directory (the run's private /tmp may sit deep under the state directory)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

from acp_bridge._os.fs.unix_sockets import MAX_PATH_BYTES, connect_unix, listen_unix


@pytest.mark.parametrize("long", [False, True])
def test_a_socket_at_any_path_length_is_bound_private_and_reached(
    tmp_path: Path, long: bool
) -> None:
    # A short path where the system's temp folder gives one (tmp_path may be long already).
    base = tmp_path if long else Path(tempfile.mkdtemp(prefix="us-"))
    folder = base.joinpath(*["d" * 30] * 4) if long else base
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "s.sock"
    assert (len(str(path)) > MAX_PATH_BYTES) == long
    server = listen_unix(str(path))
    echoed: list[bytes] = []

    def echo() -> None:
        conn, _ = server.accept()
        with conn:
            echoed.append(conn.recv(16))
            conn.sendall(echoed[0])

    thread = threading.Thread(target=echo)
    thread.start()
    with connect_unix(str(path), timeout=5) as client:
        client.sendall(b"ping")
        assert client.recv(16) == b"ping"
    thread.join(5)
    server.close()
    assert echoed == [b"ping"]
    assert os.stat(path).st_mode & 0o777 == 0o600  # only its owner may connect
    assert os.listdir(folder) == ["s.sock"]
    if not long:
        shutil.rmtree(base)


def test_an_existing_path_is_refused_and_nothing_leaks(tmp_path: Path) -> None:
    path = tmp_path / "taken"
    path.write_text("not a socket")
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(OSError):
        listen_unix(str(path))
    with pytest.raises(OSError):
        connect_unix(str(tmp_path / "missing.sock"))
    assert len(os.listdir("/proc/self/fd")) == before
