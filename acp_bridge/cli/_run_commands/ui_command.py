"""``acp-bridge ui``: the web viewer over the run store (``acp_bridge/_ui``).

The ASGI stack is imported only here, when the command runs. The URL, with this start's
token in it, goes to stderr (stdout stays empty); ``--open`` hands it to the browser.
"""

from __future__ import annotations

import argparse

from acp_bridge.cli._printing import EXIT_OK, err


def cmd_ui(args: argparse.Namespace) -> int:
    from acp_bridge._mcp.transport.listen import Listen

    listen = Listen(args.host, args.port)

    def listening(url: str) -> None:
        where = "loopback only" if listen.loopback else f"reachable beyond loopback at {args.host}"
        err(f"acp-bridge ui: open {url} ({where}; the token is this start's)")
        if args.open:
            import webbrowser

            webbrowser.open(url)

    from acp_bridge._ui.viewer_server import serve

    serve(listen, listening)
    return EXIT_OK
