"""Fixtures for the viewer's browser tests: a private run store with real runs of the demo
agent (the run tests' ``runs`` fixture), ``acp-bridge ui`` started on it as a person starts
it, and a headless Chromium from the system's packages driven by Playwright.

Playwright's own browser download is not used: ``$ACP_BRIDGE_TEST_CHROMIUM``, else
``chromium`` (Debian) or ``chromium-browser`` on PATH. Without one the tests fail, naming
what is missing (CI installs it: ``.ci/run``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.runs.conftest import RunsEnv, runs  # noqa: F401  (the fixture, for these tests)

pytestmark = pytest.mark.browser

SCREENSHOTS_VAR = "ACP_BRIDGE_UI_SCREENSHOTS"
"""A folder (docs/images) to write the tests' screenshots into, for the docs; unset: none."""
URL = re.compile(r"open (http://\S+)")


def chromium() -> str:
    found = os.environ.get("ACP_BRIDGE_TEST_CHROMIUM") or next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None
    )
    if not found:
        pytest.fail("no chromium: apt-get install -y chromium (or set $ACP_BRIDGE_TEST_CHROMIUM)")
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        # As root, Chromium refuses to start inside its own sandbox; the pages are ours.
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        launched = playwright.chromium.launch(executable_path=chromium(), headless=True, args=args)
        yield launched
        launched.close()


@dataclass
class Viewer:
    url: str
    """The URL it printed, this start's token in it."""
    process: subprocess.Popen[bytes]

    @property
    def base(self) -> str:
        return self.url.split("/?", 1)[0]


@pytest.fixture
def viewer(runs: RunsEnv) -> Iterator[Viewer]:  # noqa: F811
    process = subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "ui", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline().decode()  # the URL, once the socket is bound
        found = URL.search(line)
        assert found, f"acp-bridge ui printed {line!r}"
        yield Viewer(found.group(1), process)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    yield opened
    context.close()


def screenshot(page: Any, name: str) -> None:
    """Into ``$ACP_BRIDGE_UI_SCREENSHOTS/NAME.png`` when that is set (the docs' images)."""
    folder = os.environ.get(SCREENSHOTS_VAR)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)
