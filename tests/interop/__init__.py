"""Real third-party ACP agents installed from PyPI and npm (``-m interop``)."""
