"""What the bridge serves to an agent: permission decisions, files, terminals (DESIGN §5)."""
