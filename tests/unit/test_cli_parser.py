"""The parser built for one command (cli/_parser.py: the others left unbuilt) parses and
explains that command exactly as the whole parser does."""

from __future__ import annotations

import argparse

import pytest

from acp_bridge.cli import ENTRY_COMMANDS, OPTIONS_COMMANDS
from acp_bridge.cli._parser import build_parser


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


COMMANDS = sorted(_commands(build_parser()))


def test_every_command_is_listed_whichever_is_built() -> None:
    whole = build_parser().format_help()
    for command in COMMANDS:
        assert build_parser(command=command).format_help() == whole
    assert build_parser(command="no-such-command").format_help() == whole


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_built_alone_is_the_command_of_the_whole_parser(command: str) -> None:
    entry = ENTRY_COMMANDS.get(command)
    every = command in OPTIONS_COMMANDS
    alone = _commands(build_parser(entry, every_option=every, command=command))[command]
    whole = _commands(build_parser(entry, every_option=every))[command]
    assert alone.format_help() == whole.format_help()
    assert [a.dest for a in alone._actions] == [a.dest for a in whole._actions]
    assert alone._defaults.keys() == whole._defaults.keys()
    # the others are registered (listed, choices), and no parser is made for them
    for other, parser in _commands(build_parser(command=command)).items():
        if other != command:
            assert not isinstance(parser, argparse.ArgumentParser)


def test_a_wrong_command_is_told_the_same_choices(capsys: pytest.CaptureFixture[str]) -> None:
    said = []
    for parser in (build_parser(), build_parser(command="no-such-command")):
        with pytest.raises(SystemExit):
            parser.parse_args(["no-such-command"])
        said.append(capsys.readouterr().err)
    assert said[0] == said[1]
    assert "invalid choice: 'no-such-command' (choose from 'profiles', 'run'," in said[0]
