"""The cyclic garbage collector held off while a command starts (issue 24).

Start-up makes what lives as long as the process: some 460 modules, the pydantic models'
schemas and validators, ~140 dataclasses. The collector would scan those objects again and
again while they are made (making them is what triggers it), and once more when the
interpreter exits: ~50 ms of a cold ``run``'s ~0.4 s went to that last collection alone,
measured. Nothing made while importing is garbage worth the scans, so collecting waits until
the command's code is loaded; then what exists is frozen (:func:`gc.freeze`: no later
collection, the one at exit included, looks at it again) and the collector runs as usual for
the rest of the command, so a long run or a server still collects its own cycles.
"""

from __future__ import annotations

import gc

_paused = False
_frozen = False


def pause() -> None:
    """Hold collection off until :func:`resume` (when it is on: a caller that turned it
    off, e.g. a test calling ``main`` in its process, keeps it off)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Start-up is over: freeze what it made (once per process) and collect as usual."""
    global _paused, _frozen
    if not _paused:
        return
    _paused = False
    if not _frozen:  # once: a process that runs main() again (tests) freezes nothing of its own
        gc.freeze()
        _frozen = True
    gc.enable()
