"""One ACP session over a connection: handshake, auth, setup, mode/model/options, prompt turns,
cancel, close; the methods outside a turn; trace context."""
