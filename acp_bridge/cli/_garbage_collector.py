"""The cyclic garbage collector held off while a command starts (issue 24).

Start-up makes what lives as long as the process: some 460 modules, the pydantic models'
schemas and validators, ~140 dataclasses (~68 000 objects the collector tracks). The
collector scanned them again and again while they were made (~110 collections in a cold
``run``, ~20 ms) and once more when the interpreter exited (17-49 ms), measured. Nothing made
while importing is garbage worth the scans, so collecting waits until the command's code is
loaded; then what exists is frozen (:func:`gc.freeze`: no later collection, the one at exit
included, looks at it again) and the collector runs as usual for the rest of the command,
so a long run or a server still collects its own cycles.
"""

from __future__ import annotations

import gc

_paused = False
_freeze = False


def pause(*, freeze: bool) -> None:
    """Hold collection off until :func:`resume` (when it is on: a caller that turned it
    off keeps it off). ``freeze``: the process is the command's own (``acp-bridge``), so
    what exists at :func:`resume` may be frozen; a program or test that calls ``main`` in
    its process keeps its objects collectable."""
    global _paused, _freeze
    if gc.isenabled():
        gc.disable()
        _paused, _freeze = True, freeze


def resume() -> None:
    """Start-up is over: freeze what it made (the command's own process) and collect as
    usual."""
    global _paused
    if not _paused:
        return
    _paused = False
    if _freeze:
        gc.freeze()
    gc.enable()
