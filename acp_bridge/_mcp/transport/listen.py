"""Where an HTTP server may listen, and with which token: checked before the SDK loads.

Kept apart from :mod:`.serving` (which imports the MCP SDK, over a second) so a refused
``--http`` fails at once. The token comes from ``--token-file`` or ``$ACP_BRIDGE_MCP_TOKEN``,
never from the command line, where every user of the machine can read it (``ps``).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from acp_bridge._os.fs.input_files import InputRefused, read_text
from acp_bridge.errors import ConfigError

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

TOKEN_ENV = "ACP_BRIDGE_MCP_TOKEN"
TOKEN_FILE = "a token file"
MAX_TOKEN_BYTES = 64 << 10
PATH = "/mcp"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
"""Hosts whose HTTP servers refuse foreign ``Host``/``Origin`` headers (DNS rebinding)."""


@dataclass(frozen=True)
class Listen:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:  # a host name: it may resolve anywhere
            return False

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}{PATH}"


def parse_listen(text: str) -> Listen:
    """``HOST:PORT`` (``[::1]:8000`` for IPv6); port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--http: expected HOST:PORT (e.g. 127.0.0.1:8765), got {text!r}")
    return Listen(host, int(port))


def read_token(path: Path | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The bearer token: from ``path``, else ``$ACP_BRIDGE_MCP_TOKEN``; None if neither."""
    if path is not None:
        try:
            token = read_text(path, what=TOKEN_FILE, limit=MAX_TOKEN_BYTES).strip()
        except InputRefused as exc:
            raise ConfigError(f"--token-file: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"--token-file: cannot read {path}: {exc.strerror}") from None
        if not token:
            raise ConfigError(f"--token-file: {path} is empty")
        return token
    token = (os.environ if environ is None else environ).get(TOKEN_ENV, "").strip()
    return token or None


def check_listen(listen: Listen, token: str | None) -> None:
    if token is None and not listen.loopback:
        raise ConfigError(
            f"--http {listen.host}: refusing to listen beyond loopback without a bearer token "
            f"(--token-file FILE or ${TOKEN_ENV})"
        )


def rebinding_rules(host: str) -> TransportSecuritySettings | None:
    """The ``Host``/``Origin`` headers a server listening on ``host`` accepts (the MCP SDK's
    DNS-rebinding check), or None: beyond loopback a name cannot be rebound to us, and the
    token guards. One rule for every HTTP face: the MCP face and ``acp-bridge ui``."""
    if host not in LOOPBACK_NAMES:
        return None
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
