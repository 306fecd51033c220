"""How the MCP face is reached: stdio and streamable HTTP behind a bearer token, where an HTTP
server may listen, strict framing, and host lines the SDK cannot read."""
