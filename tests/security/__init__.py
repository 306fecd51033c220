"""Escape attempts through files, terminals, the agent process and the state directory."""
