"""What the bridge serves to an agent: permission decisions, files, terminals
(docs/explanation/security.md)."""
