"""Every OS error on the policy path is a refusal, recorded (issue 37, class 5).

One table test: each service the bridge serves an agent — ``fs/read_text_file``,
``fs/write_text_file`` and ``terminal/create`` over ACP, the same three as the bridge's MCP
tools — given a path that makes the operating system fail for real (a component it may not
search, a symlink loop, a name too long, a file where a folder is needed, a folder where a
file is asked for; for reads, an I/O error), under a policy that judges the path
(``workspace-write``) and one that lets the services meet the error (``approve-all``). Each
call is answered with a clean error (a JSON-RPC error, or an MCP error result) that names the
errno in words — never a traceback, a Python repr or a raw ``[Errno 13]`` — and recorded: in
``meta.refusals``, and for an MCP tool in ``meta.permissions`` too.

``EACCES`` needs a reader the folder's mode binds: as root the cases run in a child process
without ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH`` (``setpriv``), as another user in
this one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_bridge._acp.services.client import ClientServices
from acp_bridge._acp.services.mcp_tools import ServicesMcp
from acp_bridge._acp.turn.prompt_turn import TurnSignals
from acp_bridge._os.fs.roots import Roots
from acp_bridge.config import AgentProfile
from acp_bridge.events import EventSink

SERVICES = ["acp read", "acp write", "acp terminal", "mcp read", "mcp write", "mcp run"]
MODES = ["workspace-write", "approve-all"]
CWD_SERVICES = ("acp terminal", "mcp run")
"""The services whose path is a working directory."""
ERRNOS = ["EACCES", "ELOOP", "ENAMETOOLONG", "ENOTDIR", "EISDIR"]
WORDS = {
    "EACCES": ("EACCES",),
    "ELOOP": ("ELOOP", "too many levels of symbolic links", "is a symbolic link"),
    "ENAMETOOLONG": ("ENAMETOOLONG",),
    "ENOTDIR": ("ENOTDIR",),
    "EISDIR": ("EISDIR", "is a directory"),
    "EIO": ("EIO",),
}
"""What the agent is told, in the errno's name or the refusal's words (a write refuses a
symbolic link as its last component before the OS sees it)."""
_RAW = ("[Errno", "Traceback", "PosixPath(", "OSError(", "PermissionError(")


def provoke(work: Path, errno_name: str, service: str) -> str:
    """A path under ``work`` on which ``service`` meets ``errno_name`` for real."""
    if errno_name == "EACCES":
        locked = work / "locked"
        (locked / "inner").mkdir(parents=True, exist_ok=True)
        (locked / "inner" / "f.txt").write_text("secret")
        locked.chmod(0)
        return str(locked / "inner" / ("f.txt" if service not in CWD_SERVICES else ""))
    if errno_name == "ELOOP":
        loop = work / "loop"
        if not loop.is_symlink():
            loop.symlink_to(loop)
        return str(loop / "f.txt") if service in CWD_SERVICES else str(loop)
    if errno_name == "EIO":  # the process's own memory, read from its start: unmapped
        return str(work / "mem")
    if errno_name == "ENAMETOOLONG":
        return str(work / ("n" * 300))
    if errno_name == "ENOTDIR":
        (work / "file.txt").write_text("a file")
        return str(work / "file.txt" / "inner")
    (work / "folder").mkdir(exist_ok=True)  # EISDIR: a folder where a file is asked for
    return str(work / "folder") if service not in CWD_SERVICES else str(work / "file.txt")


async def call(work: Path, service: str, mode: str, errno_name: str) -> dict[str, Any]:
    """The agent's call, answered: what it was told and what the run recorded."""
    path = provoke(work, errno_name, service)
    if errno_name == "EISDIR" and service in CWD_SERVICES:
        (work / "file.txt").write_text("a file")  # a file where a folder is needed: ENOTDIR
    rules = [{"kind": "execute", "decision": "allow"}]
    profile = AgentProfile(name="t", command="x", permissions={"mode": mode, "rules": rules})
    async with anyio.create_task_group() as tg:
        services = ClientServices(
            profile,
            roots=Roots.for_session(work),
            cwd=work,
            env={},
            tg=tg,
            sink=EventSink(None),
            signals=TurnSignals(),
        )
        with anyio.fail_after(20):
            told = await (mcp_call if service.startswith("mcp") else acp_call)(
                services, service, path
            )
        await services.aclose()
    return {
        "told": told,
        "refusals": [r.model_dump() for r in services.refusals],
        "permissions": [r.model_dump() for r in services.ledger.records],
        "notes": services.summary_notes(),
    }


