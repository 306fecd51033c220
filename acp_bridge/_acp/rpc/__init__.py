"""JSON-RPC over the agent's stdio: the connection, our requests and their replies, the agent's
requests routed to handlers and answered concurrently, and whether the agent shows progress."""
