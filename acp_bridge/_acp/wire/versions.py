"""Which ACP wire version a connection speaks: v1, or the v2 Preview
(docs/explanation/acp.md, two wire versions, one turn model).

Negotiation is the spec's rule, the same in both versions: the client's ``initialize``
names the latest version it speaks; the agent answers with that version when it speaks it,
else with the latest it does (a v2 agent with nothing at or below the request fails with
-32022). The profile's ``protocol`` chooses what we ask for: ``1`` (the default) asks for
1, ``auto`` and ``2`` ask for 2. A reply we do not speak, or one below what ``2`` demands,
is a clear error naming both; a reply that names 2 in v1's shape is an agent that echoes
the version asked for (:func:`spoken_version`).

Under ``auto`` the one ``initialize`` must serve both: its params carry the v1 keys
(``clientCapabilities``, ``clientInfo``) and the v2 keys (``capabilities``, ``info``), each
version ignoring the other's (v1 agents keep unknown fields; the official SDK's router
drops what does not parse under the version it picks). The v2 reply is read into the same
:class:`InitializeResult` the rest of the client uses: a v2 agent that supports sessions
supports new, list, resume, close, prompt and cancel; its MCP transports and prompt
capabilities move from ``session``; its auth methods name their id ``methodId``, and a
non-empty list advertises ``auth/login`` and ``auth/logout``.

Session setup is read the same way (:func:`setup_reply`, :func:`read_config_options`), as
the v2 schema of ``@agentclientprotocol/sdk`` 2.4.0 has it: a config option names its id
``configId`` (v1: ``id``), a setup reply may list the session's ``availableCommands``, and
modes and models are not v2's (nor are ``session/set_mode`` and ``session/set_model``).
Writing follows the same schema: a value set is tagged, ``id`` for a select's value
(``_acp/session/session_options.py``).
"""

from __future__ import annotations

from typing import Any, Literal

from acp_bridge._acp.wire.initialize_schema import (
    ClientCapabilities,
    Implementation,
    InitializeResult,
)
from acp_bridge._acp.wire.schema import ModelT, parse_reply
from acp_bridge.errors import MalformedReply, ProtocolError

ProtocolSetting = Literal["auto", "1", "2"]
SPOKEN = (1, 2)
UNSUPPORTED_VERSION = -32022
V2_BASELINE = ("list", "resume", "close")
"""Session methods every v2 agent with ``capabilities.session`` supports."""


def requested_version(setting: ProtocolSetting) -> int:
    return 1 if setting == "1" else 2


def initialize_params(
    setting: ProtocolSetting, capabilities: ClientCapabilities, info: Implementation
) -> dict[str, Any]:
    """The ``initialize`` params for ``setting``: v1 keys, and the v2 ones when asking for 2."""
    version = requested_version(setting)
    params: dict[str, Any] = {
        "protocolVersion": version,
        "clientCapabilities": capabilities.wire(),
        "clientInfo": info.wire(),
    }
    if version == 2:
        params["info"] = info.wire()
        # v2 has no fs/* or terminal/*: what the client offers goes in mcpServers.
        v2_caps: dict[str, Any] = {}
        if capabilities.elicitation is not None:
            v2_caps["elicitation"] = capabilities.elicitation.wire()
        params["capabilities"] = v2_caps
        if setting == "2":  # nothing to fall back to: no v1 keys
            del params["clientCapabilities"], params["clientInfo"]
    return params


def accepted_version(setting: ProtocolSetting, reply: Any) -> int:
    """The version the agent chose, if we speak it and the profile allows it."""
    version = reply.get("protocolVersion") if isinstance(reply, dict) else None
    if type(version) is not int:
        raise ProtocolError("malformed reply to initialize: protocolVersion: not an integer")
    wanted = requested_version(setting)
    if version not in SPOKEN or version > wanted or (setting == "2" and version != 2):
        speaks = "version 1 or 2" if setting == "auto" else f"version {wanted} (profile protocol)"
        raise ProtocolError(
            f"the agent speaks ACP protocol version {version}; acp-bridge speaks {speaks}"
        )
    return version


