"""``acp-bridge smoke``: run suites of prompts against agents and say, for CI, what passed.

_suite.py reads suite files (YAML, errors with file:line:column); _expect.py checks one
envelope against a case's expectations; _suite_run.py runs the cases, concurrently, each in
a fresh workspace; _report.py writes JUnit XML, a JSON report and the summary table.
"""
