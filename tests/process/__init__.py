"""Behaviour through real processes: entries, the command line and test agents, end to end."""
