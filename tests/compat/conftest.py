"""The matrix's parameters (every built-in profile, as root and as the unprivileged account) and
fixtures. Each row's tests run on one xdist worker (``--dist loadgroup``), one after the
other: its installs happen once, and its state folders are not shared by parallel runs."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_bridge._version import __version__
from acp_bridge.config import load_config
from tests.compat.accounts import (
    ACCOUNTS,
    Account,
    install,
    missing,
    root_account,
    user_account,
    with_bridge,
)
from tests.compat.agents import AGENTS, Agent
from tests.compat.matrix import Bridge, Cell, append_result, results_path
from tests.fake_models import FakeModels

_accounts: dict[str, Account] = {}
_installed: dict[tuple[str, str], str] = {}  # (account, agent) → why it is not installed ("")
_described: set[str] = set()  # agents whose row setup is in the results already


def pytest_sessionstart(session: pytest.Session) -> None:
    """A fresh results file for a run of the matrix (by the xdist controller, or the only
    process)."""
    if hasattr(session.config, "workerinput"):
        return
    if "compat" in (session.config.option.markexpr or ""):
        path = results_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "agent" in metafunc.fixturenames:
        metafunc.parametrize("agent", list(AGENTS.values()), ids=list(AGENTS))
    if "account" in metafunc.fixturenames:
        metafunc.parametrize("account", ACCOUNTS, indirect=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A conftest's collection hook sees the whole session's items, not only this folder's.
    here = Path(__file__).parent
    for item in items:
        callspec = getattr(item, "callspec", None)
        if item.path.is_relative_to(here) and callspec is not None and "agent" in callspec.params:
            row = f"{callspec.params['agent'].profile}-{callspec.params['account']}"
            item.add_marker(pytest.mark.xdist_group(row))


@pytest.fixture
def account(request: pytest.FixtureRequest) -> Account:
    key = request.param
    if key not in _accounts:
        _accounts[key] = with_bridge(root_account() if key == "root" else user_account())
    return _accounts[key]


def version_of(agent: Agent) -> str:
    """The version of the row: the profile's pinned package, or the bridge's (the demo)."""
    profile = load_config(None, search=False, environ=dict(os.environ)).profiles.get(agent.profile)
    package = profile.profile.package
    return package.version if package is not None else __version__  # bundled with the bridge


@pytest.fixture
def installed(agent: Agent, account: Account) -> str:
    """The agent installed for the account by ``acp-bridge agents install``; its version."""
    version = version_of(agent)
    profile = load_config(None, search=False, environ=dict(os.environ)).profiles.get(agent.profile)
    if profile.profile.package is None:
        return version
    key = (account.key, agent.profile)
    if key not in _installed:
        done = install(account, agent.profile)
        append_result(
            {
                "kind": "install",
                "agent": agent.profile,
                "account": account.key,
                "seconds": round(done.seconds, 1),
                "fresh": done.fresh,
                "ok": done.ok,
            }
        )
        _installed[key] = "" if done.ok else done.output.strip()[-1500:]
    if _installed[key]:
        missing(
            f"acp-bridge agents install {agent.profile} failed as {account.name}: {_installed[key]}"
        )
    return version


@pytest.fixture
def models() -> Iterator[FakeModels]:
    with FakeModels() as server:
        yield server


@pytest.fixture
def bridge(
    agent: Agent,
    account: Account,
    installed: str,
    models: FakeModels,
    request: pytest.FixtureRequest,
) -> Iterator[Bridge]:
    """A run folder in the account's home, the agent's row configured in it; removed after
    a passing test, kept (and named) after a failing one."""
    name = request.node.name.replace("[", "-").replace("]", "").replace("/", "_")
    folder = account.cache / "runs" / f"{name}-{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    # The folders above the run's alone: a parallel test's workspace is under them too, and
    # a chown there (same owner, a new ctime) would show in that run's files changed.
    account.own(account.cache, inside=False)
    account.own(folder.parent, inside=False)
    runner = Bridge(account, agent, folder, models)
    runner.prepare()
    if agent.profile not in _described:
        _described.add(agent.profile)
        endpoint = runner.endpoint
        append_result(
            {
                "kind": "agent",
                "agent": agent.profile,
                "api": agent.api,
                "env": sorted(agent.env(endpoint)),
                "host_env": sorted(agent.host_env(endpoint)),
                "files": sorted(agent.files(endpoint)),
                "rules": agent.terminal_rules,
            }
        )
    yield runner
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.passed:
        shutil.rmtree(folder, ignore_errors=True)
    elif report is not None and report.failed:
        print(f"run folder kept: {folder}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]


@pytest.fixture
def cell(bridge: Bridge, installed: str, request: pytest.FixtureRequest) -> Iterator[Cell]:
    """The scenario named by the test (``test_<scenario>``), recorded when it ends."""
    scenario = request.node.originalname.removeprefix("test_").replace("_", "-")
    yield Cell(bridge, scenario, installed)


@pytest.fixture(autouse=True)
def _bounded_results_dir() -> None:
    Path(results_path()).parent.mkdir(parents=True, exist_ok=True)
