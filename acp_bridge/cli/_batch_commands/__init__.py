"""Commands that run many tasks on the batch executor: batch (and worker), compare, smoke."""
