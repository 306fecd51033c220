"""Escape attempts through ``fs/read_text_file`` and ``fs/write_text_file``.

Every attempt must be refused with a clear error (or be contained: land inside the roots),
and the ``world`` fixture checks afterwards that nothing outside the roots changed.
"""

from __future__ import annotations

import os
import stat
import threading
import time

import pytest

from acp_bridge._acp.wire.schema import RESOURCE_NOT_FOUND
from acp_bridge._os.fs import files as files_module
from acp_bridge._os.fs.roots import Roots
from tests.helpers import RpcFailure

from .conftest import SECRET, World, call, refused

pytestmark = pytest.mark.anyio


# --- reads ------------------------------------------------------------------------------------


async def test_read_inside_works(world: World) -> None:
    service = world.files()
    reply = await call(service.read_text_file, path=str(world.ws / "notes.txt"))
    assert reply == {"content": "line 1\nline 2\nline 3\n"}
    reply = await call(service.read_text_file, path=str(world.ref / "reference.txt"))
    assert reply == {"content": "read me\n"}


@pytest.mark.parametrize(
    ("spelling", "why"),
    [
        ("{ws}/../outside/secret.txt", "outside the read roots"),  # .. traversal
        ("{ws}/sub/../../outside/secret.txt", "outside the read roots"),  # deeper ..
        ("{outside}/secret.txt", "outside the read roots"),  # absolute path outside
        ("{ws}/link_out", "outside the read roots"),  # relative symlink pointing out
        ("{ws}/abs_out", "outside the read roots"),  # absolute symlink pointing out
        ("{ws}/dir_out/secret.txt", "outside the read roots"),  # through a dir symlink
        ("/proc/self/root{outside}/secret.txt", "outside the read roots"),  # magic link
        ("{ws}/proc_root{outside}/secret.txt", "outside the read roots"),  # symlink to it
        ("/proc/self/cwd/../../../../../../../..{outside}/secret.txt", "outside"),
        ("{ws}/loop_a", "too many levels of symbolic links"),  # a symlink loop
        ("outside/secret.txt", "must be absolute"),  # relative path
        ("{ws}/notes.txt\0/../../outside/secret.txt", "Invalid params"),  # NUL: the schema
    ],
)
async def test_read_escape_is_refused(world: World, spelling: str, why: str) -> None:
    path = spelling.format(ws=world.ws, outside=world.outside)
    service = world.files()
    failure = await refused(service.read_text_file, why, path=path)
    assert SECRET.strip() not in failure.message


