"""``acp-bridge ui``: a local web viewer over the run store, live (issue 35).

- :mod:`.access` — who may reach it: the MCP HTTP face's Host/Origin rules and bearer token
  (the token once in the URL, then a cookie), the form token, the security headers;
- :mod:`.pages` — the pages, fragments and live streams, and the one action (stop);
- :mod:`.timeline` — a run's events as timeline items, a diff as lines;
- :mod:`.viewer_server` — the server started (uvicorn on a socket bound first).

The templates (``templates/``, Jinja2 with autoescape) and the page's script and style
(``static/``) sit beside them: no build step. Why it is built this way:
``docs/explanation/viewer.md``.
"""
