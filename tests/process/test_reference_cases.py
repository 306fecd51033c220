"""The four reference prompts, offline: the passthrough model's directives make exactly the
tool calls each prompt asks for, through a real host loop, real subtasks and real bash.

The cases are the smoke suites examples/smoke/reference.yaml (verbatim prompts, for a real
model) and reference-offline.yaml (their directive versions); the suites' own expectations
are checked too, with the smoke suite's checker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_bridge._entries.local_loop.ask import ask
from acp_bridge._loop.passthrough import parse_prompt
from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.smoke._expect import check, workspace_failures
from acp_bridge.smoke._suite import load_suite
from tests.helpers import run_bounded

EXAMPLES = Path(__file__).parents[2] / "examples"
VERBATIM = load_suite(EXAMPLES / "smoke" / "reference.yaml").cases
OFFLINE = load_suite(EXAMPLES / "smoke" / "reference-offline.yaml").cases

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
    assert [case.task for case in VERBATIM] == REFERENCE_PROMPTS
    assert [c.name for c in VERBATIM] == [c.name for c in OFFLINE]
    assert [c.expect for c in VERBATIM] == [c.expect for c in OFFLINE]


@pytest.mark.parametrize("index", range(4), ids=[c.name for c in OFFLINE])
def test_reference_case_offline(index: int, config: LoadedConfig, tmp_path: Path) -> None:
    case, (tool, args, command) = OFFLINE[index], EXPECTED_CALLS[index]
    assert case.task is not None and case.model == "passthrough"
    # The directive makes exactly the call the prompt asks for.
    (directive,), _ = parse_prompt(case.task)
    assert directive.tool == tool and args.items() <= directive.args.items()
    if tool == "spawn":
        (inner,), _ = parse_prompt(directive.args["task"])
        assert inner.tool == "bash" and inner.args == {"command": command}
    else:
        assert directive.args["command"] == command

    result = run_bounded(ask, case.task, model="passthrough", config=config, cwd=tmp_path)

    assert result.status == "done", result.error
    assert result.meta.entry == "ask" and result.meta.depth == 0
    files = workspace_failures(case.expect.files, tmp_path)
    failures = check(result, case.expect, file_failures=files, suite_dir=EXAMPLES, duration=0)
    assert failures == []
    (call,) = result.meta.tool_calls or []
    assert call.title.startswith(f"{tool}:") and call.status == "completed"
    (subtask,) = result.meta.subtasks or []
    assert subtask["meta"]["depth"] == 1
    if tool == "spawn":
        assert subtask["meta"]["tools"] == ["bash"]
        (bash_call,) = subtask["meta"]["tool_calls"]
        assert bash_call["title"] == f"bash: {command}"
    else:
        assert subtask["output"]["exit_code"] == 0
