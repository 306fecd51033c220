"""YAML input: every value located (file:line:column), bounded, and its parse cached."""
