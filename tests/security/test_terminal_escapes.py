"""Escape attempts through the ``terminal/*`` methods: a cwd outside the roots, secrets in
the environment, processes that try to outlive their terminal."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import anyio
import pytest

from acp_bridge._acp.services import terminals as terminals_module
from acp_bridge._acp.services.terminals import TerminalService
from acp_bridge._acp.wire.schema import INVALID_PARAMS, RESOURCE_NOT_FOUND
from acp_bridge._os.process.environment import DEPTH_ENV, constructed_env
from acp_bridge._os.process.marked_processes import marked_processes
from acp_bridge._os.process.procgroup import MARKER_ENV
from acp_bridge.events import Event, EventSink
from tests.helpers import RpcFailure, alive

from .conftest import World, call, refused, run_command, terminals

pytestmark = pytest.mark.anyio


def until_written(pidfile: Path) -> str:
    """Shell that makes a command wait until its background child wrote its pid: when the
    terminal has exited, the pid is there."""
    return f"\nwhile [ ! -s {pidfile} ]; do sleep 0.01; done"


async def start_daemon(service: TerminalService, pidfile: Path, setsid: str = "setsid") -> str:
    """Run a command that leaves a ``sleep`` behind in a new session; the terminal's id.
    The daemon's pid is then in ``pidfile``."""
    result = await run_command(
        service,
        f"{setsid} sh -c 'echo $$ > {pidfile}; exec sleep 300' </dev/null >/dev/null 2>&1 &"
        + until_written(pidfile),
    )
    return str(result["terminalId"])


# --- where a command runs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "why"),
    [
        ("{outside}", "outside the read roots"),  # absolute, outside
        ("{ws}/..", "outside the read roots"),  # .. out of the root
        ("{ws}/sub/../../outside", "outside the read roots"),
        ("{ws}/dir_out", "outside the read roots"),  # a directory symlink out
        ("/proc/self/root{outside}", "outside the read roots"),
        ("{ws}/proc_root", "outside the read roots"),
        ("sub", "must be absolute"),
    ],
)
async def test_cwd_outside_the_roots_is_refused(world: World, spelling: str, why: str) -> None:
    cwd = spelling.format(ws=world.ws, outside=world.outside)
    async with terminals(world) as service:
        failure = await refused(service.create, why, command=f"touch {world.outside}/ran", cwd=cwd)
        assert failure.message.startswith("terminal cwd refused")
    assert not (world.outside / "ran").exists()  # nothing was started


async def test_cwd_inside_is_resolved(world: World) -> None:
    async with terminals(world) as service:
        default = await run_command(service, "pwd")
        assert default["output"] == f"{world.ws}\n"
        through_link = await run_command(service, "pwd", cwd=f"{world.ws}/sub_in")
        assert through_link["output"] == f"{world.ws}/sub\n"
        in_ref = await run_command(service, "pwd", cwd=str(world.ref))
        assert in_ref["output"] == f"{world.ref}\n"
        with pytest.raises(RpcFailure, match="not an existing directory"):
            await call(service.create, command="pwd", cwd=f"{world.ws}/notes.txt")


# --- what a command sees ---------------------------------------------------------------------


