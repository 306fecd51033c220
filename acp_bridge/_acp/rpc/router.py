"""Agent→client requests: method → params model → handler, and the one place where errors
become JSON-RPC errors.

A :class:`Route` names a method, the pydantic model of its params and an async handler that
takes the validated params: params are validated once, here, and handlers never see raw
dicts. jsonrpcserver (the project's dispatcher) looks the method up (-32601), calls it and
builds the reply; its method table is built once per connection, on the first request
(importing it costs ~0.2 s, and many turns never see an agent→client request). The JSON-RPC
shape of a request (id, method, params an object) was already checked at the parse boundary
(``_acp/wire/inbound.py``), so jsonrpcserver's own JSON Schema pass is not run a second time: its
``validator`` is the identity (~0.2 ms a request saved, which matters under a flood).

Handlers raise library errors; :func:`rpc_error` maps them: a sandbox refusal or a limit is
-32602 with ``data.reason``, a missing file -32002 "Resource not found", params that do not
fit the method -32602 with pydantic's details, another OS error on the request's path (a
component it may not search, a symlink loop, a name too long, a directory where a file was
asked for) -32602 and any other (an I/O error) -32603, each with its errno's name in words
and in ``data.errno`` (``_os/os_errors.py``: never a Python repr), anything unexpected -32603
(logged; a bug in a handler must not end the run).
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from acp_bridge._acp.wire.jsonrpc_messages import RequestMessage, Skipped, classify
from acp_bridge._acp.wire.schema import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
)
from acp_bridge._os.os_errors import OS_FAILURES, errno_name, os_reason
from acp_bridge.errors import LimitExceeded, SandboxViolation

log = logging.getLogger("acp_bridge.router")

ParamsT = TypeVar("ParamsT", bound=BaseModel)
Reply = dict[str, Any]
_PATH_ERRNOS = frozenset(
    {
        errno.EACCES, errno.EPERM, errno.ELOOP, errno.ENAMETOOLONG, errno.EISDIR,
        errno.ENOTDIR, errno.EROFS, errno.EEXIST, errno.EINVAL, errno.ENXIO, errno.ETXTBSY,
    }
)  # fmt: skip
"""OS errors that say the request's path cannot be used as asked (-32602), not that the
machine failed (-32603)."""


class RequestError(Exception):
    """A handler's explicit JSON-RPC error (when no library error says it better)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class Route(Generic[ParamsT]):
    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = ("handler", "method", "params")

    def __init__(
        self, method: str, params: type[ParamsT], handler: Callable[[ParamsT], Awaitable[Reply]]
    ) -> None:
        self.method = method
        self.params = params
        self.handler = handler


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
    name = errno_name(exc) if isinstance(exc, OS_FAILURES) else None
    if name is not None:
        assert isinstance(exc, OSError | RuntimeError)
        path = exc.filename if isinstance(exc, OSError) and exc.filename else None
        where = f": {path}" if isinstance(path, str) else ""
        data: dict[str, Any] = {"reason": "os_error", "errno": name}
        if isinstance(path, str):
            data["path"] = path
        number = exc.errno if isinstance(exc, OSError) else errno.ELOOP
        code = INVALID_PARAMS if number in _PATH_ERRNOS else INTERNAL_ERROR
        return code, f"{os_reason(exc)}{where}", data
    if isinstance(exc, OSError):  # one that names no errno
        return INTERNAL_ERROR, str(exc) or type(exc).__name__, {"reason": "os_error"}
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

    async def answer(self, message: RequestMessage | dict[str, Any]) -> Reply | None:
        """The reply to one request (a checked :class:`RequestMessage`, or a request
        message a caller built, which is checked here)."""
        from jsonrpcserver.async_main import dispatch_to_serializable

        request = message if isinstance(message, RequestMessage) else _as_request(message)
        if isinstance(request, dict):
            return request  # the error reply for a message that is not a request
        if not request.params_ok:
            # Not an object (a list would be positional arguments), or numbers it cannot hold.
            return error_reply(request.id, INVALID_PARAMS, "Invalid params", request.params_problem)
        if self._table is None:
            self._table = {method: _as_method(route) for method, route in self._routes.items()}
        wire: dict[str, Any] = {"jsonrpc": "2.0", "id": request.id, "method": request.method}
        wire["params"] = request.params or {}
        reply = await dispatch_to_serializable(
            wire,  # already parsed and checked: both passes are the identity
            self._table,
            deserializer=_same,
            validator=_same,
        )
        if isinstance(reply, dict) and reply.get("error", {}).get("code") == METHOD_NOT_FOUND:
            reply["error"]["data"] = {"method": request.method}  # say which, for the agent
        return reply if isinstance(reply, dict) else None


def _same(value: Any) -> Any:
    return value


def _as_method(route: Route[Any]) -> Callable[..., Awaitable[Any]]:
    """A route as a jsonrpcserver method: validate the params, call, map the outcome."""
    from jsonrpcserver import Error, Success

    async def method(**params: Any) -> Any:
        try:
            return Success(await route.handler(route.params.model_validate(params)))
        except Exception as exc:  # every failure is the agent's answer, never the run's end
            return Error(*rpc_error(exc))

    return method


def _as_request(message: dict[str, Any]) -> RequestMessage | Reply:
    """A request message (from a caller that bypassed the boundary, e.g. a test) checked."""
    checked = classify(message)
    if isinstance(checked, RequestMessage):
        return checked
    reason = checked.reason if isinstance(checked, Skipped) else "not a request"
    return error_reply(None, INVALID_REQUEST, "Invalid request", reason)
