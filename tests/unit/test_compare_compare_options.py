"""compare's options: acp_spawn's for every attempt and its own, checked once, each problem
naming its option; what compare sets itself refused; the faces derived from the model."""

from __future__ import annotations

import pytest

from acp_bridge._compare.compare_options import (
    NOT_FOR_COMPARE,
    OWN,
    CompareOptions,
    attempt_options,
    check_compare_options,
    pick_of,
)
from acp_bridge._entries.options import offered
from acp_bridge.errors import ConfigError


def test_defaults_and_the_attempts_share() -> None:
    checked = check_compare_options({"mode": "plan", "timeout": 30, "cwd": "/r", "n": 2})
    assert (checked["n"], checked["apply"], checked["keep"], checked["verify"]) == (
        2, False, False, None,
    )  # fmt: skip
    assert attempt_options(checked) == {"mode": "plan", "timeout": 30, "unstable": False}
    assert pick_of(checked) == "fastest"
    assert pick_of(check_compare_options({"verify": "make test"})) == "verified"
    assert pick_of(check_compare_options({"verify": "x", "pick": "smallest"})) == "smallest"


@pytest.mark.parametrize(
    ("options", "field", "says"),
    [
        ({"n": 0}, "n", "greater than or equal to 1"),
        ({"n": 33}, "n", "less than or equal to 32"),
        ({"pick": "luckiest"}, "pick", "'verified'"),
        ({"pick": "verified"}, "pick", "verified needs a verifier"),
        ({"dry_run": True}, "dry_run", "only with apply"),
        ({"verify": ""}, "verify", "at least 1 character"),
        ({"max_tokens": 0}, "max_tokens", "greater than or equal to 1"),
        ({"max_cost": -1}, "max_cost", "greater than 0"),
        ({"isolation": "none"}, "isolation", "compare sets it for every attempt"),
        ({"resume": "s1"}, "resume", "compare sets it for every attempt"),
        ({"timeout": -1}, "timeout", "greater than 0"),
    ],
)
def test_each_problem_names_its_option(options: dict[str, object], field: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_compare_options(options)
    (problem,) = caught.value.problems
    assert problem.field == field and says in problem.message


def test_a_name_that_is_no_option_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="colour"):
        check_compare_options({"colour": "red"})


def test_the_faces_offer_compares_own_and_acp_spawns_but_what_it_sets() -> None:
    for face in ("cli", "mcp"):
        names = {o.name for o in offered(CompareOptions, face, NOT_FOR_COMPARE)}
        assert set(OWN) <= names and {"mode", "model", "timeout", "cwd"} <= names
        assert not names & set(NOT_FOR_COMPARE)
