"""Sandboxed processes in both modes: exit statuses, network off, the run's shared private
/tmp, and the Landlock shim's own guarantees (scoped signals, grace, older ABIs)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acp_bridge._os.sandbox import RunSandbox, SandboxChoice, SandboxSpec
from acp_bridge._os.sandbox.run_sandbox import MOUNT_POINTS
from acp_bridge._os.sandbox.spec import Mode
from acp_bridge.errors import SpawnError
from tests.sandbox.conftest import choose
from tests.sandbox_modes import offered, probe, require

MODES: list[Mode] = ["bwrap", "landlock"]
PY = sys.executable


def run(box: RunSandbox, argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    launch = box.wrap(argv, {"PATH": os.environ.get("PATH", os.defpath)}, **kw)  # type: ignore[arg-type]
    return subprocess.run(
        launch.argv,
        env=launch.env,
        cwd=launch.cwd,
        capture_output=True,
        text=True,
        timeout=15,
        start_new_session=True,
        check=False,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def boxed(ws: Path, choice: SandboxChoice, **kw: object) -> Iterator[RunSandbox]:
    spec = SandboxSpec(cwd=ws, write=(ws,), home=ws.parent / "home", **kw)  # type: ignore[arg-type]
    with RunSandbox(spec, choice, tmp_parent=ws.parent / "state", grace=0.3) as box:
        yield box


@pytest.fixture(params=MODES)
def box(request: pytest.FixtureRequest, ws: Path) -> Iterator[RunSandbox]:
    require(request.param)
    yield from boxed(ws, choose(request.param))


def test_only_a_launch_that_arms_its_own_parent_death_signal_skips_the_launcher(
    box: RunSandbox,
) -> None:
    # ProcessGroup.start leaves setpriv out for such a launch: bwrap's --die-with-parent
    # must then be on its command line (the SIGKILLed-bridge test in process/ shows it
    # works); the Landlock shim has no such option and keeps the launcher.
    launch = box.wrap([PY, "-c", "pass"], {"PATH": os.defpath})
    assert launch.dies_with_parent == (box.choice.mode == "bwrap")
    assert launch.dies_with_parent == ("--die-with-parent" in launch.argv)


def test_exit_statuses_come_through(box: RunSandbox) -> None:
    assert run(box, ["sh", "-c", "exit 3"]).returncode == 3
    killed = run(box, ["sh", "-c", "kill -9 $$"]).returncode
    # The shim dies of the same signal; bwrap reports it the shell's way.
    assert killed == (-9 if box.choice.mode == "landlock" else 128 + 9)


def test_a_missing_command_is_a_spawn_error_before_anything_starts(box: RunSandbox) -> None:
    with pytest.raises(SpawnError, match="command not found: no-such-agent"):
        box.wrap(["no-such-agent"], {"PATH": "/usr/bin:/bin"})


def test_same_paths_inside_and_writes_land_in_the_write_root(box: RunSandbox, ws: Path) -> None:
    done = run(box, ["sh", "-c", "pwd; echo hi > made.txt"])
    assert done.stdout.strip() == str(ws)
    assert (ws / "made.txt").read_text() == "hi\n"


def test_the_private_tmp_is_shared_by_the_run_and_removed_after(ws: Path) -> None:
    for mode in offered():  # the modes that work here (a run needs one; `auto` takes it)
        with RunSandbox(
            SandboxSpec(cwd=ws, write=(ws,)), choose(mode), tmp_parent=ws.parent / "state"
        ) as box:
            assert run(box, ["sh", "-c", 'echo shared > "$TMPDIR/note"']).returncode == 0
            terminal = run(box, ["sh", "-c", 'cat "$TMPDIR/note"'], cwd=ws)  # a "terminal"
            assert terminal.stdout == "shared\n", (mode, terminal.stderr)
            private = box.private_tmp
            assert private is not None and private.is_dir()
        assert not private.exists()


@pytest.mark.parametrize(
    "shape", ["empty", "mount points", "files", "a link out", "more folders than mount points"]
)
def test_the_private_tmp_goes_whatever_it_holds(ws: Path, shape: str) -> None:
    """Empty, or holding only bubblewrap's mount points: a few rmdirs; with files or a
    link in it: removed the thorough way, and a link is never followed."""
    outside = ws.parent / "outside"
    outside.mkdir()
    (outside / "keep").mkdir()
    box = RunSandbox(SandboxSpec(cwd=ws, write=(ws,)), choose("off"), tmp_parent=ws.parent)

    async def main() -> Path:
        box.private_tmp = ws.parent / "private"  # what __enter__ makes for a sandboxed run
        box.private_tmp.mkdir()
        if shape != "empty":
            (box.private_tmp / "tmp" / "x" / "work").mkdir(parents=True)
            (box.private_tmp / "tmp" / "state").mkdir()
        if shape == "files":
            (box.private_tmp / "tmp" / "x" / "work" / "note").write_text("left")
        if shape == "a link out":
            (box.private_tmp / "tmp" / "out").symlink_to(outside)
        if shape == "more folders than mount points":  # past the quick way's bound
            for number in range(MOUNT_POINTS + 8):
                (box.private_tmp / f"d{number}").mkdir()
        private = box.private_tmp
        await box.__aexit__(None, None, None)
        return private

    private = anyio.run(main)
    assert not private.exists() and not private.is_symlink()
    assert (outside / "keep").is_dir()


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


CONNECT = "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 2)"


@pytest.mark.parametrize("mode", MODES)
def test_network_off_blocks_tcp(ws: Path, listener: int, mode: Mode) -> None:
    for network in (True, False):
        for box in boxed(ws, choose(mode, network), network=network):
            done = run(box, [PY, "-I", "-c", CONNECT, str(listener)])
            assert (done.returncode == 0) is network, (mode, network, done.stderr)


@pytest.mark.sandbox_mode("bwrap")
def test_bwrap_has_a_fresh_proc_with_only_the_run_in_it(ws: Path) -> None:
    for box in boxed(ws, choose("bwrap")):
        done = run(box, ["sh", "-c", "ls /proc | grep -c '^[0-9]'; tr '\\0' ' ' < /proc/1/cmdline"])
        count, init = done.stdout.splitlines()
        assert int(count) <= 4  # bwrap's init, sh, ls/grep/tr
        assert init.split()[0].endswith("bwrap")


def landlock(abi: int, network: bool = True) -> SandboxChoice:
    return SandboxChoice("landlock", f"test ABI {abi}", network, abi=abi)


@pytest.mark.sandbox_mode("landlock")
@pytest.mark.parametrize("abi", [1, 2, 3, 4, 5, 6, 7])
def test_landlock_confines_writes_at_every_abi(ws: Path, abi: int) -> None:
    outside = ws.parent / "outside.txt"
    for box in boxed(ws, landlock(abi)):
        done = run(box, ["sh", "-c", f"echo x > in.txt; echo x > {outside}"])
        assert "Permission denied" in done.stderr
        assert (ws / "in.txt").exists() and not outside.exists()


@pytest.mark.sandbox_mode("landlock")
def test_landlock_command_cannot_signal_its_keeper(ws: Path) -> None:
    abi = probe("landlock").abi
    if abi < 6:
        pytest.skip(f"signal scoping needs Landlock ABI ≥ 6; this kernel has ABI {abi}")
    kill_parent = "import os, signal; os.kill(os.getppid(), signal.SIGKILL)"
    for box in boxed(ws, choose("landlock")):
        done = run(box, [PY, "-I", "-c", kill_parent])
        assert "PermissionError" in done.stderr  # ABI ≥ 6 signal scoping
        assert done.returncode == 1  # the shim survived and passed the exit code on


IGNORE_TERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"


@pytest.mark.sandbox_mode("landlock")
def test_landlock_shim_kills_a_command_that_ignores_sigterm_after_grace(ws: Path) -> None:
    async def scenario(box: RunSandbox) -> tuple[int, float]:
        launch = box.wrap([PY, "-I", "-c", IGNORE_TERM], {"PATH": os.defpath})
        async with await anyio.open_process(
            launch.argv, env=launch.env, cwd=launch.cwd, start_new_session=True
        ) as process:
            await anyio.sleep(0.3)  # let it start and ignore
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)  # to the shim only
            with anyio.fail_after(5):
                code = await process.wait()
        return code, time.monotonic() - started

    for box in boxed(ws, choose("landlock")):
        code, took = anyio.run(scenario, box)
        assert code == -signal.SIGKILL
        assert 0.25 <= took < 2.0  # the 0.3 s grace, then SIGKILL


@pytest.mark.sandbox_mode("landlock")
def test_landlock_split_directories_cannot_be_listed_but_their_entries_read(ws: Path) -> None:
    home = ws.parent / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / "notes.txt").write_text("readable\n")
    for box in boxed(ws, choose("landlock"), read=(home,)):
        done = run(box, ["sh", "-c", f"cat {home}/notes.txt; ls {home}; ls {home}/.ssh"])
        assert done.stdout == "readable\n"
        assert done.stderr.count("Permission denied") == 2


SUBREAPER_RUN = """
import ctypes, json, os, sys
import anyio
assert ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER: as PID 1 is
from acp_bridge import acp_spawn, bash

