"""One prompt turn, whatever the wire version: the update stream gathered into messages, tool
calls, usage, plans, notices, subagents and reported file changes."""