def spoken_version(setting: ProtocolSetting, reply: Any) -> tuple[int, str | None]:
    """The version this connection speaks, and a warning when it is not what the reply says.

    An agent that echoes the version it is asked for answers 2 in v1's shape and speaks v1
    (fast-agent 0.10.45-0.10.48, goose 1.52.0, the PyPI claude-code-acp 0.5.1). Under
    ``auto`` the one ``initialize`` carried v1's keys too, so the agent has all v1 needs:
    it is spoken as v1. Under ``2`` it is taken at its word, with a warning that says why
    its turns may end the v1 way."""
    version = accepted_version(setting, reply)
    if version != 2 or not _v1_shaped(reply):
        return version, None
    shape = "the agent answered protocolVersion 2 in v1's shape (agentCapabilities, agentInfo)"
    if setting == "auto":
        return 1, f"{shape}: spoken as v1"
    return 2, f"{shape}: it may speak only v1 (profile protocol: 1)"


def _v1_shaped(reply: Any) -> bool:
    """v1's ``agentCapabilities`` or ``agentInfo``, and none of v2's ``capabilities``, ``info``."""
    return (
        isinstance(reply, dict)
        and "capabilities" not in reply
        and "info" not in reply
        and ("agentCapabilities" in reply or "agentInfo" in reply)
    )


def unsupported_version(data: Any, setting: ProtocolSetting) -> ProtocolError:
    """The agent's -32022: none of its versions is at or below ours."""
    supported = data.get("supported") if isinstance(data, dict) else None
    theirs = f" (it speaks {supported})" if isinstance(supported, list) else ""
    return ProtocolError(
        f"the agent does not speak ACP protocol version {requested_version(setting)}{theirs}"
    )


def initialize_result(version: int, reply: Any) -> InitializeResult:
    """The agent's reply, read into the one model both versions share."""
    if version == 1:
        return parse_reply(InitializeResult, reply, "initialize")
    data = _object(reply)
    caps = _object(data.get("capabilities"))
    session = caps.get("session")
    methods = [_v1_auth_method(m) for m in data.get("authMethods") or []]
    # v2 advertises auth/login and auth/logout by a non-empty authMethods list.
    auth: dict[str, Any] | None = {"logout": {}} if methods else None
    # v2 names every transport it takes (stdio too, unlike v1): none named, none taken.
    none_taken = {"http": False, "stdio": False}
    shared: dict[str, Any] = {
        "protocolVersion": version,
        "authMethods": methods,
        "agentInfo": data.get("info"),
        "agentCapabilities": {"auth": auth, "mcpCapabilities": none_taken},
    }
    if isinstance(session, dict):
        mcp, prompt = _object(session.get("mcp")), _object(session.get("prompt"))
        session_caps: dict[str, Any] = {name: {} for name in V2_BASELINE}
        session_caps.update(
            {k: v for k, v in session.items() if k not in ("mcp", "prompt") and v is not None}
        )
        shared["agentCapabilities"] = {
            "auth": auth,
            "sessionCapabilities": session_caps,
            "mcpCapabilities": {
                "http": mcp.get("http") is not None,
                "stdio": mcp.get("stdio") is not None,
            },
            "promptCapabilities": {k: prompt.get(k) is not None for k in prompt},
        }
    return parse_reply(InitializeResult, shared, "initialize")


def _v1_auth_method(method: Any) -> Any:
    """A v2 auth method in the v1 shape the client reads: v2 names its id ``methodId``."""
    if isinstance(method, dict) and "methodId" in method and "id" not in method:
        return {"id": method["methodId"], **method}
    return method  # malformed: the reply's parse says so


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def setup_reply(version: int | None, model: type[ModelT], reply: Any, method: str) -> ModelT:
    """A session setup reply (``session/new``, ``resume``, ``fork``, ``load``,
    ``session/set_config_option``) read as ``model``; a malformed one is a ProtocolError."""
    if version == 2 and isinstance(reply, dict):
        reply = {k: v for k, v in reply.items() if k not in ("modes", "models")}
        if isinstance(reply.get("configOptions"), list):
            try:
                reply["configOptions"] = read_config_options(2, reply["configOptions"])
            except TypeError as exc:
                raise MalformedReply(f"malformed reply to {method}: {exc}") from exc
    return parse_reply(model, reply, method)


def read_config_options(version: int | None, options: list[Any]) -> list[Any]:
    """Config options in the shape the one model reads: v2's ``configId`` as ``id``. In v2
    an option without ``configId`` is malformed (TypeError), whatever else it names: the
    meaning of a v1 ``id`` there is not the schema's."""
    if version != 2:
        return options
    read = []
    for index, option in enumerate(options):
        if isinstance(option, dict):
            config_id = option.get("configId")
            if not isinstance(config_id, str):
                raise TypeError(f"configOptions.{index}.configId: Field required (v2)")
            option = {k: v for k, v in option.items() if k not in ("id", "configId")}
            option["id"] = config_id
        read.append(option)
    return read