async def main():
    agent = await acp_spawn("demo", "hi", cwd=sys.argv[1])
    command = await bash("echo hi", cwd=sys.argv[1])
    return [agent.status, command.status, agent.meta.sandbox["mode"]]

statuses = anyio.run(main)  # every sandboxed process ended, and was swept, by now
tasks = f"/proc/{os.getpid()}/task"
children = []
for thread in os.listdir(tasks):
    try:
        children += open(f"{tasks}/{thread}/children").read().split()
    except FileNotFoundError:  # a thread that ended since the listing
        pass
print(json.dumps({"statuses": statuses, "children": children}))
"""


@pytest.mark.sandbox_mode("bwrap")
def test_as_pid_1_or_a_subreaper_the_bridge_reaps_what_bubblewrap_leaves(ws: Path) -> None:
    # bwrap exits before reaping its namespace's init; the init goes to PID 1 or the
    # nearest subreaper. A bridge that is one (a container without --init) must reap it.
    env = {**os.environ, "ACP_BRIDGE_SANDBOX": "bwrap"}  # `auto` here is bubblewrap
    done = subprocess.run(
        [PY, "-c", SUBREAPER_RUN, str(ws)], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["statuses"] == ["done", "done", "bwrap"]
    assert report["children"] == []  # no <defunct> bwrap left behind