async def test_host_secret_does_not_reach_a_terminal(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACP_TEST_HOST_SECRET", "hunter2")
    monkeypatch.setenv("LD_PRELOAD", "/tmp/evil.so")
    env = constructed_env(depth=1, extra={"PROFILE_VAR": "given"}, passthrough=["HOME"])
    async with terminals(world, env=env) as service:
        result = await run_command(
            service, 'echo "[$ACP_TEST_HOST_SECRET][$LD_PRELOAD][$PROFILE_VAR]"; env'
        )
    first, *env_lines = result["output"].splitlines()
    assert first == "[][][given]"
    assert "hunter2" not in result["output"]
    names = {line.split("=", 1)[0] for line in env_lines if "=" in line}
    allowed = {"PATH", "HOME", "LANG", "TERM", "USER", "SHELL", "TMPDIR", "PWD", "SHLVL", "_"}
    unexpected = {n for n in names - allowed if not n.startswith("LC_")}
    assert unexpected == {"PROFILE_VAR", DEPTH_ENV, MARKER_ENV}


async def test_request_env_cannot_lower_the_depth_or_hide_the_marker(world: World) -> None:
    async with terminals(world) as service:
        result = await run_command(
            service,
            f'echo "${DEPTH_ENV} ${MARKER_ENV} $EXTRA"',
            env=[
                {"name": DEPTH_ENV, "value": "0"},
                {"name": MARKER_ENV, "value": "nope"},
                {"name": "EXTRA", "value": "ok"},
            ],
        )
    depth, marker, extra = result["output"].split()
    assert depth == "1" and marker != "nope" and extra == "ok"


async def test_malformed_env_names_are_invalid_params(world: World) -> None:
    async with terminals(world) as service:
        for name in ("A=B", ""):
            with pytest.raises(RpcFailure) as caught:
                await call(service.create, command="true", env=[{"name": name, "value": "x"}])
            assert caught.value.code == INVALID_PARAMS


# --- processes that try to outlive their terminal ---------------------------------------------


async def test_background_child_dies_on_release(world: World) -> None:
    async with terminals(world) as service:
        # The child keeps stdout open: the terminal still counts as exited (leader gone).
        result = await run_command(service, "sleep 300 & echo $!")
        child = int(result["output"])
        assert alive(child) and result["status"] == {"exitCode": 0, "signal": None}
        await call(service.release, terminalId=result["terminalId"])
        assert not alive(child)


async def test_setsid_child_dies_on_release(world: World) -> None:
    """``setsid`` leaves the process group, so killpg misses it; its environment still
    carries the terminal's marker, which is how release finds it."""
    pidfile = world.ws / "daemon.pid"
    async with terminals(world) as service:
        terminal_id = await start_daemon(service, pidfile)
        daemon = int(pidfile.read_text())
        assert alive(daemon) and os.getpgid(daemon) == daemon  # its own group and session
        await call(service.release, terminalId=terminal_id)
        assert not alive(daemon)


async def test_double_forked_daemon_dies_on_release(world: World) -> None:
    pidfile = world.ws / "daemon.pid"
    daemonize = (
        "import os, sys, time\n"
        "if os.fork(): sys.exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): sys.exit(0)\n"
        "os.closerange(0, 3)\n"
        f"open({str(pidfile)!r}, 'w').write(f'{{os.getpid()}}\\n')\n"
        "time.sleep(300)\n"
    )
    async with terminals(world) as service:
        result = await run_command(
            service, f"{sys.executable} -c {shlex.quote(daemonize)}" + until_written(pidfile)
        )
        daemon = int(pidfile.read_text())
        assert alive(daemon)
        await call(service.release, terminalId=result["terminalId"])
        assert not alive(daemon)


async def test_session_end_releases_everything(world: World) -> None:
    pidfile = world.ws / "daemon.pid"
    async with terminals(world) as service:
        await call(service.create, command="sleep 300")
        await start_daemon(service, pidfile)
        daemon = int(pidfile.read_text())
        running = [t.group.pid for t in service._terminals.values()]
    # The context manager ended the session: release_all ran.
    assert not alive(daemon)
    assert not any(alive(pid) for pid in running)


async def test_env_scrubbing_setsid_child_is_not_contained(world: World) -> None:
    """The documented limit (docs/explanation/security.md): a child that leaves the group
    *and* drops its environment cannot be told apart from any other process of the user."""
    pidfile = world.ws / "daemon.pid"
    async with terminals(world) as service:
        terminal_id = await start_daemon(service, pidfile, setsid="setsid env -i")
        daemon = int(pidfile.read_text())
        try:
            await call(service.release, terminalId=terminal_id)
            assert alive(daemon)
        finally:
            os.kill(daemon, 9)


async def test_kill_escalates_to_sigkill(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(terminals_module, "KILL_GRACE", 0.3)
    ready = anyio.Event()

    def on_event(event: Event) -> None:
        if event.kind == "terminal_output" and "ready" in event.data["text"]:
            ready.set()

    async with terminals(world, sink=EventSink(on_event, "long_shell")) as service:
        created = await call(
            service.create, command="trap '' TERM; echo ready; while :; do sleep 0.1; done"
        )
        ref = {"terminalId": created["terminalId"]}
        with anyio.fail_after(10):
            await ready.wait()  # the trap is set
            await call(service.kill, **ref)
            status = await call(service.wait_for_exit, **ref)
        assert status == {"exitCode": None, "signal": "SIGKILL"}
        output = await call(service.output, **ref)  # still readable after the kill
        assert output["output"] == "ready\n" and output["exitStatus"] == status


async def test_per_command_timeout(world: World) -> None:
    async with terminals(world, timeout=0.3) as service:
        result = await run_command(service, "sleep 30")
        assert result["status"] == {"exitCode": None, "signal": "SIGTERM"}
        assert service.records[0].signal == "SIGTERM"


async def test_terminal_caps(world: World) -> None:
    async with terminals(world, max_concurrent=2, max_open=3) as service:
        first = await call(service.create, command="sleep 30")
        await call(service.create, command="sleep 30")
        await refused(service.create, "already running", command="sleep 30")
        await call(service.kill, **first)
        done = await call(service.create, command="true")
        await call(service.wait_for_exit, **done)
        await refused(service.create, "are open, not released", command="true")
        await call(service.release, **first)
        await call(service.create, command="true")


async def test_concurrent_creates_respect_the_cap(world: World) -> None:
    async with terminals(world, max_concurrent=3) as service:
        outcomes = []

        async def create() -> None:
            try:
                outcomes.append(await call(service.create, command="sleep 30", cwd=str(world.ws)))
            except RpcFailure as failure:
                outcomes.append(failure)

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(create)
        assert sum(isinstance(o, dict) for o in outcomes) == 3


async def test_output_readable_until_release_then_gone(world: World) -> None:
    async with terminals(world) as service:
        result = await run_command(service, "echo out; echo err >&2; exit 3")
        assert result["output"] == "out\nerr\n"
        assert result["status"] == {"exitCode": 3, "signal": None}
        ref = {"terminalId": result["terminalId"]}
        assert (await call(service.output, **ref))["exitStatus"]["exitCode"] == 3
        await call(service.release, **ref)
        for method in (service.output, service.wait_for_exit, service.kill, service.release):
            with pytest.raises(RpcFailure) as caught:
                await call(method, **ref)
            assert caught.value.code == RESOURCE_NOT_FOUND


async def test_commands_run_as_shell_lines_or_argv(world: World) -> None:
    async with terminals(world) as service:
        assert (await run_command(service, "echo hi | tr a-z A-Z"))["output"] == "HI\n"
        argv = await run_command(service, "printf", args=["%s|", "a b", "$HOME"])
        assert argv["output"] == "a b|$HOME|"
        signalled = await run_command(service, "kill -TERM $$")
        assert signalled["status"] == {"exitCode": None, "signal": "SIGTERM"}
        with pytest.raises(RpcFailure, match="cannot start"):
            await call(service.create, command="/nonexistent/binary")


async def test_marker_scan_sees_only_our_processes(world: World) -> None:
    async with terminals(world) as service:
        created = await call(service.create, command="sleep 30")
        terminal = service._terminals[created["terminalId"]]
        found = marked_processes(MARKER_ENV, terminal.marker)  # sh and its sleep
        assert terminal.group.pid in found
        assert {os.getpgid(pid) for pid in found} == {terminal.group.pid}
        assert marked_processes(MARKER_ENV, "no-such-marker") == []
