"""The caller's side of detached runs: queue a run and hand it to a supervisor, start it, send a
follow-up turn, and the handle that waits for, stops and reads a run."""
