"""How the doctor reads versions and judges auth from what a probe saw. The probes themselves,
with real agents in their sandbox, are tests/process/test_doctor.py."""

from __future__ import annotations

import pytest

from acp_bridge._agents.doctor import Check, Report, _auth_check, parse_version
from acp_bridge._agents.readiness_probe import ProbeResult
from acp_bridge.config import AgentProfile


def profile(**fields: object) -> AgentProfile:
    return AgentProfile.model_validate({"name": "p", "command": "agent", **fields})


def opened(**fields: object) -> ProbeResult:
    """A probe whose session opened."""
    return ProbeResult(True, "agent answered initialize", started=True, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "version"),
    [("0.61.0", (0, 61, 0)), ("codex-acp 0.16.0\n", (0, 16, 0)), ("v2.1", (2, 1)), ("none", None)],
)
def test_versions_are_read_from_what_commands_print(
    text: str, version: tuple[int, ...] | None
) -> None:
    assert parse_version(text) == version


def test_the_agents_own_auth_status_decides() -> None:
    keyed = profile(auth={"env": ["KEY"]}, env_passthrough=["KEY", "TOKEN"])
    not_logged_in = {"kind": "none", "label": "Not logged in"}
    refused = _auth_check(keyed, opened(auth_status=not_logged_in))
    assert not refused.ok and refused.fix == "export KEY=…"
    # A variable the agent takes but does not count as a login (claude's AUTH_TOKEN): a
    # warning, not "not ready".
    with_key = _auth_check(keyed, opened(auth_status=not_logged_in, env_names=frozenset({"KEY"})))
    assert with_key.ok and with_key.warning and "KEY is set" in with_key.detail
    api_key = {"kind": "api_key", "label": "API key", "detail": "KEY"}
    assert _auth_check(keyed, opened(auth_status=api_key)) == Check(
        "auth", True, "the agent reports: API key (KEY)"
    )


def test_no_word_from_the_agent_about_auth_is_a_warning_at_most() -> None:
    keyed = profile(auth={"env": ["KEY", "OTHER"]})
    unset = _auth_check(keyed, opened())
    assert unset.ok and unset.warning
    passed = "and list KEY under env_passthrough in the profile"  # else it never reaches the agent
    assert unset.fix == f"export KEY=… (or one of KEY, OTHER) {passed}"
    assert not _auth_check(keyed, opened(env_names=frozenset({"OTHER"}))).warning
    assert not _auth_check(profile(), opened()).warning  # a profile that needs no key


def test_the_first_problem_is_what_a_skip_says() -> None:
    report = Report("p", [Check("command", True, "x"), Check("auth", False, "no key", "export K")])
    assert not report.ready and report.problem is not None and report.problem.name == "auth"
