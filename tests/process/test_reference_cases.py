"""The four reference prompts, offline: the passthrough model's directives make exactly the
tool calls each prompt asks for, through a real host loop, real subtasks and real bash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from acp_bridge.ask import ask
from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.passthrough import parse_prompt
from tests.helpers import run_bounded

EXAMPLES = Path(__file__).parents[2] / "examples"
CASES = YAML(typ="safe").load((EXAMPLES / "ask-cases.yaml").read_text())["cases"]

# Verbatim from the issue: the examples must not drift from them.
REFERENCE_PROMPTS = [
    "You must call the spawn tool. Do not answer directly. Allow the inner agent to use only "
    "bash. Have it run `printf 'alpha\\nbeta\\ngamma\\n' | sed -n '2p'`. Return only the second "
    "line.",
    "You must call the spawn tool and set output_schema to `subagent.demo.echo.v1`. Allow the "
    'inner agent to use only bash. Have it run `echo \'{"ok":true,"value":42}\'`. Return '
    "structured JSON only, with no explanation.",
    "Call the bash tool and set `run_in_subtask` to true. Run `printf 'one\\ntwo\\nthree\\n' | "
    "tail -n 1`. Do not explain anything. Return only the last line.",
    "Call the bash tool and set `run_in_subtask` to true. Run `sleep 1; echo "
    "SUBAGENT_BASH_OK`. Reply with stdout only.",
]

# What each prompt asks the host to call, and what the inner agent must run.
EXPECTED_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("spawn", {"tools": ["bash"]}, "printf 'alpha\\nbeta\\ngamma\\n' | sed -n '2p'"),
    (
        "spawn",
        {"tools": ["bash"], "output_schema": "subagent.demo.echo.v1"},
        'echo \'{"ok":true,"value":42}\'',
    ),
    ("bash", {"run_in_subtask": True}, "printf 'one\\ntwo\\nthree\\n' | tail -n 1"),
    ("bash", {"run_in_subtask": True}, "sleep 1; echo SUBAGENT_BASH_OK"),
]


@pytest.fixture(scope="module")
def config() -> LoadedConfig:
    return load_config(EXAMPLES / "acp-bridge.yaml", environ={})


def test_the_examples_hold_the_reference_prompts_verbatim() -> None:
    assert [case["prompt"] for case in CASES] == REFERENCE_PROMPTS


@pytest.mark.parametrize("index", range(4), ids=[c["name"] for c in CASES])
def test_reference_case_offline(index: int, config: LoadedConfig, tmp_path: Path) -> None:
    case, (tool, args, command) = CASES[index], EXPECTED_CALLS[index]
    # The directive makes exactly the call the prompt asks for.
    (directive,), _ = parse_prompt(case["passthrough"])
    assert directive.tool == tool and args.items() <= directive.args.items()
    if tool == "spawn":
        (inner,), _ = parse_prompt(directive.args["task"])
        assert inner.tool == "bash" and inner.args == {"command": command}
    else:
        assert directive.args["command"] == command

    result = run_bounded(ask, case["passthrough"], model="passthrough", config=config, cwd=tmp_path)

    assert result.status == "done", result.error
    assert result.meta.entry == "ask" and result.meta.depth == 0
    expect = case["expect"]
    if "answer" in expect:
        assert result.output == expect["answer"]
    else:
        assert json.loads(result.output) == expect["json"]
    (call,) = result.meta.tool_calls or []
    assert call.title.startswith(f"{tool}:") and call.status == "completed"
    (subtask,) = result.meta.subtasks or []
    for key, value in expect["subtask"].items():
        assert (subtask["meta"] if key == "entry" else subtask)[key] == value
    assert subtask["meta"]["depth"] == 1
    if tool == "spawn":
        assert subtask["meta"]["tools"] == ["bash"]
        (bash_call,) = subtask["meta"]["tool_calls"]
        assert bash_call["title"] == f"bash: {command}"
    else:
        assert subtask["output"]["exit_code"] == 0
