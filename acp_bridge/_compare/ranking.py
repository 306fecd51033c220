"""Which attempt wins, and why, in words a person reads in the table and a program in JSON.

Only an attempt that ended ``done`` can win, and, when there is a verifier, only one that
passed it. Among those, ``pick`` decides: ``verified`` and ``fastest`` the least wall time,
``cheapest`` the least cost as its agent reported it (then tokens, when no agent reported a
cost), ``smallest`` the fewest changed lines (then files). Ties go to the earlier attempt
(agents in the order given, then attempt numbers), so the same figures always give the
same winner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from acp_bridge._compare.compare_options import Pick


@dataclass(frozen=True)
class Standing:
    """What the ranking knows of one attempt."""

    done: bool
    verified: bool | None
    """None: there is no verifier."""
    wall_ms: int
    tokens: int | None = None
    cost: float | None = None
    lines: int | None = None
    """Lines added plus removed (None: not known)."""
    files: int = 0


def choose(standings: Sequence[Standing], pick: Pick) -> tuple[int | None, str]:
    """The index of the winner (None: no attempt may win) and the reason."""
    with_verifier = any(s.verified is not None for s in standings)
    eligible = [i for i, s in enumerate(standings) if s.done and (s.verified or s.verified is None)]
    if not eligible:
        if with_verifier:
            return None, "no attempt ended done and passed the verifier"
        return None, "no attempt ended done"
    among = _among(len(eligible), with_verifier)
    if pick == "cheapest" and any(standings[i].cost is not None for i in eligible):
        index = min(eligible, key=lambda i: _key(standings, i, standings[i].cost))
        return index, f"cheapest {among} (cost {standings[index].cost:g})"
    if pick == "cheapest" and any(standings[i].tokens is not None for i in eligible):
        index = min(eligible, key=lambda i: _key(standings, i, standings[i].tokens))
        tokens = standings[index].tokens
        return index, f"cheapest {among} ({tokens} tokens; no agent reported a cost)"
    if pick == "smallest":
        index = min(
            eligible, key=lambda i: _key(standings, i, standings[i].lines, standings[i].files)
        )
        chosen = standings[index]
        size = "unknown lines" if chosen.lines is None else f"{chosen.lines} changed lines"
        return index, f"smallest change {among} ({size} in {chosen.files} file(s))"
    index = min(eligible, key=lambda i: _key(standings, i))
    seconds = standings[index].wall_ms / 1000
    if pick == "cheapest":
        return index, f"fastest {among} ({seconds:.1f} s; no agent reported tokens or cost)"
    if pick == "verified" and len(eligible) == 1:
        return index, f"the only attempt that passed the verifier ({seconds:.1f} s)"
    return index, f"fastest {among} ({seconds:.1f} s)"


def _among(count: int, with_verifier: bool) -> str:
    if with_verifier:
        return f"of the {count} attempt(s) that passed the verifier"
    return f"of the {count} attempt(s) that ended done"


def _size(standing: Standing) -> tuple[float | None, float]:
    return standing.lines, standing.files


def _key(standings: Sequence[Standing], index: int, *first: float | None) -> tuple[Any, ...]:
    """``first`` (unknown values last), then the wall time, then the order given."""
    known = [part for value in first for part in (value is None, value or 0)]
    return (*known, standings[index].wall_ms, index)
