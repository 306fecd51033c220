"""Agents from the ACP registry (agentclientprotocol/registry): its ``registry.json`` read
(``entries``), where that file comes from (``sources``: the dated snapshot shipped here, or
the copy ``--registry`` fetched into the cache), and an entry installed and made a profile
(``installs``)."""
