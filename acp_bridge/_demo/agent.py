"""The bundled demo ACP agent: offline, deterministic, and honest about the protocol.

It speaks ACP v1 on stdin/stdout for real, with the standard library only (so it starts in
a few tens of milliseconds and shares no code with the client it talks to). Prompt lines
that start with a directive make it use the client's services:

    read PATH            read a file through fs/read_text_file and show it
    write PATH: TEXT     ask permission, then write TEXT through fs/write_text_file
    run COMMAND          ask permission, then run COMMAND in a client terminal
    sleep SECONDS        wait (cancellable) — for trying timeouts and Ctrl-C

Any other text is chat: "Reply with exactly X" answers X; "remember WORDS" and "recall" use
its memory of the session (_demo/memory.py: sessions are saved, so a later process can resume
or load them: follow-up turns offline); anything else is echoed. Relative paths are relative
to the session cwd. The session offers two modes (``default``,
``careful``: asks permission even to read) and one config option ``style``
(``plain`` | ``shouty``). A system prompt (``session.system_prompt`` of a profile) is taken:
its directive lines are carried out at the start of every turn, so two profiles of this
agent can differ in what they do with the same task.

Run it as ``acp-bridge demo-agent`` or ``python -m acp_bridge._demo.agent``. Threads, not
asyncio: importing asyncio (and with it ssl) would double the agent's start-up time.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import sys
import threading
import time

from acp_bridge._demo import memory as memory
from acp_bridge._demo.directives import DemoTools

# Not from typing at run time, and no pathlib: the agent's start-up is on every run's
# critical path (see acp_bridge/__init__.py). Type checkers read the block below.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

VERSION = "1.0.0"
_EXACT = re.compile(r"reply with exactly\s+(?P<text>.+?)\s*$", re.IGNORECASE)


class _Reply:
    """A reply we are waiting for from the client."""

    def __init__(self) -> None:
        self.ready = threading.Event()
        self.message: dict[str, Any] = {}


class DemoAgent(DemoTools):
    def __init__(self, stdin: IO[bytes], stdout_fd: int) -> None:
        self.stdin = stdin
        self.stdout_fd = stdout_fd
        self.write_lock = threading.Lock()
        self.ids = itertools.count(1)
        self.waiting: dict[int, _Reply] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.client_caps: dict[str, Any] = {}
        self.cancel_events: dict[str, threading.Event] = {}

    # --- wire ------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")).encode()
        # Straight to the file descriptor, one whole line per write: a buffered sys.stdout
        # used from daemon threads makes interpreter exit wait ~2 s on its lock.
        line = memoryview(data + b"\n")
        with self.write_lock, contextlib.suppress(BrokenPipeError, OSError):
            while line:
                line = line[os.write(self.stdout_fd, line) :]

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self.ids)
        reply = self.waiting[request_id] = _Reply()
        self.send({"id": request_id, "method": method, "params": params})
        reply.ready.wait()
        return reply.message

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send(
            {"method": "session/update", "params": {"sessionId": session_id, "update": update}}
        )

    def say(self, session_id: str, text: str, message_id: str) -> None:
        style = self.sessions[session_id]["style"]
        self.update(
            session_id,
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": message_id,
                "content": {"type": "text", "text": text.upper() if style == "shouty" else text},
            },
        )

    def serve(self) -> None:
        for line in self.stdin:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if "method" not in message:
                reply = self.waiting.pop(message.get("id"), None)  # type: ignore[arg-type]
                if reply is not None:
                    reply.message = message
                    reply.ready.set()
                continue
            # Each request in its own thread: a prompt waits on the client while we go on
            # reading its replies and its session/cancel.
            threading.Thread(target=self.handle, args=(message,), daemon=True).start()

    def handle(self, message: dict[str, Any]) -> None:
        method, params = message["method"], message.get("params") or {}
        handler = getattr(self, "on_" + method.replace("/", "_"), None)
        if "id" not in message:  # a notification: never answered
            if handler is not None:
                handler(params)
            return
        if handler is None:
            self.send(
                {
                    "id": message["id"],
                    "error": {
                        "code": -32601,
                        "message": "Method not found",
                        "data": {"method": method},
                    },
                }
            )
            return
        try:
            result = handler(params)
        except (KeyError, TypeError, ValueError) as exc:
            self.send(
                {
                    "id": message["id"],
                    "error": {"code": -32602, "message": "Invalid params", "data": str(exc)},
                }
            )
            return
        self.send({"id": message["id"], "result": result})

    # --- methods ---------------------------------------------------------------------

    def on_initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        self.client_caps = params.get("clientCapabilities") or {}
        return {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
                "sessionCapabilities": {
                    "close": {},
                    "resume": {},
                    "list": {},
                    "systemPrompt": {},
                },
            },
            "authMethods": [],
            "agentInfo": {
                "name": "acp-bridge-demo",
                "title": "acp-bridge demo agent",
                "version": VERSION,
            },
        }

    def on_session_new(self, params: dict[str, Any]) -> dict[str, Any]:
        # Random, not the pid: in a PID namespace every demo process is pid 2, and saved
        # sessions of different runs must not collide.
        session_id = f"demo_{os.urandom(6).hex()}"
        self.sessions[session_id] = {
            "cwd": params["cwd"],
            "mode": "default",
            "style": "plain",
            "system": _text(params.get("systemPrompt") or {}),
        }
        memory.save(session_id, self.sessions[session_id])
        return {"sessionId": session_id, **self._setup()}

    def on_session_resume(self, params: dict[str, Any]) -> dict[str, Any]:
        record = memory.load(params["sessionId"])
        session = {**record, "cwd": params["cwd"], "mode": "default", "style": "plain"}
        self.sessions[params["sessionId"]] = session
        return self._setup()

    def on_session_load(self, params: dict[str, Any]) -> dict[str, Any]:
        setup = self.on_session_resume(params)
        session_id = params["sessionId"]
        for number, (prompt, answer) in enumerate(self.sessions[session_id].get("turns", [])):
            self.update(
                session_id,
                {
                    "sessionUpdate": "user_message_chunk",
                    "content": {"type": "text", "text": prompt},
                },
            )
            self.say(session_id, answer, f"msg_history_{number}")
        return setup

    def on_session_list(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"sessions": memory.listing(params.get("cwd"))}

    def _setup(self) -> dict[str, Any]:
        return {
            "modes": {
                "currentModeId": "default",
                "availableModes": [
                    {"id": "default", "name": "Default", "description": "asks before changing"},
                    {"id": "careful", "name": "Careful", "description": "asks before anything"},
                ],
            },
            "configOptions": [self._style_option("plain")],
        }

    @staticmethod
    def _style_option(value: str) -> dict[str, Any]:
        return {
            "id": "style",
            "name": "Answer style",
            "type": "select",
            "currentValue": value,
            "options": [{"value": "plain", "name": "Plain"}, {"value": "shouty", "name": "Shouty"}],
        }

    def on_session_set_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self.sessions[params["sessionId"]]
        if params["modeId"] not in ("default", "careful"):
            raise ValueError(f"unknown mode {params['modeId']}")
        session["mode"] = params["modeId"]
        return {}

    def on_session_set_config_option(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self.sessions[params["sessionId"]]
        if params["configId"] != "style" or params["value"] not in ("plain", "shouty"):
            raise ValueError(f"unknown option {params['configId']}={params['value']}")
        session["style"] = params["value"]
        return {"configOptions": [self._style_option(session["style"])]}

    def on_session_close(self, params: dict[str, Any]) -> dict[str, Any]:
        self.sessions.pop(params["sessionId"], None)
        return {}

    def on_session_cancel(self, params: dict[str, Any]) -> None:
        self.cancel_events.setdefault(params["sessionId"], threading.Event()).set()

    def on_session_prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        started = time.time_ns()
        reply = self._prompt(params)
        # The turn's span, when the client passed on OTEL_* settings (_demo/telemetry.py).
        meta = params.get("_meta") or {}
        if "traceparent" in meta:
            from acp_bridge._demo.telemetry import export_span

            attributes = {"acp.stop_reason": reply["stopReason"]}
            export_span("demo.prompt", meta, started, attributes)
        return reply

    def _prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params["sessionId"]
        session = self.sessions[session_id]
        cancelled = self.cancel_events[session_id] = threading.Event()
        text = "\n".join(b.get("text", "") for b in params["prompt"] if b.get("type") == "text")
        # The system prompt's directives first, then the prompt's own (see the docstring).
        given = "\n".join([session.get("system") or "", text])
        steps = [line.strip() for line in given.splitlines() if line.strip()]
        directives = [s for s in steps if s.split(" ", 1)[0].lower() in _DIRECTIVES]
        if directives:
            self.say(session_id, f"Working on {len(directives)} step(s).", "msg_plan")
        results: list[str] = []
        for number, step in enumerate(directives, 1):
            if cancelled.is_set():
                return {"stopReason": "cancelled"}
            results.append(self.do(session_id, session, number, step, cancelled))
            if cancelled.is_set():
                return {"stopReason": "cancelled"}
        answer = _final_answer(session, text, directives, results)
        self.say(session_id, answer, "msg_final")
        session.setdefault("turns", []).append([text, answer])
        session.setdefault("title", text.strip().splitlines()[0][:80] if text.strip() else None)
        memory.save(session_id, session)
        return {
            "stopReason": "end_turn",
            "usage": {
                "inputTokens": len(text.split()),
                "outputTokens": 1,
                "totalTokens": len(text.split()) + 1,
            },
        }


_DIRECTIVES = ("read", "write", "run", "sleep")


def _text(system_prompt: dict[str, Any]) -> str:
    """The text of a ``systemPrompt`` (append mode: content blocks)."""
    blocks = system_prompt.get("content") or []
    return "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")


def _final_answer(
    session: dict[str, Any], text: str, directives: list[str], results: list[str]
) -> str:
    remembered = [a for line in text.splitlines() if (a := memory.chat(session, line))]
    if remembered:
        return "\n".join(remembered)
    exact = next((m["text"] for line in text.splitlines() if (m := _EXACT.search(line))), None)
    if exact is not None:
        return exact.strip().strip("\"'`")
    if results:
        return "\n".join(r.rstrip("\n") for r in results)
    first = text.strip().splitlines()[0] if text.strip() else ""
    return f"demo agent received: {first}"


def main() -> int:
    if sys.argv[1:] == ["--version"]:  # its own version (acp-bridge doctor), not Python's
        from acp_bridge._version import __version__

        print(f"acp-bridge demo agent {__version__}")
        return 0
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        DemoAgent(sys.stdin.buffer, sys.stdout.fileno()).serve()
    return 0


if __name__ == "__main__":
    code = main()
    if threading.active_count() == 1:  # no request still being answered
        # Ended at once, without the interpreter's teardown (~3 ms, measured): the bridge
        # waits for the agent to exit before it answers, so every demo run paid it. Replies
        # went out with os.write; the memory file is written and closed per request.
        sys.stdout.flush()
        os._exit(code)
    raise SystemExit(code)
