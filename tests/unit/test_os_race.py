"""The one "whichever comes first" helper: with stoppers, with none (only the deadline), and
an error of the job raised as itself, leaving no reference cycle behind."""

from __future__ import annotations

import gc

import anyio
import anyio.lowlevel
import pytest

from acp_bridge._os.race import Raced, on_any, race


async def _value() -> str:
    await anyio.lowlevel.checkpoint()
    return "done"


async def _forever() -> str:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


def test_no_stopper_the_job_finishes() -> None:
    raced = anyio.run(lambda: race(_value, on_any(None, None), timeout=5))
    assert raced == Raced("done", finished=True)


def test_no_stopper_the_deadline_ends_the_job() -> None:
    raced = anyio.run(lambda: race(_forever, on_any(), timeout=0.05))
    assert raced == Raced(None, finished=False, timed_out=True)


def test_a_stopper_that_fires_ends_the_job_and_is_named_by_its_place() -> None:
    async def main() -> Raced[str]:
        stop = anyio.Event()
        stop.set()
        return await race(_forever, on_any(None), on_any(None, stop), timeout=5)

    assert anyio.run(main) == Raced(None, finished=False, stopped_by=1)


def test_on_any_of_several_events_fires_on_either() -> None:
    async def main() -> Raced[str]:
        first, second = anyio.Event(), anyio.Event()
        second.set()
        return await race(_forever, on_any(first, second), timeout=5)

    assert anyio.run(main).stopped_by == 0


@pytest.mark.parametrize("stoppers", [0, 1], ids=["no-stopper", "a-stopper"])
def test_an_error_of_the_job_is_raised_as_itself_and_leaves_no_cycle(stoppers: int) -> None:
    class Broken(Exception):
        pass

    async def job() -> str:
        raise Broken("no")

    async def main() -> None:
        never = anyio.Event()
        with pytest.raises(Broken):
            await race(job, *([on_any(never)] if stoppers else []), timeout=5)

    gc.collect()
    gc.disable()
    try:
        anyio.run(main)
        assert not [o for o in gc.get_objects() if isinstance(o, Broken)]
    finally:
        gc.enable()
