"""compare on the demo agent in a real git repository: two profiles whose answers differ by a
directive (one's system prompt writes expected.txt), the verifier judging them, --n, --apply
and its refusals, a verifier that hangs, the budget, failures, and no worktree left behind."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from acp_bridge import DirtyWorkingTree, compare
from acp_bridge._os.fs.locations import state_dir
from acp_bridge.config import LoadedConfig
from tests.conftest import AgentHarness
from tests.helpers import git, new_repo, run_bounded

DEMO = {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]}
WRITES = "write expected.txt: written by the writer\nwrite README.md: changed by the writer"
TASK = "Reply with exactly DONE"
VERIFY = "test -f expected.txt"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return new_repo(tmp_path / "repo")


@pytest.fixture
def config(harness: AgentHarness) -> LoadedConfig:
    return harness.config(
        {
            "plain": DEMO,
            "writer": {**DEMO, "session": {"system_prompt": WRITES}},
            "hasty": {**DEMO, "session": {"system_prompt": WRITES}, "terminal": {"timeout": 1}},
            "missing": {"command": "no-such-agent-command"},
        }
    )


def leftovers(repo: Path) -> tuple[list[str], list[str]]:
    """The attempts' worktrees left in the bridge's state (with their records), and the
    branches each holds; the caller's repository never holds one."""
    listed = git(repo, "worktree", "list", "--porcelain").splitlines()
    assert [line for line in listed if line.startswith("worktree ")][1:] == []
    assert git(repo, "for-each-ref", "refs/heads/acp-bridge/") == ""
    folder = f"{repo.name}-{hashlib.sha256(str(repo.resolve()).encode()).hexdigest()[:8]}"
    worktrees = sorted((state_dir() / "worktrees" / folder).glob("*"))
    records = sorted(p.name for p in (state_dir() / "worktree-records" / folder).glob("*"))
    assert records == [p.name for p in worktrees]
    branches = [git(p, "branch", "--show-current").strip() for p in worktrees]
    return [str(p) for p in worktrees], branches


def run_cli(
    harness: AgentHarness, repo: Path, *args: str, limit: float = 90
) -> subprocess.CompletedProcess[str]:
    config = harness.root / "acp-bridge.yaml"
    command = [sys.executable, "-m", "acp_bridge", "--config", str(config), "compare", *args]
    return subprocess.run(
        command, cwd=repo, capture_output=True, text=True, timeout=limit, env=os.environ.copy()
    )


def test_the_attempt_that_made_the_file_wins(config: LoadedConfig, repo: Path) -> None:
    result = run_bounded(
        compare, ["plain", "writer"], TASK, verify=VERIFY, cwd=repo, config=config, limit=90
    )
    plain, writer = result.attempts
    assert (plain.agent, writer.agent) == ("plain", "writer")
    assert plain.status == writer.status == "done"
    assert plain.verifier is not None and writer.verifier is not None
    assert (plain.verifier.passed, plain.verifier.exit_code) == (False, 1)
    assert (writer.verifier.passed, writer.verifier.exit_code) == (True, 0)
    assert result.winner == writer.task_id
    assert result.reason == (
        f"the only attempt that passed the verifier ({writer.wall_ms / 1000:.1f} s)"  # type: ignore[operator]
    )
    assert (plain.files, plain.added, plain.removed) == (0, 0, 0)
    assert (writer.files, writer.added, writer.removed) == (2, 2, 1)
    assert writer.envelope.meta.sandbox  # the attempt ran in its sandbox, like any run
    assert result.base == git(repo, "rev-parse", "HEAD").strip()
    assert leftovers(repo) == ([], [])
    assert git(repo, "status", "--porcelain") == ""  # nothing applied unless asked


