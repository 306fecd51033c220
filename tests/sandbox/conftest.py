"""Fixtures of the sandbox tests: a scene for the hostile agent (workspace, fake HOME with
secrets, files outside the roots), real sandboxed processes, and a search for survivors."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from acp_bridge._os.sandbox import RunSandbox, SandboxChoice, SandboxSpec, choose_mode
from acp_bridge._os.sandbox.spec import Mode

HOSTILE = Path(__file__).with_name("hostile.py")
SECRET_ENV = "ACP_BRIDGE_TEST_HOST_SECRET"


def marked(marker: str) -> list[int]:
    """Pids whose command line carries ``marker`` (not this process)."""
    needle = marker.encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if needle in f.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def survivors(marker: str, wait: float = 3.0) -> list[int]:
    """Marked processes still alive after ``wait`` seconds of letting them vanish."""
    deadline = time.monotonic() + wait
    while (alive := marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return alive


def choose(mode: Mode, network: bool = True) -> SandboxChoice:
    return anyio.run(lambda: choose_mode(mode, network=network))


@dataclass
class Scene:
    """Where the hostile agent runs and what it must not touch."""

    root: Path
    marker: str = field(default_factory=lambda: f"hostile-{uuid.uuid4().hex}")
    token: str = field(default_factory=lambda: f"host-secret-{uuid.uuid4().hex}")

    def __post_init__(self) -> None:
        self.ws = self.root / "ws"
        self.home = self.root / "home"
        self.outside = self.root / "outside"
        for d in (self.ws, self.home / ".ssh", self.home / ".config" / "gh", self.outside):
            d.mkdir(parents=True)
        (self.home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
        (self.home / ".config" / "gh" / "hosts.yml").write_text("oauth_token: gho_x\n")
        (self.home / ".netrc").write_text("machine x password y\n")
        (self.home / ".bashrc").write_text("visible\n")
        (self.outside / "existing.txt").write_text("untouched\n")
        # Outside the host's /tmp: a place only "system read-only" protects.
        self.system = Path(tempfile.mkdtemp(prefix="sandbox-test-", dir=Path(__file__).parent))
        (self.system / "existing.txt").write_text("untouched\n")

    def spec(self, mode: Mode, **kw: object) -> SandboxSpec:
        return SandboxSpec(
            cwd=self.ws, write=(self.ws,), read=(self.home,), home=self.home, mode=mode, **kw
        )  # type: ignore[arg-type]

    def env(self) -> dict[str, str]:
        """A constructed environment: what the bridge gives an agent (never its own)."""
        return {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(self.home)}

    def argv(self, *, stay: bool = False) -> list[str]:
        config = {
            "writes": [
                str(self.outside / "new.txt"),
                str(self.outside / "existing.txt"),
                str(self.home / ".bashrc"),
                str(self.home / ".ssh" / "authorized_keys"),
                str(self.system / "new.txt"),
                str(self.system / "existing.txt"),
                str(self.root / "next-to-ws.txt"),
            ],
            "deletes": [str(self.outside / "existing.txt"), str(self.system / "existing.txt")],
            "lists": [str(self.outside), str(self.home / ".ssh"), str(self.system.parent)],
            "reads": [
                str(self.home / ".ssh" / "id_ed25519"),
                str(self.home / ".config" / "gh" / "hosts.yml"),
                str(self.home / ".netrc"),
                str(self.outside / "existing.txt"),
                str(self.home / ".bashrc"),
            ],
            "inside": str(self.ws / "inside.txt"),
            "report": str(self.ws / "report.json"),
            "token": self.token,
            "stay": stay,
        }
        return [sys.executable, "-I", str(HOSTILE), self.marker, json.dumps(config)]

    def outside_state(self) -> dict[str, bytes]:
        """Every file outside the write root, with its content."""
        state = {}
        for base in (self.root, self.system):
            for path in sorted(base.rglob("*")):
                skip = (self.ws, self.root / "state")  # write root; the run's private /tmp
                if path.is_file() and not any(d in path.parents for d in skip):
                    state[str(path)] = path.read_bytes()
        return state


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    monkeypatch.setenv(SECRET_ENV, "set-below")
    scene = Scene(tmp_path)
    monkeypatch.setenv(SECRET_ENV, scene.token)  # the "bridge's" environment holds it
    yield scene
    leaked = marked(scene.marker)
    for pid in leaked:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(scene.system, ignore_errors=True)


@pytest.fixture
def box_for(scene: Scene) -> Iterator[Callable[..., RunSandbox]]:
    """``box_for(mode)`` → an entered RunSandbox for the scene (closed at teardown)."""
    with contextlib.ExitStack() as stack:

        def make(mode: Mode, **kw: object) -> RunSandbox:
            spec = scene.spec(mode, **kw)
            box = RunSandbox(spec, choose(mode, spec.network), tmp_parent=scene.root / "state")
            return stack.enter_context(box)

        yield make
