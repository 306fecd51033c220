"""The shared depth limit and the entry-point contract (nothing escapes)."""

from __future__ import annotations

import anyio
import pytest

from acp_bridge import envelope
from acp_bridge._entries.depth import current_depth, inherited_max_depth, subtask_level
from acp_bridge._entries.enveloped import RunContext, run_enveloped
from acp_bridge._os.process.environment import DEPTH_ENV
from acp_bridge.config import Config, LoadedConfig, ProfileCatalog
from acp_bridge.errors import ConfigError, ErrorCode, RunTimeout


def test_depth_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEPTH_ENV, raising=False)
    assert current_depth() == 0
    assert current_depth({DEPTH_ENV: "2"}) == 2
    with pytest.raises(ConfigError, match="not a whole number"):
        current_depth({DEPTH_ENV: "-1"})


def test_levels_nest_in_process_and_stop_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEPTH_ENV, raising=False)
    with subtask_level(2) as first:
        assert first == 1 and current_depth() == 1
        with subtask_level(2) as second:
            assert second == 2
            with pytest.raises(Exception, match="this would be level 3"), subtask_level(2):
                pass
    assert current_depth() == 0


def _run(body, max_depth: int = 1):  # type: ignore[no-untyped-def]
    config = Config.model_validate({"subtasks": {"max_depth": max_depth}})
    loaded = LoadedConfig(None, config, ProfileCatalog({}))
    return anyio.run(lambda: run_enveloped("bash", body, config=loaded))


def test_run_subtask_returns_the_body_envelope_with_bookkeeping(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DEPTH_ENV, raising=False)

    async def body(ctx: RunContext) -> envelope.SubtaskResult:
        return envelope.done(f"level {ctx.depth}")

    result = _run(body)
    assert result.ok and result.output == "level 1"
    assert result.meta.entry == "bash" and result.meta.depth == 1
    assert result.meta.duration_ms is not None and result.task_id.startswith("sub_")


def test_errors_become_failed_envelopes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEPTH_ENV, raising=False)

    async def times_out(ctx: RunContext) -> envelope.SubtaskResult:
        raise RunTimeout("too slow")

    async def crashes(ctx: RunContext) -> envelope.SubtaskResult:
        raise KeyError("bug")

    late = _run(times_out)
    assert late.status == "failed" and late.meta.error_code == ErrorCode.TIMEOUT
    bug = _run(crashes)
    assert bug.meta.error_code == ErrorCode.INTERNAL_ERROR and "KeyError" in bug.error


def test_depth_limit_is_an_envelope(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEPTH_ENV, "1")

    async def body(ctx: RunContext) -> envelope.SubtaskResult:
        raise AssertionError("must not run")

    result = _run(body)
    assert result.meta.error_code == ErrorCode.DEPTH_LIMIT and result.meta.depth == 2


def test_the_limit_travels_and_cannot_be_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    from acp_bridge._os.process.environment import MAX_DEPTH_ENV, constructed_env

    monkeypatch.delenv(DEPTH_ENV, raising=False)
    monkeypatch.delenv(MAX_DEPTH_ENV, raising=False)
    with subtask_level(3) as depth:
        env = constructed_env(depth=depth, max_depth=inherited_max_depth())
        assert env[DEPTH_ENV] == "1" and env[MAX_DEPTH_ENV] == "3"
        with subtask_level(5):  # a larger limit inside is capped by the outer one
            assert constructed_env(depth=2, max_depth=inherited_max_depth())[MAX_DEPTH_ENV] == "3"
    # A nested process: its own config allows 5, its host allowed 1.
    monkeypatch.setenv(DEPTH_ENV, "1")
    monkeypatch.setenv(MAX_DEPTH_ENV, "1")
    with (
        pytest.raises(Exception, match=r"max_depth is 1 \(inherited from the run"),
        subtask_level(5),
    ):
        pass
    monkeypatch.setenv(MAX_DEPTH_ENV, "2")
    with subtask_level(5) as depth:
        assert depth == 2
    monkeypatch.setenv(MAX_DEPTH_ENV, "lots")
    with pytest.raises(ConfigError, match="ACP_BRIDGE_MAX_DEPTH='lots' is not a whole number"):
        subtask_level(5).__enter__()
