"""Which OS sandbox modes this machine offers, for the tests that need one
(docs/explanation/architecture.md, how the suite is built).

A test that needs a mode says so — ``@pytest.mark.sandbox_mode("bwrap")``, or a parameter
named ``mode`` in tests/sandbox and tests/security — and is skipped, with the reason the
probe gives and its fix, where that mode does not work: the suite passes where the user is
(a machine with only the bundled bubblewrap, or only Landlock). ``auto_mode()`` is what a
run with ``mode: auto`` gets here, ``$ACP_BRIDGE_SANDBOX`` included (CI runs the sandbox
tests once more with ``ACP_BRIDGE_SANDBOX=landlock``).

With ``ACP_BRIDGE_TEST_REQUIRE_SANDBOX=bwrap,landlock`` (CI) a mode that does not work
fails the tests that need it instead of skipping them: CI proves that the bundled bubblewrap
carries the bwrap tests on a machine without a system one. Probes run once per test
process, when first asked (the bwrap probe starts bwrap).
"""

from __future__ import annotations

import functools
import os

import anyio
import pytest

from acp_bridge._os.sandbox.choose import choose_mode
from acp_bridge._os.sandbox.probe import Probe, probe_bwrap, probe_landlock

MODES = ("bwrap", "landlock")
REQUIRE_ENV = "ACP_BRIDGE_TEST_REQUIRE_SANDBOX"


@functools.cache
def probe(mode: str) -> Probe:
    """The verdict on ``mode`` (bwrap: the system's, else the bundled one)."""
    if mode == "bwrap":
        return anyio.run(probe_bwrap)
    return anyio.run(lambda: probe_landlock(run=True))


def missing(mode: str) -> str:
    """Why ``mode`` cannot run here ("" when it can), naming what is missing and the fix."""
    if mode in ("auto", "off"):
        return ""
    found = probe(mode)
    if found.works:
        return ""
    return f"sandbox mode {mode} is not available here: {found.problem} (fix: {found.fix})"


def require(mode: str) -> None:
    """Skip the calling test when ``mode`` does not work on this machine."""
    reason = missing(mode)
    if reason and mode in os.environ.get(REQUIRE_ENV, "").split(","):
        pytest.fail(f"{reason}; {REQUIRE_ENV} requires it")
    if reason:
        pytest.skip(reason)


@functools.cache
def auto_mode() -> str:
    """The mode a run whose profile says ``auto`` gets here."""
    return anyio.run(lambda: choose_mode("auto")).mode


def offered() -> list[str]:
    """The modes that work here, strongest first."""
    return [mode for mode in MODES if not missing(mode)]
