"""``acp-bridge smoke``: run suites of prompts against agents and say, for CI, what passed.

suite.py reads suite files (YAML, errors with file:line:column); expect.py checks one
envelope against a case's expectations; runner.py runs cases concurrently, each in a fresh
workspace; report.py writes JUnit XML, a JSON report and the summary table.
"""
