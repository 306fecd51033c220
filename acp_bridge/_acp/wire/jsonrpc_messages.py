"""What one JSON object from the agent is, by its keys: a :class:`ReplyMessage` to one of our
requests, a :class:`RequestMessage` from the agent, a :class:`NotificationMessage`, or a
:class:`Skipped` with the reason it does not fit (:func:`classify`). The line it came on was
decoded and bounded first, at the parse boundary (inbound.py).
"""

from __future__ import annotations

from typing import Any

from acp_bridge._acp.wire.schema import INTERNAL_ERROR

ERROR_MESSAGE_CHARS = 2000
"""An agent's error message is cut to this many characters (it ends up in one line)."""


# Plain classes, not dataclasses: those compile their methods as every command starts.
# Not frozen either: nothing changes them, and a frozen one costs more to build.
class ReplyMessage:
    """The agent's answer to our request ``id``: ``error`` is None or a checked error."""

    __slots__ = ("error", "id", "result")

    def __init__(self, id: int, result: Any, error: dict[str, Any] | None) -> None:
        self.id = id
        self.result = result
        self.error = error


class RequestMessage:
    """A request from the agent, its fields checked (``params`` None when absent)."""

    __slots__ = ("id", "method", "params", "params_ok", "params_problem")

    def __init__(
        self,
        id: int | str,  # the JSON-RPC id
        method: str,
        params: dict[str, Any] | None,
        params_ok: bool = True,
        params_problem: str = "params must be an object",
    ) -> None:
        self.id = id
        self.method = method
        self.params = params
        # False: the params cannot be used (the router answers -32602 with params_problem).
        self.params_ok = params_ok
        self.params_problem = params_problem


class NotificationMessage:
    __slots__ = ("method", "params")

    def __init__(self, method: str, params: dict[str, Any] | None) -> None:
        self.method = method
        self.params = params


class Skipped:
    """A message that does not fit. ``answer``: it was meant as a request, so it gets
    -32600 with ``id: null`` (what JSON-RPC says for a request whose id cannot be used)."""

    __slots__ = ("answer", "reason")

    def __init__(self, reason: str, answer: bool = False) -> None:
        self.reason = reason
        self.answer = answer


Inbound = ReplyMessage | RequestMessage | NotificationMessage | Skipped


def _checked_error(error: Any) -> dict[str, Any]:
    """A JSON-RPC error object whose ``code`` is an int and ``message`` a bounded str."""
    if not isinstance(error, dict):
        return {"code": INTERNAL_ERROR, "message": _clip(str(error))}
    code = error.get("code")
    message = error.get("message")
    checked: dict[str, Any] = {
        "code": code if type(code) is int else INTERNAL_ERROR,
        "message": _clip(message if isinstance(message, str) else str(message or "")),
    }
    if error.get("data") is not None:
        checked["data"] = error["data"]
    return checked


def _clip(text: str) -> str:
    return text if len(text) <= ERROR_MESSAGE_CHARS else text[:ERROR_MESSAGE_CHARS] + "…"


def classify(message: dict[str, Any]) -> Inbound:
    """What one JSON object from the agent is. By its keys, never by its id: the agent's
    request ids may be integers that overlap ours."""
    method = message.get("method")
    if method is None:
        if "result" not in message and "error" not in message:
            return Skipped("a message with neither method, result nor error")
        reply_id = message.get("id")
        if type(reply_id) is not int:  # bool, float, str, list: none of our ids
            return Skipped("a reply whose id is not one of ours")
        error = message.get("error")
        return ReplyMessage(
            reply_id, message.get("result"), None if error is None else _checked_error(error)
        )
    has_id = "id" in message
    if type(method) is not str:
        return Skipped("a method that is not a string", answer=has_id)
    params = message.get("params")
    if params is not None and type(params) is not dict:
        if has_id and type(message["id"]) in (int, str):
            return RequestMessage(message["id"], method, None, params_ok=False)  # -32602
        return Skipped(f"{method}: params that are not an object", answer=has_id)
    if not has_id:
        return NotificationMessage(method, params)
    request_id = message["id"]
    if type(request_id) not in (int, str):
        return Skipped(f"{method}: an id that is neither an integer nor a string", answer=True)
    return RequestMessage(request_id, method, params)
