__version__ = "0.1.0"
"""The version of acp-bridge (the package metadata takes it from here)."""
