"""Our requests to the agent and their replies: what a caller awaits, and what it gets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio

from acp_bridge.errors import AgentRequestError, BridgeError


@dataclass
class Response:
    """The agent's reply to one of our requests (or why there will be none)."""

    method: str
    result: Any = None
    error: dict[str, Any] | None = None
    failure: BridgeError | None = None

    def unwrap(self) -> Any:
        """The result, or the matching typed error."""
        if self.failure is not None:
            raise self.failure
        if self.error is not None:
            raise AgentRequestError(
                self.method, self.error["code"], self.error["message"], self.error.get("data")
            )
        return self.result


@dataclass
class PendingRequest:
    """A request we sent whose reply may still be coming."""

    id: int
    method: str
    _done: anyio.Event = field(default_factory=anyio.Event)
    response: Response | None = None

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
