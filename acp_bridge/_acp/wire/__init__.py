"""What crosses the wire: the ACP wire types, the version a connection speaks, the one parse
boundary for what the agent writes, the one writer of what we send, and the transcript of both."""
