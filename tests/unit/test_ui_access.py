"""Who reaches the viewer (access.py): the token once in the URL then as a cookie, the MCP
face's Host/Origin rules, the form token, and the security headers on every answer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from acp_bridge._mcp.transport.listen import rebinding_rules
from acp_bridge._ui.access import CSP, Access, cookie_name, form_token, form_token_ok

TOKEN = "t0ken-of-this-start"
PORT = 8765
LOOPBACK = f"http://127.0.0.1:{PORT}"


def _echo(request: Request) -> PlainTextResponse:
    return PlainTextResponse(f"page {request.url.path} {request.url.query}")


def client(host: str = "127.0.0.1", base: str = LOOPBACK) -> TestClient:
    app: Any = Access(Starlette(routes=[Route("/{p:path}", _echo)]), TOKEN, PORT,
                      rebinding_rules(host))  # fmt: skip
    return TestClient(app, base_url=base, follow_redirects=False)


@pytest.fixture
def loopback() -> Iterator[TestClient]:
    with client() as c:
        yield c


def test_the_token_in_the_url_becomes_a_cookie_and_leaves_the_url(loopback: TestClient) -> None:
    answer = loopback.get("/runs/x?status=done&token=" + TOKEN)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/runs/x?status=done"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(PORT)}={TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    page = loopback.get("/runs/x?status=done")  # the client keeps the cookie
    assert page.status_code == 200 and page.text == "page /runs/x status=done"


def test_a_scheme_relative_path_is_not_where_the_token_sends_the_browser(
    loopback: TestClient,
) -> None:
    answer = loopback.get(f"{LOOPBACK}//elsewhere.example/?token={TOKEN}")
    assert answer.headers["location"] == "/elsewhere.example/"


@pytest.mark.parametrize(
    "how",
    [
        {},
        {"params": {"token": "wrong"}},
        {"cookies": {cookie_name(PORT): "wrong"}},
        {"cookies": {cookie_name(PORT + 1): TOKEN}},  # another start's port
    ],
)
def test_without_this_starts_token_nothing_is_served(how: dict[str, Any]) -> None:
    with client() as c:
        for name, value in how.get("cookies", {}).items():
            c.cookies.set(name, value)
        answer = c.get("/", params=how.get("params"))
    assert answer.status_code == 401
    assert answer.headers["content-security-policy"] == CSP


def test_the_bearer_header_works_as_for_the_mcp_face(loopback: TestClient) -> None:
    answer = loopback.get("/", headers={"authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200


def test_foreign_host_and_origin_are_refused_on_loopback(loopback: TestClient) -> None:
    loopback.cookies.set(cookie_name(PORT), TOKEN)
    assert loopback.get("/", headers={"host": "evil.example"}).status_code == 421
    assert loopback.get("/", headers={"origin": "http://evil.example"}).status_code == 403
    assert loopback.get("/", headers={"origin": f"http://localhost:{PORT}"}).status_code == 200


def test_beyond_loopback_any_host_name_but_still_the_token() -> None:
    with client("0.0.0.0", "http://viewer.example:8765") as c:
        assert c.get("/").status_code == 401
        assert c.get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_every_answer_forbids_inline_script_framing_sniffing_and_referrers(
    loopback: TestClient,
) -> None:
    loopback.cookies.set(cookie_name(PORT), TOKEN)
    headers = loopback.get("/").headers
    assert "'unsafe-inline'" not in headers["content-security-policy"]
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"
    assert headers["x-frame-options"] == "DENY"


def test_the_form_token_is_derived_from_the_token_and_checked() -> None:
    value = form_token(TOKEN)
    assert TOKEN not in value and form_token_ok(TOKEN, value)
    assert not form_token_ok(TOKEN, "") and not form_token_ok("other", value)
