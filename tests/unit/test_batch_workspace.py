"""Workspaces: an upload past its bound is refused before it is read whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_bridge._batch.workspace import pack
from acp_bridge.errors import LimitExceeded


def test_an_upload_past_its_bound_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 200_000)
    (tmp_path / "small").write_text("s")
    assert len(pack(tmp_path, 1_000_000)) > 200_000
    with pytest.raises(LimitExceeded, match="more than 100000 bytes packed"):
        pack(tmp_path, 100_000)