def test_n_attempts_of_one_agent_with_a_table_json_and_junit(
    harness: AgentHarness, config: LoadedConfig, repo: Path
) -> None:
    junit = harness.root / "compare.xml"
    done = run_cli(
        harness, repo, "writer", TASK, "--n", "3", "--verify", VERIFY, "--json", "--junit",
        str(junit),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    attempts = document["attempts"]
    assert [(a["agent"], a["attempt"]) for a in attempts] == [("writer", n) for n in (1, 2, 3)]
    assert len({a["task_id"] for a in attempts}) == 3
    assert all(a["verifier"]["passed"] and a["envelope"]["status"] == "done" for a in attempts)
    fastest = min(attempts, key=lambda a: (a["wall_ms"], a["attempt"]))
    assert document["winner"] == fastest["task_id"]
    assert document["reason"].startswith("fastest of the 3 attempt(s) that passed the verifier")
    header, *rows = done.stderr.splitlines()[3:7]
    assert header.split() == ["AGENT", "#", "STATUS", "VERIFIER", "WALL", "TOKENS", "COST",
                              "FILES", "+/-"]  # fmt: skip
    assert all(row.split()[-2:] == ["+2", "-1"] for row in rows)  # expected.txt, README.md
    assert f"winner: writer#{fastest['attempt']} ({fastest['task_id']})" in done.stderr
    cases = ET.parse(junit).getroot().findall("testsuite/testcase")
    assert [case.get("name") for case in cases] == ["writer#1", "writer#2", "writer#3"]
    assert all(case.find("failure") is None and case.find("error") is None for case in cases)
    assert leftovers(repo) == ([], [])


def test_apply_applies_exactly_the_winners_diff(
    harness: AgentHarness, config: LoadedConfig, repo: Path
) -> None:
    done = run_cli(harness, repo, "plain,writer", TASK, "--verify", VERIFY, "--apply", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    winner = next(a for a in document["attempts"] if a["task_id"] == document["winner"])
    assert winner["agent"] == "writer"
    assert document["apply"] == {
        "dry_run": False, "applied": True, "files": ["README.md", "expected.txt"], "patch": "",
        "error": "",
    }  # fmt: skip
    git(repo, "add", "-A")
    applied = git(repo, "diff", "--cached", "--no-renames")
    assert applied == Path(winner["diff"]).read_text()
    assert (repo / "expected.txt").read_text() == "written by the writer\n"
    assert leftovers(repo) == ([], [])


def test_a_dirty_tree_refuses_apply_before_anything_runs(
    harness: AgentHarness, config: LoadedConfig, repo: Path
) -> None:
    (repo / "README.md").write_text("edited by hand\n")
    (repo / "scratch.txt").write_text("mine\n")
    began = time.monotonic()
    refused = run_cli(harness, repo, "plain,writer", TASK, "--verify", VERIFY, "--apply")
    assert refused.returncode == 2
    assert "is not clean (README.md, scratch.txt)" in refused.stderr
    assert "README.md" in refused.stderr and "scratch.txt" in refused.stderr
    assert "[1/2]" not in refused.stderr  # no attempt ran
    assert time.monotonic() - began < 30
    with pytest.raises(DirtyWorkingTree, match=r"README\.md, scratch\.txt"):
        run_bounded(compare, "writer", TASK, cwd=repo, config=config, apply=True)
    # A dry run changes nothing: it shows the patch, whatever the tree.
    shown = run_cli(harness, repo, "writer", TASK, "--apply", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert "+++ b/expected.txt" in shown.stdout and "+written by the writer" in shown.stdout
    assert (repo / "README.md").read_text() == "edited by hand\n"
    assert not (repo / "expected.txt").exists()
    assert leftovers(repo) == ([], [])


def test_a_verifier_that_hangs_is_ended_by_the_terminal_timeout(
    config: LoadedConfig, repo: Path
) -> None:
    began = time.monotonic()
    result = run_bounded(
        compare, "hasty", TASK, verify="sleep 60", cwd=repo, config=config, limit=60
    )
    (attempt,) = result.attempts
    assert attempt.verifier is not None
    assert attempt.verifier.timed_out and not attempt.verifier.passed
    assert attempt.verifier.shown == "timed out"
    assert 1000 <= attempt.verifier.duration_ms < 20_000
    assert time.monotonic() - began < 40
    assert result.winner is None
    assert result.reason == "no attempt ended done and passed the verifier"
    assert leftovers(repo) == ([], [])


def test_the_verifier_runs_in_the_agents_sandbox_on_a_worktree(
    config: LoadedConfig, repo: Path
) -> None:
    outside = repo / "written-by-the-verifier"
    command = f"pwd; cat expected.txt; echo x > {outside} 2>/dev/null; echo $ACP_BRIDGE_DEPTH"
    result = run_bounded(compare, "writer", TASK, verify=command, cwd=repo, config=config)
    (attempt,) = result.attempts
    verifier = attempt.verifier
    assert verifier is not None and verifier.passed
    where, content, *rest = verifier.output.splitlines()
    assert where != str(repo) and where.endswith(f"{attempt.task_id}-verify")
    assert content == "written by the writer"  # the attempt's diff, applied
    assert rest[-1] == "1"  # the agent's level, like the agent's own terminals
    assert verifier.sandbox is not None and attempt.envelope.meta.sandbox is not None
    assert verifier.sandbox["mode"] == attempt.envelope.meta.sandbox["mode"] != "off"
    assert not outside.exists()  # the caller's working tree is not the verifier's to change
    assert leftovers(repo) == ([], [])


def test_keep_leaves_each_attempts_worktree_and_branch(config: LoadedConfig, repo: Path) -> None:
    result = run_bounded(
        compare, "plain,writer", TASK, n=2, cwd=repo, config=config, keep=True, limit=90
    )
    worktrees, branches = leftovers(repo)
    assert sorted(branches) == sorted(f"acp-bridge/{a.task_id}" for a in result.attempts)
    assert worktrees == sorted(str(a.worktree) for a in result.attempts)
    writer = next(a for a in result.attempts if a.agent == "writer")
    assert (Path(str(writer.worktree)) / "expected.txt").is_file()
    status = git(Path(str(writer.worktree)), "status", "--porcelain").splitlines()
    assert sorted(status) == [" M README.md", "?? expected.txt"]  # a repository to work in
    assert result.reason.startswith("fastest of the 4 attempt(s) that ended done")


def test_failures_leave_no_worktree_and_cannot_win(config: LoadedConfig, repo: Path) -> None:
    result = run_bounded(
        compare, "missing,writer", TASK, verify=VERIFY, cwd=repo, config=config, limit=90
    )
    missing, writer = result.attempts
    assert missing.status == "failed" and missing.envelope.meta.error_code == "config_error"
    assert missing.verifier is None  # a run that failed is not verified
    assert result.winner == writer.task_id
    assert leftovers(repo) == ([], [])


def test_the_budget_covers_all_attempts(config: LoadedConfig, repo: Path) -> None:
    result = run_bounded(
        compare, "plain,writer", TASK, cwd=repo, config=config, max_tokens=1, limit=90
    )
    codes = [a.envelope.meta.error_code for a in result.attempts]
    assert codes == ["budget", "budget"]
    assert result.winner is None
    assert result.budget is not None and result.budget.max_tokens == 1
    # "Reply with exactly DONE" reports 4 words + 1 = 5 tokens. Only the first attempt to end
    # is sure to count them: the one still running then is cancelled (the budget is spent),
    # and under load that can come before its own answer (shared_budget.py).
    assert result.budget.tokens >= 5
    assert "group 'comparison' budget exceeded" in result.budget.exceeded
    assert leftovers(repo) == ([], [])


def begun(repo: Path) -> int:
    """How many attempts have their worktree made: one being made (its folder there, its
    .git or record not yet) is not counted."""
    try:
        return len(leftovers(repo)[1])
    except (subprocess.CalledProcessError, AssertionError):
        return 0


def test_an_interrupt_cancels_the_attempts_and_leaves_nothing(
    harness: AgentHarness, config: LoadedConfig, repo: Path
) -> None:
    config_file = harness.root / "acp-bridge.yaml"
    command = [sys.executable, "-m", "acp_bridge", "--config", str(config_file), "compare",
               "plain,writer", "sleep 30", "--json"]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 30
    while begun(repo) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    document: dict[str, Any] = json.loads(out)
    assert document["interrupted"] and document["winner"] is None
    assert [a["envelope"]["meta"]["error_code"] for a in document["attempts"]] == [
        "cancelled", "cancelled",
    ]  # fmt: skip
    assert leftovers(repo) == ([], [])


def test_refusals_name_what_is_wrong(config: LoadedConfig, repo: Path, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="not inside a git work tree"):
        run_bounded(compare, "plain", TASK, cwd=tmp_path, config=config)
    with pytest.raises(Exception, match="isolation: compare sets it for every attempt"):
        run_bounded(compare, "plain", TASK, cwd=repo, config=config, isolation="none")
    with pytest.raises(Exception, match="pick: verified needs a verifier"):
        run_bounded(compare, "plain", TASK, cwd=repo, config=config, pick="verified")
    with pytest.raises(Exception, match="plain named twice"):
        run_bounded(compare, "plain,plain", TASK, cwd=repo, config=config)
    with pytest.raises(Exception, match="nobody"):
        run_bounded(compare, "nobody", TASK, cwd=repo, config=config)
    with pytest.raises(TypeError, match="colour"):
        run_bounded(compare, "plain", TASK, cwd=repo, config=config, colour="red")
