"""Agent→client requests: method → params model → handler, and the one place where errors
become JSON-RPC errors.

A :class:`Route` names a method, the pydantic model of its params and an async handler that
takes the validated params: params are validated once, here, and handlers never see raw
dicts. jsonrpcserver (the project's dispatcher) checks the JSON-RPC shape (-32600, -32601)
and calls the route. Its method table is built once per connection, on the first request:
importing jsonrpcserver costs ~0.2 s (it loads jsonschema), and many turns never see an
agent→client request.

Handlers raise library errors; :func:`rpc_error` maps them: a sandbox refusal or a limit is
-32602 with ``data.reason``, a missing file -32002 "Resource not found", params that do not
fit the method -32602 with pydantic's details, anything unexpected -32603 (logged; a bug in
a handler must not end the run).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from acp_bridge._acp.schema import INTERNAL_ERROR, INVALID_PARAMS, RESOURCE_NOT_FOUND
from acp_bridge.errors import LimitExceeded, SandboxViolation

log = logging.getLogger("acp_bridge.router")

ParamsT = TypeVar("ParamsT", bound=BaseModel)
Reply = dict[str, Any]


class RequestError(Exception):
    """A handler's explicit JSON-RPC error (when no library error says it better)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(frozen=True)
class Route(Generic[ParamsT]):
    method: str
    params: type[ParamsT]
    handler: Callable[[ParamsT], Awaitable[Reply]]


def rpc_error(exc: Exception) -> tuple[int, str, Any]:
    """(code, message, data) of the JSON-RPC error the agent gets for ``exc``."""
    if isinstance(exc, RequestError):
        return exc.code, exc.message, exc.data
    if isinstance(exc, ValidationError):
        details = exc.errors(include_url=False, include_context=False, include_input=False)
        return INVALID_PARAMS, "Invalid params", details
    if isinstance(exc, SandboxViolation):
        return INVALID_PARAMS, str(exc), {"reason": "sandbox_violation"}
    if isinstance(exc, LimitExceeded):
        return INVALID_PARAMS, str(exc), {"reason": "limit_exceeded"}
    if isinstance(exc, FileNotFoundError):
        path = exc.filename or ""
        return RESOURCE_NOT_FOUND, f"Resource not found: {path} (ENOENT)", {"path": path}
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename else ""
        return INTERNAL_ERROR, f"{exc.strerror or exc}{where}", None
    log.warning("request handler failed", exc_info=exc)
    return INTERNAL_ERROR, "Internal error", f"{type(exc).__name__}: {exc}"


def error_reply(request_id: Any, code: int, message: str, data: Any = None) -> Reply:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


class Router:
    """The agent→client methods one connection serves."""

    def __init__(self, routes: Iterable[Route[Any]] = ()) -> None:
        self._routes = {route.method: route for route in routes}
        self._table: dict[str, Callable[..., Awaitable[Any]]] | None = None

    @property
    def methods(self) -> list[str]:
        return list(self._routes)

    async def answer(self, message: dict[str, Any]) -> Reply | None:
        """The reply to one request message (None for what needs no reply)."""
        from jsonrpcserver.async_main import dispatch_to_serializable

        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            # ACP params are always objects; jsonrpcserver would pass a list positionally.
            return error_reply(
                message.get("id"), INVALID_PARAMS, "Invalid params", "params must be an object"
            )
        if self._table is None:
            self._table = {method: _as_method(route) for method, route in self._routes.items()}
        reply = await dispatch_to_serializable(
            message,  # already parsed: the deserializer passes it on
            self._table,
            deserializer=lambda parsed: parsed,
        )
        return reply if isinstance(reply, dict) else None


def _as_method(route: Route[Any]) -> Callable[..., Awaitable[Any]]:
    """A route as a jsonrpcserver method: validate the params, call, map the outcome."""
    from jsonrpcserver import Error, Success

    async def method(**params: Any) -> Any:
        try:
            return Success(await route.handler(route.params.model_validate(params)))
        except Exception as exc:  # every failure is the agent's answer, never the run's end
            return Error(*rpc_error(exc))

    return method
