"""A hostile agent under bubblewrap and under forced Landlock (issue 11, "Done when"):
nothing outside the write roots changes, the secrets and the bridge's environment stay
unreadable, and no process of the run survives it — whether it exits, is stopped, or
its bridge dies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import anyio
import pytest

from acp_bridge._os.process.procgroup import Launched
from acp_bridge._os.sandbox import RunSandbox
from acp_bridge._os.sandbox.bwrap import signal_command
from tests.sandbox.conftest import SECRET_ENV, Scene, marked, survivors

MODES = ["bwrap", "landlock"]
EXPECTED_STARTED = 102  # 100 forked children + a setsid double fork + an `env -i` daemon
BoxFor = Callable[..., RunSandbox]


# A stand-in for the bridge: a process whose environment (from its start: /proc shows the
# initial environment, not later putenv calls) holds a host secret, and which runs the
# sandboxed command it is sent. `wait` false: it starts the command and sleeps.
BRIDGE = """
import json, subprocess, sys, time
launch = json.loads(sys.stdin.readline())
if not launch["wait"]:
    subprocess.Popen(launch["argv"], env=launch["env"], cwd=launch["cwd"],
                     start_new_session=True, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    time.sleep(600)
# stdout reaches EOF only once every process holding it (the daemons too) is gone: a
# sandbox that leaves one behind makes this time out instead of passing.
done = subprocess.run(launch["argv"], env=launch["env"], cwd=launch["cwd"],
                      start_new_session=True, capture_output=True, timeout=20)
sys.stdout.buffer.write(done.stdout)
sys.stderr.buffer.write(done.stderr)
sys.exit(done.returncode)
"""


def bridge(scene: Scene) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-I", "-c", BRIDGE],
        env={**os.environ, SECRET_ENV: scene.token},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def send(process: subprocess.Popen[bytes], launch: Launched, *, wait: bool) -> None:
    message = {"argv": launch.argv, "env": launch.env, "cwd": str(launch.cwd), "wait": wait}
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def run(box: RunSandbox, scene: Scene) -> dict:
    process = bridge(scene)
    send(process, box.wrap(scene.argv(), scene.env(), parent=process.pid), wait=True)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err.decode()
    return json.loads(out.splitlines()[-1])


@pytest.mark.parametrize("mode", MODES)
def test_hostile_agent_is_confined_and_leaves_nothing(
    scene: Scene, box_for: BoxFor, mode: str
) -> None:
    before = scene.outside_state()
    report = run(box_for(mode), scene)

    for path, outcome in {**report["writes"], **report["deletes"]}.items():
        # Under bwrap, /tmp is the run's private one: a write there "succeeds" and lands in
        # that private directory (the host-state check below proves it).
        private = mode == "bwrap" and path.startswith("/tmp/") and ".ssh" not in path
        assert outcome.startswith("denied") or private, (path, outcome)
    lists, reads = report["lists"], report["reads"]
    assert lists[str(scene.outside)].startswith("denied")
    assert lists[str(scene.home / ".ssh")] in ("ok:0", "denied:13")  # empty (bwrap) or EACCES
    assert lists[str(scene.system.parent)].startswith("ok")  # the system is visible
    for secret in (".ssh/id_ed25519", ".config/gh/hosts.yml", ".netrc"):
        outcome = reads[str(scene.home / secret)]
        assert outcome.startswith("denied") or outcome == "ok:''", (secret, outcome)
    assert reads[str(scene.outside / "existing.txt")].startswith("denied")
    assert reads[str(scene.home / ".bashrc")] == "ok:'visible\\n'"

    assert report["inside"] == "ok:8"
    assert report["tmpdir"] == "ok:8"
    assert scene.token not in report["ppid_environ"]  # the shim / bwrap's init: constructed env
    if mode == "bwrap":  # the bridge is outside the PID namespace: no /proc entry at all
        assert report["environ_leaks"] == []
    # Landlock: /proc/<bridge>/environ stays readable to a same-user agent (Landlock's
    # ptrace restriction stops attach and /proc/<pid>/mem, not environ; measured on 6.18).
    # Documented in landlock.py and docs: no environment check for that mode.
    assert report["started"] == EXPECTED_STARTED

    assert survivors(scene.marker, wait=1.0) == []
    assert scene.outside_state() == before
    assert (scene.ws / "inside.txt").read_text() == "hostile\n"


async def _start_and_stop(box: RunSandbox, scene: Scene, stop: Callable[[int], None]) -> tuple:
    launch = box.wrap(scene.argv(stay=True), scene.env())
    async with await anyio.open_process(
        launch.argv, env=launch.env, cwd=launch.cwd, start_new_session=True, stderr=None
    ) as process:
        assert process.stdout is not None
        with anyio.fail_after(15):
            line = b""
            while not line.endswith(b"\n"):
                line += await process.stdout.receive(1)
        report = json.loads(line)
        alive = len(marked(scene.marker))
        stop(process.pid)
        with anyio.fail_after(10):
            rest = b"".join([chunk async for chunk in process.stdout])
            code = await process.wait()
    return report, alive, rest, code


@pytest.mark.parametrize("mode", MODES)
def test_stopping_the_run_ends_every_process(scene: Scene, box_for: BoxFor, mode: str) -> None:
    """SIGTERM to the process group, as the bridge's shutdown does."""
    report, alive, rest, code = anyio.run(
        _start_and_stop, box_for(mode), scene, lambda pid: os.killpg(pid, signal.SIGTERM)
    )
    assert report["started"] == EXPECTED_STARTED
    assert alive >= EXPECTED_STARTED  # they were all there, seen from the host
    if mode == "landlock":  # the shim lets the command handle SIGTERM
        assert (rest, code) == (b"TERM\n", 0)
    assert survivors(scene.marker) == []


@pytest.mark.sandbox_mode("bwrap")
def test_bwrap_graceful_stop_reaches_the_command(scene: Scene, box_for: BoxFor) -> None:
    """signal_command: SIGTERM to the command inside, not to bwrap (which would die of it
    and take the namespace down before the command could react)."""

    def stop(pid: int) -> None:
        assert signal_command(pid, signal.SIGTERM)

    _, _, rest, code = anyio.run(_start_and_stop, box_for("bwrap"), scene, stop)
    assert (rest, code) == (b"TERM\n", 0)
    assert survivors(scene.marker) == []


@pytest.mark.parametrize("mode", MODES)
def test_the_run_dies_with_its_bridge(scene: Scene, box_for: BoxFor, mode: str) -> None:
    process = bridge(scene)
    try:
        send(
            process,
            box_for(mode).wrap(scene.argv(stay=True), scene.env(), parent=process.pid),
            wait=False,
        )
        deadline = time.monotonic() + 15
        while len(marked(scene.marker)) < EXPECTED_STARTED and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(marked(scene.marker)) >= EXPECTED_STARTED
    finally:
        process.kill()
        process.communicate(timeout=5)
    assert survivors(scene.marker) == []


def test_control_without_a_sandbox_the_same_agent_escapes(scene: Scene, box_for: BoxFor) -> None:
    """The harness can see a failure: with ``mode: off`` the writes land, the secrets are
    read and the daemons outlive the run (the fixture kills them)."""
    process = bridge(scene)
    send(process, box_for("off").wrap(scene.argv(stay=True), scene.env()), wait=False)
    assert process.stdout is not None
    written = scene.ws / "report.json"
    try:
        deadline = time.monotonic() + 15
        while not written.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        report = json.loads(written.read_text())
    finally:
        process.kill()
        process.communicate(timeout=5)
    assert report["writes"][str(scene.system / "new.txt")] == "ok:8"
    assert report["reads"][str(scene.home / ".netrc")].startswith("ok:'machine")
    assert report["environ_leaks"]  # root reads the test process's environment
    assert len(survivors(scene.marker, wait=0.2)) >= 2  # the daemons, at least
