"""Run the reference `ask` cases (ask-cases.yaml) and report pass or fail per case.

    python examples/run_ask_cases.py --model openai      # a real model from the config
    python examples/run_ask_cases.py --passthrough       # offline: the directive versions

Uses examples/acp-bridge.yaml unless --config says otherwise. Exits 0 when every case passes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from acp_bridge import load_config
from acp_bridge.ask import ask_sync

HERE = Path(__file__).parent


def check(case: dict[str, Any], result: Any) -> list[str]:
    """What is wrong with ``result`` for ``case`` (empty: it passed)."""
    expect = case["expect"]
    problems = []
    if result.status != "done":
        return [f"ask failed: {result.error}"]
    answer = str(result.output).strip()
    if "answer" in expect and answer != expect["answer"]:
        problems.append(f"answer {answer!r}, expected {expect['answer']!r}")
    if "json" in expect:
        try:
            if json.loads(answer) != expect["json"]:
                problems.append(f"JSON answer {answer}, expected {json.dumps(expect['json'])}")
        except json.JSONDecodeError:
            problems.append(f"answer is not JSON: {answer!r}")
    wanted = expect.get("subtask", {})
    subtasks = result.meta.subtasks or []
    if wanted and not any(_matches(s, wanted) for s in subtasks):
        problems.append(f"no subtask envelope with {wanted} (got {len(subtasks)} subtasks)")
    return problems


def _matches(envelope: dict[str, Any], wanted: dict[str, Any]) -> bool:
    meta = envelope.get("meta", {})
    return all((meta if key == "entry" else envelope).get(key) == v for key, v in wanted.items())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=HERE / "acp-bridge.yaml")
    parser.add_argument("--cases", type=Path, default=HERE / "ask-cases.yaml")
    parser.add_argument("--model", help="model name from the config (default: its default)")
    parser.add_argument("--passthrough", action="store_true", help="run the directive versions")
    args = parser.parse_args()
    config = load_config(args.config)
    cases = YAML(typ="safe").load(args.cases.read_text())["cases"]
    failed = 0
    for case in cases:
        prompt = case["passthrough"] if args.passthrough else case["prompt"]
        model = "passthrough" if args.passthrough else args.model
        result = ask_sync(prompt, model=model, config=config, timeout=300)
        problems = check(case, result)
        failed += bool(problems)
        print(f"{'PASS' if not problems else 'FAIL'} {case['name']}: {result.output!r}")
        for problem in problems:
            print(f"     {problem}")
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
