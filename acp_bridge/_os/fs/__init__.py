"""Files: confined reads and writes under roots, paths resolved once, the bridge's own private
files and where they live, unix sockets at any path."""