async def test_read_of_a_fifo_is_refused_without_blocking(world: World) -> None:
    # A FIFO with no writer would block an open() for reading forever.
    await refused(world.files().read_text_file, "is a FIFO", path=str(world.ws / "fifo"))


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
async def test_read_of_a_device_node_is_refused(world: World) -> None:
    os.mknod(world.ws / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # like /dev/zero
    await refused(world.files().read_text_file, "character device", path=str(world.ws / "zero"))


async def test_a_path_too_deep_is_refused_not_a_descriptor_per_level(world: World) -> None:
    deep = world.ws / "/".join(["d"] * 300)
    deep.mkdir(parents=True)
    await refused(world.files().read_text_file, "levels deep", path=f"{deep}/x")


async def test_read_of_a_directory_is_refused(world: World) -> None:
    await refused(world.files().read_text_file, "is a directory", path=str(world.ws / "sub"))


async def test_missing_file_is_resource_not_found(world: World) -> None:
    service = world.files()
    for path in (world.ws / "nope.txt", world.ws / "nodir" / "nope.txt"):
        with pytest.raises(RpcFailure) as caught:
            await call(service.read_text_file, path=str(path))
        assert caught.value.code == RESOURCE_NOT_FOUND
        assert "Resource not found" in caught.value.message and "ENOENT" in caught.value.message


async def test_root_replaced_by_a_symlink_is_refused(world: World) -> None:
    service = world.files()  # roots fixed now, as at session start
    moved = world.base / "ws-moved"
    world.ws.rename(moved)
    world.ws.symlink_to(world.outside)
    try:
        await refused(
            service.read_text_file,
            "replaced since the session began",
            path=f"{world.ws}/secret.txt",
        )
        await refused(
            service.write_text_file, "replaced since", path=f"{world.ws}/x.txt", content="x"
        )
    finally:
        world.ws.unlink()
        moved.rename(world.ws)


async def test_a_symlink_that_stays_inside_is_followed(world: World) -> None:
    (world.ws / "sub" / "inner.txt").write_text("inner\n")
    (world.ws / "abs_in").symlink_to(world.ws / "sub" / "inner.txt")
    (world.ws / "to_ref").symlink_to(world.ref)  # into another (read-only) root
    service = world.files()
    for path in ("sub_in/inner.txt", "abs_in", "to_ref/reference.txt"):
        reply = await call(service.read_text_file, path=f"{world.ws}/{path}")
        assert reply["content"] in ("inner\n", "read me\n")


async def test_a_root_that_is_a_symlink_is_resolved_once(world: World) -> None:
    alias = world.ws / "alias-of-ws"
    alias.symlink_to(world.ws)
    roots = Roots.for_session(alias)
    assert roots.write == (world.ws,)
    with roots.resolve(f"{alias}/notes.txt", write=False, follow_last=True) as where:
        assert where.path == world.ws / "notes.txt"


# --- writes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "why"),
    [
        ("{ws}/../outside/new.txt", "outside the write roots"),  # .. traversal
        ("{outside}/new.txt", "outside the write roots"),  # absolute path outside
        ("{ws}/dir_out/new.txt", "outside the write roots"),  # into a directory symlink
        ("{ws}/dir_out/secret.txt", "outside the write roots"),  # over a file out there
        ("/proc/self/root{outside}/new.txt", "outside the write roots"),  # magic link
        ("{ws}/proc_root{outside}/new.txt", "outside the write roots"),
        ("{ws}/link_out", "is a symbolic link"),  # a symlink at the last component
        ("{ws}/abs_out", "is a symbolic link"),
        ("{ws}/hard", "hard links"),  # a hard link to an outside file
        ("{ws}/fifo", "is a FIFO"),
        ("{ref}/reference.txt", "outside the write roots"),  # a read-only root
        ("{ws}/sub", "is a directory"),
        ("{ws}", "names a directory"),
        ("new.txt", "must be absolute"),
    ],
)
async def test_write_escape_is_refused(world: World, spelling: str, why: str) -> None:
    path = spelling.format(ws=world.ws, outside=world.outside, ref=world.ref)
    service = world.files()
    await refused(service.write_text_file, why, path=path, content="pwned\n")
    assert service.files_changed == []
    assert not [p for p in world.ws.rglob("*") if p.name.endswith(".tmp")]  # no temp left


async def test_created_parents_cannot_climb_out(world: World) -> None:
    service = world.files()
    with pytest.raises(RpcFailure) as caught:
        await call(service.write_text_file, path=f"{world.ws}/new/../../outside/x.txt", content="x")
    assert caught.value.code == RESOURCE_NOT_FOUND
    assert not (world.ws / "new").exists()


async def test_write_inside_creates_parents_and_keeps_mode(world: World) -> None:
    service = world.files()
    target = world.ws / "a" / "b" / "new.txt"
    assert await call(service.write_text_file, path=str(target), content="hé\n") == {}
    assert target.read_text() == "hé\n"
    script = world.ws / "run.sh"
    script.write_text("old")
    script.chmod(0o4755)  # setuid: kept out of what an agent writes
    await call(service.write_text_file, path=str(script), content="new")
    assert script.read_text() == "new"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert service.files_changed == [str(target), str(script)]


