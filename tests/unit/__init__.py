"""Unit tests, each file named after the module it tests (``test_package_test_names.py``)."""
