"""The OS sandbox: its choice and plan, real agents and commands confined, worktrees."""
