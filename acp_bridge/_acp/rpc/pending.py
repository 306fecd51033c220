"""Our requests to the agent and their replies: what a caller awaits, and what it gets."""

from __future__ import annotations

from typing import Any

import anyio

from acp_bridge.errors import AgentRequestError, BridgeError


class Response:
    """The agent's reply to one of our requests (or why there will be none)."""

    # Plain classes, not dataclasses: those compile their methods as every command starts.
    __slots__ = ("error", "failure", "method", "result")

    def __init__(
        self,
        method: str,
        result: Any = None,
        error: dict[str, Any] | None = None,
        failure: BridgeError | None = None,
    ) -> None:
        self.method = method
        self.result = result
        self.error = error
        self.failure = failure

    def unwrap(self) -> Any:
        """The result, or the matching typed error."""
        if self.failure is not None:
            raise self.failure
        if self.error is not None:
            raise AgentRequestError(
                self.method, self.error["code"], self.error["message"], self.error.get("data")
            )
        return self.result


class PendingRequest:
    """A request we sent whose reply may still be coming."""

    __slots__ = ("_done", "id", "method", "response")

    def __init__(
        self,
        id: int,  # the JSON-RPC id
        method: str,
        _done: anyio.Event | None = None,
        response: Response | None = None,
    ) -> None:
        self.id = id
        self.method = method
        self._done = anyio.Event() if _done is None else _done
        self.response = response

    def resolve(self, response: Response) -> None:
        if self.response is None:
            self.response = response
            self._done.set()

    @property
    def done(self) -> bool:
        return self.response is not None

    async def wait(self) -> Response:
        """The reply; never raises (errors are in the Response), so it is safe in tasks."""
        await self._done.wait()
        assert self.response is not None
        return self.response


def id_key(request_id: Any) -> tuple[str, Any]:
    """A dict key for a JSON-RPC id: ``1`` and ``"1"`` are different requests."""
    return type(request_id).__name__, request_id
