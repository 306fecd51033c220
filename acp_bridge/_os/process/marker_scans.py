"""Whether any process still carries a group's marker: one ``/proc`` pass for every group
asking at once.

Why: every process group the bridge ends is swept for what outlived its leader — the
processes that carry its marker (marked_processes.py, procgroup.py). Finding them reads every
process's environment. Runs that end together (a fan-out of 64 agents) each paid a pass
over every process of the machine, their own agents included, in a worker thread holding
the GIL the event loop needed: 64 passes where one would do. Now the groups asking at once
share a pass (``_os/shared_thread.py``), which always begins after the question, so it sees
every process alive when it was asked. A marker found is then swept the full way
(``reaper.kill_marked``: signals, rescans for children forked meanwhile, waits), as before;
the usual answer is "none".
"""

from __future__ import annotations

from collections.abc import Sequence

from acp_bridge._os.process.marked_processes import markers_present
from acp_bridge._os.shared_thread import SharedPasses


def _answer(questions: Sequence[tuple[str, str]]) -> list[bool]:
    """For each (variable, marker): whether a live process other than this one carries it;
    one ``/proc`` pass per variable asked (there is one: the bridge's marker variable)."""
    found: dict[str, frozenset[str]] = {}
    for name in dict.fromkeys(name for name, _ in questions):
        found[name] = frozenset(markers_present(name, [m for n, m in questions if n == name]))
    return [marker in found[name] for name, marker in questions]


_SWEEPS: SharedPasses[tuple[str, str], bool] = SharedPasses("marker_sweeps", _answer)


async def marker_present(name: str, marker: str) -> bool:
    """Whether a live process other than this one carries ``name=marker``, read by a pass
    over ``/proc`` that began after this call (shared with every caller waiting with it).
    OSError of the pass propagates."""
    return await _SWEEPS.ask((name, marker))