async def test_symlink_swapped_in_for_the_parent_after_the_check(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TOCTOU: between the check and the rename, the parent becomes a symlink out.
    The write goes on in the directory that was checked (held open), never outside."""
    real = files_module._existing_mode

    def check_then_swap(where, raw):  # type: ignore[no-untyped-def]
        mode = real(where, raw)
        (world.ws / "sub").rename(world.ws / "sub.moved")
        (world.ws / "sub").symlink_to(world.outside)
        return mode

    monkeypatch.setattr(files_module, "_existing_mode", check_then_swap)
    await call(world.files().write_text_file, path=f"{world.ws}/sub/new.txt", content="x")
    assert (world.ws / "sub.moved" / "new.txt").read_text() == "x"  # contained
    assert not (world.outside / "new.txt").exists()


@pytest.mark.parametrize("swap", ["symlink", "hardlink"])
async def test_link_swapped_in_for_the_target_after_the_check(
    world: World, monkeypatch: pytest.MonkeyPatch, swap: str
) -> None:
    """TOCTOU at the last component: rename replaces the link, never writes through it."""
    target = world.ws / "target.txt"
    target.write_text("mine\n")
    real = files_module._existing_mode

    def check_then_swap(where, raw):  # type: ignore[no-untyped-def]
        mode = real(where, raw)
        target.unlink()
        if swap == "symlink":
            target.symlink_to(world.secret)
        else:
            os.link(world.secret, target)
        return mode

    monkeypatch.setattr(files_module, "_existing_mode", check_then_swap)
    await call(world.files().write_text_file, path=str(target), content="written\n")
    assert target.read_text() == "written\n" and not target.is_symlink()
    assert world.secret.read_text() == SECRET


async def test_racing_directory_symlink_flips_never_escape(world: World) -> None:
    """A real race: a thread flips ws/flip (atomically, by rename) between a symlink to a
    directory inside and one pointing out, while the service writes ws/flip/x.txt over and
    over. Every write lands inside or is refused."""
    flip, spare = world.ws / "flip", world.ws / "flip.next"
    (world.ws / "real").mkdir()
    flip.symlink_to("real")
    stop = threading.Event()

    def flipper() -> None:
        while not stop.is_set():
            for target in (world.outside, world.ws / "real"):
                spare.symlink_to(target)
                spare.replace(flip)

    thread = threading.Thread(target=flipper, daemon=True)
    thread.start()
    service = world.files()
    outcomes = {"written": 0, "failed": 0}
    try:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                await call(service.write_text_file, path=f"{flip}/x.txt", content="x")
                outcomes["written"] += 1
            except RpcFailure:
                outcomes["failed"] += 1
    finally:
        stop.set()
        thread.join(5)
    assert sum(outcomes.values()) > 50, outcomes
    assert outcomes["written"] and (world.ws / "real" / "x.txt").exists()
    assert not (world.outside / "x.txt").exists()


# --- caps and windows ---------------------------------------------------------------------------


async def test_read_cap_and_windows(world: World) -> None:
    big = world.ws / "big.txt"
    big.write_bytes(b"".join(b"line %d\n" % i for i in range(1, 20001)))
    service = world.files(max_read_bytes=4096)
    await refused(service.read_text_file, "larger than the read cap", path=str(big))
    reply = await call(service.read_text_file, path=str(big), line=10000, limit=2)
    assert reply["content"] == "line 10000\nline 10001\n"
    reply = await call(service.read_text_file, path=str(big), line=20001)
    assert reply["content"] == ""
    reply = await call(service.read_text_file, path=str(big), line=5, limit=0)
    assert reply["content"] == ""


async def test_window_after_a_huge_line_is_read_in_bounded_pieces(world: World) -> None:
    huge = world.ws / "minified.js"
    with huge.open("wb") as handle:
        handle.write(b"x" * (8 << 20) + b"\nsecond line\n")  # 8 MiB without a newline
    service = world.files(max_read_bytes=1024)
    reply = await call(service.read_text_file, path=str(huge), line=2, limit=1)
    assert reply["content"] == "second line\n"
    await refused(service.read_text_file, "read cap", path=str(huge), line=1, limit=1)


async def test_write_cap(world: World) -> None:
    service = world.files(max_write_bytes=10)
    await refused(
        service.write_text_file, "exceeds the write cap", path=f"{world.ws}/x", content="x" * 11
    )
    assert not (world.ws / "x").exists()
