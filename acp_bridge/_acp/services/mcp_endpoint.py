"""What the bridge's MCP services endpoint and its stdio relay agree on: the endpoint's path
and the environment variable that carries the run's token.

Apart from :mod:`acp_bridge._acp.services.mcp_relay` because the bridge needs only these names, and
importing the relay would load its HTTP client on every run (``http.client``, ~1% of a cold
run's instructions).
"""

TOKEN_VARIABLE = "ACP_BRIDGE_SERVICES_TOKEN"
ENDPOINT = "/mcp"
