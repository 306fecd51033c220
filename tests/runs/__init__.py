"""Durable runs: the run store, detached runs, supervisors, lanes, budgets, send and stop."""
