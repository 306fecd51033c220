"""``python -m acp_bridge``: the same as the ``acp-bridge`` command."""

from acp_bridge.cli import main

raise SystemExit(main())
