"""The MCP server (``acp-bridge mcp``) over stdio and HTTP, driven by the official client."""
