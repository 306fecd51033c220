"""The local model loop under ``spawn`` and ``ask``: everything that imports pydantic-ai
(imported only on that path: over a second of import)."""
