"""``acp-bridge sessions AGENT`` and ``acp-bridge logout AGENT``: an agent's own session
history and login, through ``session/list``, ``session/delete`` and ``logout``.

A listed session id continues with ``acp-bridge run AGENT TASK --resume SESSION_ID``.
"""

from __future__ import annotations

import argparse

import anyio

from acp_bridge._entries.acp_spawn.admin import agent_logout, agent_sessions, delete_agent_session
from acp_bridge.cli._agent_commands.profiles_command import load
from acp_bridge.cli._printing import EXIT_OK, err, out, out_json
from acp_bridge.cli._safe_text import one_line


def cmd_sessions(args: argparse.Namespace) -> int:
    loaded = load(args)
    if args.delete is not None:
        anyio.run(lambda: delete_agent_session(args.agent, args.delete, config=loaded))
        err(f"deleted session {args.delete} from {args.agent}'s session list")
        return EXIT_OK
    cwd = str(args.cwd) if args.cwd is not None else None
    sessions = anyio.run(
        lambda: agent_sessions(args.agent, config=loaded, cwd=cwd, all_dirs=args.all)
    )
    if args.json:
        rows = [s.model_dump(mode="json", exclude_none=True) for s in sessions]
        out_json(rows, pretty=True)
        return EXIT_OK
    if not sessions:
        err(f"{args.agent} lists no sessions" + ("" if args.all else " here (try --all)"))
        return EXIT_OK
    width = max(len(one_line(s.session_id)) for s in sessions)
    for session in sessions:
        stamp = one_line(session.updated_at or "-")
        where = f"  {one_line(session.cwd)}" if args.all and session.cwd else ""
        title = one_line(session.title or "(untitled)")
        out(f"{one_line(session.session_id):<{width}}  {stamp:<20}  {title}{where}")
    return EXIT_OK


def cmd_logout(args: argparse.Namespace) -> int:
    loaded = load(args)
    anyio.run(lambda: agent_logout(args.agent, config=loaded))
    err(f"logged out of {args.agent}: its next sessions need authentication again")
    return EXIT_OK
