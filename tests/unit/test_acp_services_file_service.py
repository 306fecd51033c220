"""Agent→client requests with params that do not fit the method are -32602, not -32603."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from acp_bridge._acp.services.file_service import FileService
from acp_bridge._acp.wire.schema import INVALID_PARAMS
from acp_bridge._os.fs.roots import Roots
from tests.helpers import RpcFailure, serve


@pytest.mark.parametrize(
    "params",
    [{"sessionId": "s"}, {"sessionId": "s", "path": "/x", "line": 0}, {"path": 3}],
    ids=["no path", "line 0", "path not a string"],
)
def test_malformed_params_are_invalid_params(tmp_path: Path, params: dict[str, object]) -> None:
    files = FileService(Roots.for_session(tmp_path), max_read_bytes=10, max_write_bytes=10)
    with pytest.raises(RpcFailure) as caught:
        anyio.run(lambda: serve(files.read_text_file, **params))
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.data[0]["loc"]
