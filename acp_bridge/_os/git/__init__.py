"""Git for the bridge: one way to run it, worktrees for isolated runs, and the files a run changed
(git trees or snapshots)."""
