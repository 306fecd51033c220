"""The entries on the local model loop, ``spawn`` and ``ask``, and the tools they offer: the
workspace tools (``bash``, ``read_file``, ``write_file``) and the host's registry, which adds
the subtask entries ``spawn`` and ``acp_spawn`` as tools."""