async def acp_call(services: ClientServices, service: str, path: str) -> str:
    method, params = {
        "acp read": ("fs/read_text_file", {"path": path}),
        "acp write": ("fs/write_text_file", {"path": path, "content": "x"}),
        "acp terminal": ("terminal/create", {"command": "true", "cwd": path}),
    }[service]
    message = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"sessionId": "s", **params}}
    reply = await services.router().answer(message)
    assert reply is not None and reply.get("id") == 7
    assert "error" in reply, reply
    error = reply["error"]
    assert error["code"] in (-32602, -32603, -32002), error
    return f"{error['message']} {json.dumps(error.get('data'))}"


async def mcp_call(services: ClientServices, service: str, path: str) -> str:
    from mcp import Client

    tool, args = {
        "mcp read": ("read_text_file", {"path": path}),
        "mcp write": ("write_text_file", {"path": path, "content": "x"}),
        "mcp run": ("run_command", {"command": "true", "cwd": path}),
    }[service]
    async with Client(ServicesMcp(services, "s").app()) as client:
        result = await client.call_tool(tool, args)
    assert result.is_error, result
    return " ".join(getattr(part, "text", "") for part in result.content)


def check(outcome: dict[str, Any], service: str, mode: str, errno_name: str) -> None:
    told = outcome["told"]
    assert not any(raw in told for raw in _RAW), told
    expected = WORDS[errno_name]
    if errno_name == "EISDIR" and service in CWD_SERVICES:  # a file as a cwd
        expected = WORDS["ENOTDIR"]
    if errno_name == "ENOTDIR" and service not in CWD_SERVICES:  # a file's child: not found
        expected = (*expected, "ENOENT")
    assert any(name in told for name in expected), told
    refusals = outcome["refusals"]
    assert len(refusals) == 1, outcome
    assert not any(raw in refusals[0]["reason"] for raw in _RAW), refusals
    assert outcome["notes"], outcome  # the summary says a request was refused or failed
    if service.startswith("mcp"):
        (decision,) = outcome["permissions"]
        assert decision["tool_call_id"] == "mcp-1"


def run_cases(work: Path, cases: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    out = []
    for number, (service, mode, errno_name) in enumerate(cases):
        folder = work / str(number)
        folder.mkdir()
        out.append(anyio.run(call, folder, service, mode, errno_name))
    return out


EIO = "--eio"
"""The argument that asks this file, run as a program, for the EIO cases."""
CASES = [(s, m, e) for s in SERVICES for m in MODES for e in ERRNOS if e != "EACCES"]


@pytest.mark.parametrize(("service", "mode", "errno_name"), CASES)
def test_an_os_error_is_a_clean_answer_and_a_record(
    tmp_path: Path, service: str, mode: str, errno_name: str
) -> None:
    (outcome,) = run_cases(tmp_path, [(service, mode, errno_name)])
    check(outcome, service, mode, errno_name)


def test_a_path_the_user_may_not_search_is_a_clean_answer_and_a_record(tmp_path: Path) -> None:
    """EACCES, for every service and mode, as a reader the folder's mode binds."""
    cases = [(s, m, "EACCES") for s in SERVICES for m in MODES]
    work = tmp_path / "work"
    work.mkdir()
    if os.geteuid() == 0:  # root reads through a mode of 0: drop what lets it
        drop = "-dac_override,-dac_read_search"
        argv = ["setpriv", f"--bounding-set={drop}", sys.executable, __file__, str(work)]
        done = subprocess.run(
            argv, input=json.dumps(cases), capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        outcomes = json.loads(done.stdout)
    else:
        outcomes = run_cases(work, cases)
    for (service, mode, errno_name), outcome in zip(cases, outcomes, strict=True):
        check(outcome, service, mode, errno_name)
    for locked in work.glob("*/locked"):
        locked.chmod(0o700)  # so that pytest can remove it


if __name__ == "__main__":  # EACCES without root's DAC override; EIO in a dumpable process
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    given = [tuple(case) for case in json.loads(sys.stdin.read())]
    if sys.argv[1] == EIO:
        own = Path(f"/proc/{os.getpid()}")
        print(json.dumps([anyio.run(call, own, *case) for case in given]))
    else:
        print(json.dumps(run_cases(Path(sys.argv[1]), given)))  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("service", ["acp read", "mcp read"])
def test_an_io_error_is_a_clean_answer_and_a_record(service: str, mode: str) -> None:
    """EIO: the roots are a process's ``/proc`` folder and the file its ``mem``. In a fresh
    interpreter: one that started a run's processes is undumpable, and then its ``mem`` is
    root's (EACCES for any other user)."""
    argv = [sys.executable, __file__, EIO]
    done = subprocess.run(
        argv, input=json.dumps([[service, mode, "EIO"]]), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (outcome,) = json.loads(done.stdout)
    check(outcome, service, mode, "EIO")
    assert outcome["notes"][-1] == "1 file/terminal request failed"  # failed, not refused
