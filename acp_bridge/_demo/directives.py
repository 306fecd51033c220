"""The demo agent's directives (``read``, ``write``, ``run``, ``sleep``): each a tool call it
announces, asks permission for, and carries out through the client's ``fs/*`` and
``terminal/*`` methods. Standard library only, like the agent (see _demo/agent.py).
"""

from __future__ import annotations

import os
import threading

# Not from typing at run time: see _demo/agent.py.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class DemoTools:
    """Mixed into the demo agent, which provides the wire (``call``, ``update``)."""

    client_caps: dict[str, Any]

    if TYPE_CHECKING:  # what the agent provides: declared for the type checker only

        def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]: ...

        def update(self, session_id: str, update: dict[str, Any]) -> None: ...

    def do(
        self,
        session_id: str,
        session: dict[str, Any],
        number: int,
        step: str,
        cancelled: threading.Event,
    ) -> str:
        verb, _, rest = step.partition(" ")
        verb = verb.lower()
        call_id = f"call_{number}"
        if verb == "sleep":
            self.tool(session_id, call_id, f"sleep {rest}", "think", "in_progress")
            if cancelled.wait(float(rest)):
                self.tool_done(session_id, call_id, "failed")
                return "sleep interrupted"
            self.tool_done(session_id, call_id, "completed")
            return f"slept {rest}s"
        path = rest.split(":", 1)[0].strip() if verb == "write" else rest.strip()
        if verb in ("read", "write"):
            path = os.path.join(session["cwd"], path)
        kind = {"read": "read", "write": "edit", "run": "execute"}[verb]
        locations = [{"path": path}] if verb in ("read", "write") else []
        self.tool(session_id, call_id, step, kind, "pending", locations)
        needs_permission = verb != "read" or session["mode"] == "careful"
        if needs_permission and not self.permitted(session_id, call_id, step, kind, locations):
            self.tool_done(session_id, call_id, "failed")
            return f"{verb} not permitted"
        self.tool_done(session_id, call_id, "in_progress")
        result: str = getattr(self, "do_" + verb)(session_id, session, path, rest)
        self.tool_done(
            session_id, call_id, "completed" if not result.startswith("error") else "failed"
        )
        return result

    def tool(
        self,
        session_id: str,
        call_id: str,
        title: str,
        kind: str,
        status: str,
        locations: list[dict[str, str]] | None = None,
    ) -> None:
        self.update(
            session_id,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "title": title,
                "kind": kind,
                "status": status,
                "locations": locations or [],
            },
        )

    def tool_done(self, session_id: str, call_id: str, status: str) -> None:
        self.update(
            session_id,
            {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status},
        )

    def permitted(
        self, session_id: str, call_id: str, title: str, kind: str, locations: list[dict[str, str]]
    ) -> bool:
        reply = self.call(
            "session/request_permission",
            {
                "sessionId": session_id,
                "toolCall": {
                    "toolCallId": call_id,
                    "title": title,
                    "kind": kind,
                    "locations": locations,
                },
                "options": [
                    {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                ],
            },
        )
        outcome = (reply.get("result") or {}).get("outcome") or {}
        return outcome.get("outcome") == "selected" and outcome.get("optionId", "").startswith(
            "allow"
        )

    def do_read(self, session_id: str, session: dict[str, Any], path: str, _rest: str) -> str:
        if not self.client_caps.get("fs", {}).get("readTextFile"):
            return "error: the client offers no file reading"
        reply = self.call("fs/read_text_file", {"sessionId": session_id, "path": path})
        if "error" in reply:
            return f"error reading {path}: {reply['error'].get('message')}"
        return str(reply["result"]["content"])

    def do_write(self, session_id: str, session: dict[str, Any], path: str, rest: str) -> str:
        if not self.client_caps.get("fs", {}).get("writeTextFile"):
            return "error: the client offers no file writing"
        content = rest.split(":", 1)[1].strip() + "\n" if ":" in rest else "\n"
        reply = self.call(
            "fs/write_text_file", {"sessionId": session_id, "path": path, "content": content}
        )
        if "error" in reply:
            return f"error writing {path}: {reply['error'].get('message')}"
        return f"wrote {len(content.encode())} bytes to {path}"

    def do_run(self, session_id: str, session: dict[str, Any], _path: str, command: str) -> str:
        if not self.client_caps.get("terminal"):
            return "error: the client offers no terminal"
        created = self.call(
            "terminal/create", {"sessionId": session_id, "command": command, "cwd": session["cwd"]}
        )
        if "error" in created:
            return f"error starting {command}: {created['error'].get('message')}"
        ref = {"sessionId": session_id, "terminalId": created["result"]["terminalId"]}
        waited = self.call("terminal/wait_for_exit", ref)
        output = self.call("terminal/output", ref)
        self.call("terminal/release", ref)
        status = waited.get("result") or {}
        text = (output.get("result") or {}).get("output", "")
        if status.get("exitCode") not in (0, None) or status.get("signal"):
            how = status.get("signal") or f"exit code {status.get('exitCode')}"
            return f"error: {command} failed ({how})\n{text}"
        return str(text)
