"""Small building blocks below everything else: immutable records, pydantic field defaults, JSON
text in pieces."""
