"""The state directory is user data, checked through real runs: everything the bridge
keeps there is private whatever the umask (transcripts, diffs, the run store, supervisor
logs, scratch, the sandbox's /tmp, worktree folders); a link planted there is never written
through; a read-only or full state directory, or a HOME that is a file, is a clear error
naming the path — or, where the run can go on without it, a warning — never a traceback."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acp_bridge._os.fs.locations import SQLITE_SUFFIXES
from tests.conftest import MARKER_VAR, AgentHarness

# Seconds each (timeouts waited out, hostile cases): out of the default run, in CI's.
pytestmark = pytest.mark.slow

UMASKS = [0o000, 0o022, 0o277]


class Bridge:
    """The CLI run as a user runs it, with its own state directory."""

    def __init__(self, harness: AgentHarness, state_home: Path) -> None:
        self.harness = harness
        self.state_home = state_home
        self.state = state_home / "acp-bridge"
        harness.config(
            {
                "demo2": {"command": sys.executable, "args": ["-m", "acp_bridge._demo.agent"]},
                "isolated": {
                    "command": sys.executable,
                    "args": ["-m", "acp_bridge._demo.agent"],
                    "isolation": "worktree",
                    "keep_worktree": "always",
                },
            },
            transcripts={"enabled": True},  # in the state directory: no dir of the harness's
        )

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "ACP_BRIDGE_RUNS_DB"}
        # Supervisors carry the marker too: the harness finds them if they are left behind.
        return {
            **env,
            "XDG_STATE_HOME": str(self.state_home),
            MARKER_VAR: self.harness.marker,
            **extra,
        }

    def run(
        self, *args: str, umask: int | None = None, wrap: list[str] | None = None, **env: str
    ) -> tuple[int, str, str]:
        argv = [
            sys.executable,
            "-m",
            "acp_bridge",
            "--config",
            str(self.harness.root / "acp-bridge.yaml"),
            *args,
        ]
        done = subprocess.run(
            [*(wrap or []), *argv],
            capture_output=True,
            text=True,
            env=self.env(**env),
            cwd=self.harness.root,
            timeout=90,
            check=False,
            preexec_fn=None if umask is None else (lambda: os.umask(umask)),
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, done.stdout, done.stderr

    def task(self, *words: str) -> list[str]:
        return [*words, "--cwd", str(self.harness.workspace), "--events", "none"]


@pytest.fixture
def bridge(harness: AgentHarness, tmp_path: Path) -> Bridge:
    return Bridge(harness, tmp_path / "xdg-state")


def _not_private(state: Path) -> list[str]:
    """What under ``state`` is not a 0700 folder or a file for its owner only (0600; git
    makes its objects and their folders read-only, 0400 and 0500). Not looked into: a kept
    worktree's checkout (the project's files, with the modes git and the agent give them)
    and a run's private /tmp (the agent's /tmp: what it and the sandbox make there is
    theirs) — their own folders are checked."""
    wrong = []
    for folder, dirs, files in os.walk(state):
        here = Path(folder)
        parts = here.relative_to(state).parts
        if (parts[:1] == ("worktrees",) and len(parts) >= 3) or (
            parts[:1] == ("tmp",) and len(parts) >= 2
        ):
            dirs[:] = []
            continue
        for name in dirs + files:
            path = here / name
            try:
                info = path.lstat()
            except FileNotFoundError:  # removed at the run's end meanwhile
                continue
            mode = stat.S_IMODE(info.st_mode)
            ours = stat.S_ISDIR(info.st_mode) and "objects" not in path.parts  # not git's
            if mode != 0o700 if ours else mode & 0o077:
                wrong.append(f"{path.relative_to(state)} {oct(mode)}")
    return wrong


@pytest.mark.parametrize("umask", UMASKS, ids=oct)
def test_everything_kept_is_private_whatever_the_umask(bridge: Bridge, umask: int) -> None:
    ws = bridge.harness.workspace
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(
        ["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
         "--allow-empty", "-m", "start"],
        check=True,
    )  # fmt: skip
    code, out, err = bridge.run("run", "demo2", *bridge.task("write x.txt: hello"), umask=umask)
    assert code == 0, err
    envelope = json.loads(out)
    assert envelope["meta"]["transcript"] and envelope["meta"]["diff"], envelope["meta"]
    code, out, err = bridge.run("run", "isolated", *bridge.task("write y.txt: hi"), umask=umask)
    assert code == 0 and json.loads(out)["meta"]["worktree"]["kept"], (out, err)
    code, out, err = bridge.run("run", "--detach", "demo2", "hi", umask=umask)
    run_id = json.loads(out)["task_id"]
    code, out, err = bridge.run("wait", run_id, umask=umask)
    assert code == 0, err

    # While a run is under way: its scratch and its private /tmp.
    process = subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "--config",
         str(bridge.harness.root / "acp-bridge.yaml"), "run", "demo2", *bridge.task("sleep 3")],
        env=bridge.env(), cwd=bridge.harness.root, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, preexec_fn=lambda: os.umask(umask),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not (
            list((bridge.state / "tmp").glob("acp-bridge-tmp-*"))
            and list((bridge.state / "scratch").glob("sub_*"))
        ):
            assert time.monotonic() < deadline and process.poll() is None, "the run never started"
            time.sleep(0.05)  # another process makes them: nothing to wait on but the folder
        wrong_during = _not_private(bridge.state)
    finally:
        process.wait(timeout=30)
    worktrees = [p for p in (bridge.state / "worktrees").glob("*/*") if p.is_dir()]
    assert len(worktrees) == 1 and stat.S_IMODE(worktrees[0].stat().st_mode) == 0o700
    kept = {p.name for p in bridge.state.iterdir()}
    assert {"runs.db", "transcripts", "worktrees", "run-logs"} <= kept, kept
    assert not wrong_during, wrong_during
    assert not _not_private(bridge.state), "after the runs"
    assert not (bridge.state / "runs.db").is_symlink()


def _snapshot(path: Path) -> Any:
    if path.is_dir():
        return sorted((str(p.relative_to(path)), _snapshot(p)) for p in path.iterdir())
    return (stat.S_IMODE(path.stat().st_mode), hashlib.sha256(path.read_bytes()).hexdigest())


# name: (what is planted in the state dir -> a target outside, how the run must end)
PLANTED: dict[str, tuple[str, str]] = {
    "transcripts-folder": ("transcripts", "warning"),  # the run goes on, without a transcript
    "tmp-folder": ("tmp", "warning"),  # the private /tmp goes to the system's temp folder
    "scratch-folder": ("scratch", "warning"),  # changes not measured
    "store-file": ("runs.db", "refused"),
    "store-wal": (f"runs.db{SQLITE_SUFFIXES[0]}", "refused"),
    "store-shm": (f"runs.db{SQLITE_SUFFIXES[1]}", "refused"),
    "store-journal": (f"runs.db{SQLITE_SUFFIXES[2]}", "refused"),
    "logs-folder": ("run-logs", "refused"),
    "worktrees-folder": ("worktrees", "refused"),
    "transcript-file": ("transcripts/sub_planted1.jsonl", "replaced"),
    "diff-file": ("transcripts/sub_planted1.diff", "replaced"),
    "transcript-hardlink": ("transcripts/sub_planted1.jsonl", "replaced-hardlink"),
}


@pytest.mark.parametrize("shape", list(PLANTED))
def test_a_link_planted_in_the_state_dir_is_never_written_through(
    bridge: Bridge, tmp_path: Path, shape: str
) -> None:
    name, outcome = PLANTED[shape]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bashrc").write_text("export PATH=/usr/bin\n")
    target = outside / ("bashrc" if "." in name else "")
    planted = bridge.state / name
    planted.parent.mkdir(parents=True, exist_ok=True)
    before = _snapshot(outside)
    if outcome == "replaced-hardlink":
        os.link(target, planted)
    else:
        planted.symlink_to(target)

    if shape.startswith("worktrees"):
        subprocess.run(["git", "init", "-q", str(bridge.harness.workspace)], check=True)
        subprocess.run(
            ["git", "-C", str(bridge.harness.workspace), "-c", "user.name=t", "-c",
             "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start"], check=True,
        )  # fmt: skip
        code, out, err = bridge.run("run", "isolated", *bridge.task("write y.txt: hi"))
    elif shape.startswith(("logs", "store")):  # a detached run needs them: refused
        code, out, err = bridge.run("run", "--detach", "demo2", "hi")
    elif outcome.startswith("replaced"):  # the file of a run whose id the caller chose
        code, out, err = _python_run(bridge, "sub_planted1", "write x.txt: hello")
    else:
        code, out, err = bridge.run("run", "demo2", *bridge.task("write x.txt: hello"))

    assert _snapshot(outside) == before, "written through the planted link"
    if outcome == "refused":
        assert code == 2, (out, err)
        assert f"{planted} is a symlink" in out + err, (out, err)
    else:
        assert code == 0, (out, err)
        envelope = json.loads(out)
        assert envelope["status"] == "done", envelope
        if outcome == "warning":
            said = json.dumps(envelope["meta"].get("warnings", [])) + json.dumps(
                envelope["meta"].get("sandbox", {})
            )
            assert f"{planted} is a symlink" in said, envelope["meta"]
        else:
            assert not planted.is_symlink() and planted.stat().st_nlink == 1


def _python_run(bridge: Bridge, task_id: str, task: str) -> tuple[int, str, str]:
    """acp_spawn from Python, with a task id of the caller's choosing."""
    script = (
        "import sys, anyio; from acp_bridge import acp_spawn, load_config;"
        "from pathlib import Path;"
        f"r = anyio.run(lambda: acp_spawn('demo2', {task!r}, cwd={str(bridge.harness.workspace)!r},"
        f" task_id={task_id!r}, config=load_config(Path('acp-bridge.yaml'))));"
        "print(r.to_json())"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=bridge.env(),
        cwd=bridge.harness.root, timeout=60, check=False,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def test_a_home_that_is_a_file(bridge: Bridge, tmp_path: Path) -> None:
    home = tmp_path / "home-file"
    home.write_text("")
    env = {"HOME": str(home), "XDG_STATE_HOME": ""}
    code, out, err = bridge.run("run", "--detach", "demo2", "hi", **env)
    assert code == 2 and f"{home}/.local/state/acp-bridge" in err and "HOME" in err, err
    code, out, err = bridge.run("ps", **env)
    assert code == 2 and f"{home}/.local/state/acp-bridge" in err, err
    code, out, err = bridge.run("bash", "--events", "none", "--", "echo", "hi", **env)
    assert code == 0 and json.loads(out)["status"] == "done", err  # it needs none of it


def _namespaced(setup: str) -> list[str]:
    """A command prefix that runs in a private mount namespace after ``setup`` (shell), or
    skips the test where this machine cannot make one."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1) here")
    base = [unshare, "-m", "--propagation", "private"] if os.geteuid() == 0 else [unshare, "-rm"]
    probe = subprocess.run([*base, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a mount namespace here: {probe.stderr.decode().strip()}")
    return [*base, "sh", "-c", f'{setup} && exec "$@"', "sh"]


@pytest.mark.parametrize("kind", ["read-only", "full"])
def test_a_read_only_or_full_state_dir(bridge: Bridge, kind: str) -> None:
    code, _, err = bridge.run("run", "demo2", *bridge.task("hi"))  # the state dir exists
    assert code == 0, err
    state = bridge.state_home
    if kind == "read-only":
        setup = f"mount --bind {state} {state} && mount -o remount,bind,ro {state} {state}"
    else:  # a small file system, full: what exists stays readable, nothing more fits
        setup = (
            f"cp -a {state} {state}.copy && mount -t tmpfs -o size=2m tmpfs {state} && "
            f"cp -a {state}.copy/. {state}/ && (cat /dev/zero > {state}/filler 2>/dev/null; true)"
        )
    wrap = _namespaced(setup)
    code, out, err = bridge.run("run", "demo2", *bridge.task("write x.txt: hello"), wrap=wrap)
    assert code == 0, (out, err)  # the run goes on: what it could not keep is said
    envelope = json.loads(out)
    assert envelope["status"] == "done" and envelope["output"].startswith("wrote"), envelope
    said = json.dumps(envelope["meta"]) + err
    assert "transcript disabled" in said or "transcript stopped" in said, said
    assert "not recorded in the run store" in err and str(bridge.state) in err, err
    code, out, err = bridge.run("run", "--detach", "demo2", "hi", wrap=wrap)
    assert code == 2 and f"the run store {bridge.state / 'runs.db'}" in err, err
