"""The demo agent's memory: what each of its sessions was told, kept on disk so that another
process of the demo agent can resume or load the session — follow-up turns, offline.

Chat that uses it: ``remember WORDS`` (answers ``Remembered: WORDS``) and ``recall`` (the
words remembered in this session, in order). Sessions live in ``$ACP_BRIDGE_DEMO_STATE``,
else ``~/.local/state/acp-bridge-demo`` (the demo profile declares it as its sandbox state),
one JSON file each, replaced atomically. Standard library only, like the agent itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time

# Not from typing at run time, and no pathlib: see _demo/agent.py.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SESSION_ID = re.compile(r"[A-Za-z0-9_.-]{1,100}")
KEEP = 200  # saved sessions; older ones are forgotten (every demo run saves one)
_REMEMBER = re.compile(r"^\s*remember\s+(?P<words>.+?)\s*$", re.IGNORECASE)
_RECALL = re.compile(r"^\s*(recall|what do you remember\??)\s*$", re.IGNORECASE)


def store_dir() -> str:
    configured = os.environ.get("ACP_BRIDGE_DEMO_STATE")
    if configured:
        return configured
    home = os.environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".local", "state", "acp-bridge-demo")


def _path(session_id: str) -> str:
    if not _SESSION_ID.fullmatch(session_id):
        raise ValueError(f"not a session id of this agent: {session_id!r}")
    return os.path.join(store_dir(), f"{session_id}.json")


def save(session_id: str, session: dict[str, Any]) -> None:
    """Keep ``session`` (its cwd, title, turns and remembered words) for later processes."""
    record = {
        "sessionId": session_id,
        "cwd": session["cwd"],
        "title": session.get("title"),
        "turns": session.get("turns", []),
        "remembered": session.get("remembered", []),
        "updatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    with contextlib.suppress(OSError):  # memory is a nicety: a read-only home loses it
        os.makedirs(store_dir(), mode=0o700, exist_ok=True)
        temp = _path(session_id) + f".{os.getpid()}.tmp"
        with open(temp, "w", encoding="utf-8") as file:
            json.dump(record, file)
        os.replace(temp, _path(session_id))
        _forget_old()


def _forget_old() -> None:
    entries = [e for e in os.scandir(store_dir()) if e.name.endswith(".json")]
    if len(entries) <= KEEP:
        return
    entries.sort(key=lambda e: e.stat().st_mtime)
    for entry in entries[: len(entries) - KEEP]:
        with contextlib.suppress(OSError):
            os.unlink(entry.path)


def load(session_id: str) -> dict[str, Any]:
    """A session saved earlier; KeyError when this agent never had it."""
    try:
        with open(_path(session_id), encoding="utf-8") as file:
            record: dict[str, Any] = json.load(file)
    except (OSError, ValueError) as exc:
        raise KeyError(f"no saved session {session_id}") from exc
    return record


def listing(cwd: str | None = None) -> list[dict[str, Any]]:
    """Saved sessions (newest first), those of ``cwd`` only when given."""
    found = []
    with contextlib.suppress(OSError):
        for name in os.listdir(store_dir()):
            if name.endswith(".json"):
                with contextlib.suppress(KeyError):
                    found.append(load(name[: -len(".json")]))
    info = [
        {k: r[k] for k in ("sessionId", "cwd", "title", "updatedAt") if r.get(k) is not None}
        for r in found
        if cwd is None or r.get("cwd") == cwd
    ]
    return sorted(info, key=lambda r: str(r.get("updatedAt", "")), reverse=True)


def chat(session: dict[str, Any], line: str) -> str | None:
    """The answer to a memory line of chat (None: not one)."""
    remembered: list[str] = session.setdefault("remembered", [])
    if (match := _REMEMBER.match(line)) is not None:
        remembered.append(match["words"])
        return f"Remembered: {match['words']}"
    if _RECALL.match(line):
        return ", ".join(remembered) if remembered else "I remember nothing yet."
    return None
