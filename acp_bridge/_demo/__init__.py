"""The bundled demo ACP agent: offline, deterministic, standard library only (``python -m
acp_bridge._demo.agent``)."""
