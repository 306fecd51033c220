"""The run layer's options are declared once (:class:`~acp_bridge.RunOptions`): the command
line's flags and the MCP ``start`` tool's arguments are made from that declaration."""

from __future__ import annotations

import pytest

from acp_bridge._entries.options import offered
from acp_bridge._mcp.arguments import StartArgs
from acp_bridge._runs.run_options import RunOptions
from acp_bridge.cli._parser import build_parser
from acp_bridge.errors import ConfigError


def _flags(command: str) -> set[str]:
    parser = build_parser(command=command)
    sub = next(a for a in parser._actions if a.dest == "command")
    return {flag for action in sub.choices[command]._actions for flag in action.option_strings}


def test_every_run_layer_flag_comes_from_the_options_model() -> None:
    declared = {option.offer.cli for option in offered(RunOptions, "cli")}
    assert declared == {
        "--group", "--max-tokens", "--max-cost", "--group-max-tokens", "--group-max-cost",
        "--session",
    }  # fmt: skip
    assert declared | {"--detach"} <= _flags("run")
    # A named session is an ACP agent's: bash and spawn take the rest.
    assert (declared - {"--session"}) | {"--detach"} <= _flags("bash")
    assert "--session" not in _flags("bash") and "--session" not in _flags("spawn")
    # A follow-up takes its session and group from the run it follows: its budget only.
    assert {"--max-tokens", "--max-cost", "--detach"} <= _flags("send")
    assert not {"--group", "--session", "--group-max-tokens"} & _flags("send")


def test_start_takes_every_run_layer_option_the_model_offers_mcp() -> None:
    names = {option.name for option in offered(RunOptions, "mcp")}
    assert names <= set(StartArgs.model_fields)
    args = StartArgs.model_validate(
        {"entry": "acp_spawn", "agent": "demo", "task": "hi", "group": "g", "max_tokens": 9}
    )
    assert args.run_options() == RunOptions(group="g", max_tokens=9)
    request = args.request()  # none of them is an entry option
    assert request.agent == "demo" and not {"group", "max_tokens"} & set(request.options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_tokens": 0}, "max_tokens must be a whole number from 1"),
        ({"max_cost": float("nan")}, "max_cost must be a number above 0"),
        ({"group_max_tokens": 5}, "a group budget needs a group name"),
        ({"session": "bad name!"}, "session must be 1-64 letters"),
    ],
)
def test_run_options_are_checked_as_they_are_made(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RunOptions(**options)  # type: ignore[arg-type]


def test_run_options_are_frozen_records() -> None:
    options = RunOptions(group="g")
    assert options.replaced(max_cost=1.5) == RunOptions(group="g", max_cost=1.5)
    with pytest.raises(AttributeError):
        options.group = "other"  # type: ignore[misc]
