"""The submission window: the nodes' slots and a margin, in order, retries first."""

from __future__ import annotations

import anyio

from acp_bridge._batch.ray.placement import NodeView
from acp_bridge._batch.ray.window import MIN_WINDOW, Window, window_size


def node(slots: float, *, alive: bool = True) -> NodeView:
    return NodeView("n" * 8, "10.0.0.1", alive, {"acp-bridge": slots} if slots else {})


def test_the_window_is_the_live_slots_and_a_margin() -> None:
    assert window_size([node(4), node(4), node(4, alive=False), node(0)]) == 8 + 2
    assert window_size([node(40), node(40)]) == 80 + 20
    assert window_size([]) == MIN_WINDOW  # nothing to run on: a few go on to be refused


def test_waiting_attempts_enter_in_order_a_retry_first_and_a_grown_window_at_once() -> None:
    entered: list[str] = []

    async def main() -> None:
        window = Window(1)
        await window.enter()  # the one inside

        async def wait(name: str, first: bool = False) -> None:
            await window.enter(first=first)
            entered.append(name)

        async with anyio.create_task_group() as tg:
            for name in ("a", "b", "c"):
                tg.start_soon(wait, name)
                await anyio.wait_all_tasks_blocked()
            tg.start_soon(wait, "retry", True)
            await anyio.wait_all_tasks_blocked()
            assert entered == []
            window.leave()
            await anyio.wait_all_tasks_blocked()
            assert entered == ["retry"]
            window.resize(3)  # a node joined: two more at once
            await anyio.wait_all_tasks_blocked()
            assert entered == ["retry", "a", "b"]
            assert window.inside == 3
            window.leave()
        assert entered == ["retry", "a", "b", "c"]

    anyio.run(main)


def test_a_waiter_cancelled_gives_up_its_place() -> None:
    async def main() -> None:
        window = Window(1)
        await window.enter()
        with anyio.move_on_after(0.01):
            await window.enter()  # cancelled while waiting
        window.leave()
        assert window.inside == 0  # the cancelled waiter did not take the place
        await window.enter()
        assert window.inside == 1

    anyio.run(main)
