"""Processes we start: their groups, exits, environments, the ``/proc`` reader, markers and what
outlives a group."""
