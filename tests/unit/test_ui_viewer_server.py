"""The viewer's start (viewer_server.py): a token of its own each start, and a port that
cannot be listened on refused by name before anything is served."""

from __future__ import annotations

import socket

import pytest

from acp_bridge._mcp.transport.listen import Listen
from acp_bridge._ui.viewer_server import new_token, serve
from acp_bridge.errors import ConfigError


def test_each_start_makes_a_new_url_safe_token() -> None:
    tokens = {new_token() for _ in range(20)}
    assert len(tokens) == 20
    assert all(len(t) >= 43 and t.replace("-", "").replace("_", "").isalnum() for t in tokens)


def test_a_port_in_use_is_refused_naming_it() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        told: list[str] = []
        with pytest.raises(ConfigError, match=f"ui: cannot listen on 127.0.0.1:{port}"):
            serve(Listen("127.0.0.1", port), told.append)
    assert told == []  # no URL for a server that never listened
