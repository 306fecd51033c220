"""Follow-up turns, the store side: named sessions, holds, reserved follow-ups, holds of dead
supervisors (no supervisor processes: identities are this process's own, or one that never
existed)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from acp_bridge._entries.acp_spawn.live_turns import Held
from acp_bridge._os.process import proc
from acp_bridge._runs import held_agents, liveness, unfinished
from acp_bridge._runs.store import lanes, retention, session_chains
from acp_bridge._runs.store.run_records import NewRun
from acp_bridge._runs.store.run_store import Store
from acp_bridge._runs.wakeups import Wakeup
from acp_bridge.errors import ConfigError, ErrorCode

ME = proc.own_identity()
GONE = proc.Identity(ME.pid, ME.start + 1, ME.boot)  # same pid, another start: not alive


def new_run(run_id: str, follows: str | None = None, session: str | None = None) -> NewRun:
    return NewRun(
        id=run_id, entry="acp_spawn", agent="demo", task="t", cwd="/", caller_cwd="/",
        request={"entry": "acp_spawn", "agent": "demo", "task": "t"}, config_path=None,
        lane="agent:demo", group=None, env_key="k", follows=follows, session_name=session,
    )  # fmt: skip


def ended_and_held(store: Store, run_id: str, who: proc.Identity) -> None:
    """Record ``run_id`` as run by ``who`` and done, its agent held for a minute."""
    store.create(new_run(run_id, session="fix"), who)
    with store.write() as db:
        db.execute("UPDATE runs SET status = 'running' WHERE id = ?", (run_id,))
        run = store.get(run_id)
        assert run is not None
        outcome = unfinished.outcome(unfinished.run_failed(run, "x", ErrorCode.AGENT_ERROR))
        assert store.finish(db, run_id, outcome._replace(status="done"), supervisor=who)
    assert held_agents.hold(store, run_id, who, time.time() + 60)


def test_a_held_agent_keeps_its_slot_and_its_follow_up_waits_for_its_supervisor(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "runs.db")
    store.set_limit("agent:demo", 1)
    ended_and_held(store, "sub_000000000001", ME)
    store.create(new_run("sub_000000000002", follows="sub_000000000001", session="fix"), ME)
    store.create(new_run("sub_000000000003"), ME)
    # The follow-up is for the supervisor holding the agent; the other run waits for the slot
    # the hold keeps.
    assert lanes.heads(store) == []
    assert session_chains.named_tail(store.db, "fix").id == "sub_000000000002"  # type: ignore[union-attr]
    assert held_agents.claim_follow_up(store, "sub_000000000001", ME) == "sub_000000000002"
    follow_up = store.get("sub_000000000002")
    assert follow_up is not None and follow_up.status == "running"
    assert store.get("sub_000000000001").held_until is None  # type: ignore[union-attr]
    assert held_agents.claim_follow_up(store, "sub_000000000001", ME) is None  # no hold any more
    assert lanes.heads(store) == []  # the slot moved to the follow-up
    store.close()


def test_a_dead_supervisors_hold_is_released_and_its_follow_up_starts_on_its_own(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "runs.db")
    store.set_limit("agent:demo", 1)
    ended_and_held(store, "sub_000000000001", GONE)
    store.create(new_run("sub_000000000002", follows="sub_000000000001"), ME)
    assert lanes.heads(store) == []  # still counted: nobody looked yet
    assert held_agents.claim_follow_up(store, "sub_000000000001", ME) is None  # not ours to take
    liveness.reap(store)
    assert store.get("sub_000000000001").held_until is None  # type: ignore[union-attr]
    # Its own supervisor starts it now (and would resume or load the session).
    assert lanes.heads(store) == ["sub_000000000002"]
    store.close()


def test_an_expired_hold_counts_for_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    store.set_limit("agent:demo", 1)
    ended_and_held(store, "sub_000000000001", ME)
    assert held_agents.hold(store, "sub_000000000001", ME, time.time() - 1)
    store.create(new_run("sub_000000000002", follows="sub_000000000001"), ME)
    assert lanes.heads(store) == ["sub_000000000002"]
    assert not held_agents.hold(store, "sub_000000000001", GONE, None)  # only its supervisor may
    store.close()


def test_a_follow_up_waits_while_the_run_it_follows_has_not_ended(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    store.create(new_run("sub_000000000001"), ME)  # queued: its supervisor waits for a slot
    store.create(new_run("sub_000000000002", follows="sub_000000000001"), ME)
    assert lanes.heads(store) == ["sub_000000000001"]  # two turns of a session never overlap
    with store.write() as db:
        db.execute("UPDATE runs SET status = 'running' WHERE id = 'sub_000000000001'")
    assert lanes.heads(store) == []
    run = store.get("sub_000000000001")
    assert run is not None
    with store.write() as db:
        outcome = unfinished.outcome(unfinished.run_failed(run, "x", ErrorCode.AGENT_ERROR))
        assert store.finish(db, run.id, outcome, supervisor=ME)
    assert lanes.heads(store) == ["sub_000000000002"]
    store.close()


def test_a_session_is_a_chain_of_runs(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    store.create(new_run("sub_000000000001"), ME)
    store.create(new_run("sub_000000000002", follows="sub_000000000001"), ME)
    store.create(new_run("sub_000000000003", follows="sub_000000000002"), ME)
    assert session_chains.chain_tail(store.db, "sub_000000000001") == "sub_000000000003"
    assert session_chains.chain_tail(store.db, "sub_000000000003") == "sub_000000000003"
    assert session_chains.session_of(store.db, "sub_000000000003") is None
    with store.write() as db:
        db.execute("UPDATE runs SET session_id = 's1' WHERE id = 'sub_000000000001'")
    # A follow-up that failed before its session opened still belongs to the session.
    assert session_chains.session_of(store.db, "sub_000000000003") == "s1"
    store.close()


def test_stop_lets_a_held_agent_go(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    store.set_limit("agent:demo", 1)
    ended_and_held(store, "sub_000000000001", ME)
    assert held_agents.holds(store, "sub_000000000001", ME)
    assert held_agents.end_hold(store, "sub_000000000001")
    assert not held_agents.holds(store, "sub_000000000001", ME)
    assert not held_agents.end_hold(store, "sub_000000000001")  # nothing held any more
    store.create(new_run("sub_000000000002"), ME)
    assert lanes.heads(store) == ["sub_000000000002"]  # the slot is free at once
    store.close()


def test_a_supervisor_whose_held_agent_is_gone_claims_nothing(tmp_path: Path) -> None:
    """The agent exited while held and a follow-up came at the same moment: the follow-up is
    not handed to the dead agent (it would fail), it starts on its own and resumes."""
    store = Store(tmp_path / "runs.db")
    ended_and_held(store, "sub_000000000001", ME)
    store.create(new_run("sub_000000000002", follows="sub_000000000001"), ME)

    async def hold_ended_by_the_agent() -> str | None:
        held = Held(anyio.current_time() + 60)
        held.gone.set()
        with Wakeup(store, ["sub_000000000001"]) as wakeup:
            return await held_agents.wait_for_follow_up(
                store, ME, "sub_000000000001", wakeup, held, anyio.Event()
            )

    assert anyio.run(hold_ended_by_the_agent) is None
    assert store.get("sub_000000000002").status == "queued"  # type: ignore[union-attr]
    assert store.get("sub_000000000001").held_until is None  # type: ignore[union-attr]
    assert lanes.heads(store) == ["sub_000000000002"]
    store.close()


def test_a_held_run_is_not_pruned_and_a_pruned_one_is_not_followed(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    ended_and_held(store, "sub_000000000001", ME)
    assert retention.prune(store, keep=0) == []
    assert held_agents.hold(store, "sub_000000000001", ME, None)
    assert retention.prune(store, keep=0) == ["sub_000000000001"]
    # A send that looked the run up just before the prune deleted it: refused, not queued.
    with pytest.raises(ConfigError, match="run sub_000000000001 was deleted meanwhile"):
        store.create(new_run("sub_000000000002", follows="sub_000000000001"), ME)
    assert store.get("sub_000000000002") is None
    store.close()


def test_a_stop_that_came_as_the_turn_ended_keeps_the_agent_from_being_held(
    tmp_path: Path,
) -> None:
    """``stop`` saw the run running and asked it to stop just after its supervisor last looked:
    the run ends as it was about to, and its agent is not held."""
    store = Store(tmp_path / "runs.db")
    store.create(new_run("sub_000000000001"), ME)
    assert lanes.claim_mine(store, ME) == ["sub_000000000001"]
    store.request_stop("sub_000000000001")
    run = store.get("sub_000000000001")
    assert run is not None
    outcome = unfinished.outcome(unfinished.run_failed(run, "x", ErrorCode.AGENT_ERROR))
    done = outcome._replace(status="done")
    written, _ = lanes.finish(store, run.id, done, ME, adopt_env=None, hold_until=time.time() + 60)
    assert written and store.get(run.id).held_until is None  # type: ignore[union-attr]
    assert not held_agents.holds(store, run.id, ME)
    store.close()
