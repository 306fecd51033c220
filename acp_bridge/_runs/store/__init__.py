"""The run store (docs/explanation/runs.md): one SQLite database shared by many processes.

``run_store`` the database and its queries; ``migrations`` its schema; ``dbapi`` SQLite errors
as library errors; ``run_records`` its rows as Python values; ``listing`` the ``ps --json``
rows kept as text; ``retention`` pruning; ``rules`` what the config says about runs, as the
store keeps it; and what is decided inside its transactions: ``lanes`` (who starts next),
``session_chains`` (which run a turn follows), ``supervisors`` (which process a new detached
run is handed to).
"""
