"""Agent→client requests with params that do not fit the method are -32602, not -32603."""

from __future__ import annotations

from pathlib import Path

import anyio

from acp_bridge._acp.connection import dispatch_request
from acp_bridge._acp.schema import INVALID_PARAMS
from acp_bridge._acp.services.files import FileService
from acp_bridge._os.roots import Roots


def test_malformed_params_are_invalid_params(tmp_path: Path) -> None:
    files = FileService(Roots.for_session(tmp_path), max_read_bytes=10, max_write_bytes=10)
    methods = {"fs/read_text_file": files.read_text_file}
    for params in ({"sessionId": "s"}, {"sessionId": "s", "path": "/x", "line": 0}):
        message = {"jsonrpc": "2.0", "id": 7, "method": "fs/read_text_file", "params": params}
        reply = anyio.run(dispatch_request, message, methods)
        assert reply is not None
        assert reply["error"]["code"] == INVALID_PARAMS, reply
        assert reply["error"]["data"][0]["loc"]
