"""Removing a folder a run's processes filled, whatever they did to it.

Why not plain ``shutil.rmtree``: a run's processes own what they made, and may have left a
folder without write or search permission — its entries then cannot be removed by its
non-root owner. Each such folder is opened up (0700) and its removal tried again. Links are
never followed: ``rmtree`` works through descriptors opened without following them, and a
folder is only opened up after ``lstat`` says it is one (the run's processes have ended:
nothing swaps it meanwhile).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path


def remove_tree(path: Path) -> bool:
    """Remove ``path`` (a folder, a file or a link) and everything below it; True when it is
    gone (something the kernel refuses to remove — an immutable file, a mount point — stays)."""

    opened: set[Path] = set()

    def unlock(func: object, failed: str, exc_info: object) -> None:
        where = Path(failed)
        with contextlib.suppress(OSError):
            if where != path:
                os.chmod(where.parent, stat.S_IRWXU)  # noqa: PTH101 (a folder rmtree entered)
            info = os.lstat(where)
            if not stat.S_ISDIR(info.st_mode):
                where.unlink()
            elif where not in opened:  # once each: a folder that stays locked is left
                opened.add(where)
                os.chmod(where, stat.S_IRWXU)  # noqa: PTH101 (lstat: a folder, not a link)
                # The same way down: a locked folder may hold more locked folders.
                shutil.rmtree(where, onerror=unlock)

    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return True
    shutil.rmtree(path, onerror=unlock)  # `onexc` only from 3.12
    return not os.path.lexists(path)
