"""The run store (DESIGN §10): one SQLite database shared by many processes.

``store`` the database and its queries; ``migrations`` its schema; ``dbapi`` SQLite errors as
library errors; ``records`` its rows as Python values; ``retention`` pruning; ``foreground``
runs whose caller waits, recorded; ``recorder`` a run's events in batches; ``rules`` what the
config says about runs, as the store keeps it.
"""
