"""Commands that run entries and follow runs: run, bash, spawn, ask, tools, --detach,
wait/ps/show/logs/stop/prune, sessions, mcp."""
