"""Running one agent of the matrix through the command line, as its account, and recording
each scenario's outcome in the results file that ``docs/generate_compatibility.py`` turns
into ``docs/reference/compatibility.md``.

Each run gets a config that holds one profile entry: the built-in profile's name, with only
what the agent's row adds (endpoint and key, a scenario's rule) and a marker variable. The
marker is also in the command's own environment, so the supervisor of a detached run, the
agent, its children and the terminals started for it all carry it; after every command
``/proc`` is scanned for it: a process left behind fails the scenario.

Results file: one JSON object a line, ``{"kind": "cell", "agent", "account", "scenario",
"outcome", "note", "seconds", "version", "protocol"}`` (outcome ``pass``, ``fail``,
``impossible`` or ``not-offered``) and ``{"kind": "install", "agent", "account",
"seconds", "fresh", "ok"}``; ``$ACP_BRIDGE_COMPAT_RESULTS``, else ``compat-results.jsonl``
in the checkout.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.compat.accounts import REPO, Account
from tests.compat.agents import Agent, Endpoint, Workspace
from tests.fake_models import FakeModels
from tests.helpers import command_line, processes_with

RESULTS_ENV = "ACP_BRIDGE_COMPAT_RESULTS"
MARKER_NAME = "ACP_BRIDGE_COMPAT_MARKER"
RUN_TIMEOUT = 120  # --timeout of a scenario's run: seconds
COMMAND_BOUND = 300  # seconds any one command may take before the test gives up on it
LEFTOVER_WAIT = 10.0  # seconds for the last processes to go (a supervisor idles 2 s)


def results_path() -> Path:
    return Path(os.environ.get(RESULTS_ENV) or REPO / "compat-results.jsonl")


def append_result(record: dict[str, Any]) -> None:
    """One line to the results file; the xdist workers append to one file, one at a time."""
    with results_path().open("a", encoding="utf-8") as out:
        fcntl.flock(out, fcntl.LOCK_EX)
        out.write(json.dumps(record) + "\n")


@dataclass
class Done:
    """One finished command: exit code, its envelope (or JSON lines), stderr, seconds."""

    code: int
    out: str
    err: str
    seconds: float

    @property
    def envelope(self) -> dict[str, Any]:
        text = self.out.strip().splitlines()
        assert text, f"no envelope on stdout (exit {self.code}): {self.err.strip()[-300:]}"
        data = json.loads(text[-1])
        assert isinstance(data, dict), self.out
        return data

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.envelope.get("meta") or {}
        assert isinstance(meta, dict)
        return meta


@dataclass
class Bridge:
    """The command line of one account, one agent row, one run folder."""

    account: Account
    agent: Agent
    folder: Path
    models: FakeModels
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def workspace(self) -> Workspace:
        return Workspace(self.folder / "ws", self.token)

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.models.url, self.folder)

    def prepare(self) -> None:
        """The run folder: the workspace with notes.txt, the row's config files, all the
        account's."""
        ws = self.workspace
        ws.root.mkdir(parents=True)
        ws.notes.write_text(ws.notes_text())
        for name, text in self.agent.files(self.endpoint).items():
            path = self.folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.configure()
        self.account.own(self.folder)

    def configure(self, **extra: Any) -> Path:
        """The config file: the profile entry with the row's env, the marker and ``extra``
        (a rule, a timeout) over the built-in profile."""
        env = {**self.agent.env(self.endpoint), MARKER_NAME: self.marker}
        entry = {"name": self.agent.profile, "env": env, **extra}
        config = {
            "transcripts": {"enabled": True, "dir": str(self.folder / "transcripts")},
            "acp": {"agents": [entry]},
        }
        path = self.folder / "acp-bridge.yaml"
        path.write_text(json.dumps(config, indent=1))  # JSON is YAML
        self.account.own(path)
        return path

    def environment(self) -> dict[str, str]:
        return {**self.account.env, **self.agent.host_env(self.endpoint), MARKER_NAME: self.marker}

    def argv(self, *args: str) -> list[str]:
        return [*self.account.bridge, "--config", str(self.folder / "acp-bridge.yaml"), *args]

    def start(self, *args: str) -> tuple[Any, float]:
        started = time.monotonic()
        process = self.account.popen(
            self.argv(*args), cwd=self.workspace.root, env=self.environment()
        )
        return process, started

    def __call__(self, *args: str, bound: float = COMMAND_BOUND, kept: bool = False) -> Done:
        """``acp-bridge --config … ARGS`` in the workspace, to its end; no process left
        (``kept``: the run's agent is kept for a follow-up, checked later)."""
        process, started = self.start(*args)
        try:
            out, err = process.communicate(timeout=bound)
        except Exception:
            process.kill()
            out, err = process.communicate()
            raise AssertionError(f"acp-bridge {args[0]} did not end within {bound:g}s") from None
        finally:
            if not kept:
                self.assert_no_leftovers()
        return Done(process.returncode, out, err, time.monotonic() - started)

    def run(self, task: str, *args: str) -> Done:
        return self(
            "run",
            self.agent.profile,
            task,
            "--timeout",
            str(RUN_TIMEOUT),
            "--events",
            "none",
            *args,
        )

    def interrupt_when(self, ready: Any, task: str) -> tuple[Done, float]:
        """Run ``task``, send SIGINT (Ctrl-C) once ``ready(process)`` says the turn is under
        way; the command's end, and seconds from the signal to its end."""
        process, started = self.start(
            "run", self.agent.profile, task, "--timeout", str(RUN_TIMEOUT), "--events", "ndjson"
        )
        try:
            if not ready(process):
                process.kill()
                out, err = process.communicate()
                raise AssertionError(f"the turn never got under way: {_tail(err)}")
            signalled = time.monotonic()
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=COMMAND_BOUND)
            ended = time.monotonic()
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
            self.assert_no_leftovers()
        return Done(process.returncode, out, err, ended - started), ended - signalled

    def assert_no_leftovers(self) -> None:
        deadline = time.monotonic() + LEFTOVER_WAIT
        while (left := processes_with(MARKER_NAME, self.marker)) and time.monotonic() < deadline:
            time.sleep(0.2)
        lines = [f"{pid} {command_line(pid)[:120]}" for pid in left]
        assert not left, f"{len(left)} process(es) left behind: {lines}"


def _tail(text: str, lines: int = 4) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


class Cell:
    """One scenario of one row: run it under ``with cell:``; an AssertionError inside is its
    red cell (the message's first line, made stable, is the table's note)."""

    def __init__(self, bridge: Bridge, scenario: str, version: str) -> None:
        self.bridge = bridge
        self.scenario = scenario
        self.version = version
        self.protocol: int | None = None
        self.notes: list[str] = []
        agent = bridge.agent
        if scenario in agent.notes:
            self.notes.append(agent.notes[scenario])

    def record(self, outcome: str, note: str, seconds: float) -> None:
        append_result(
            {
                "kind": "cell",
                "agent": self.bridge.agent.profile,
                "account": self.bridge.account.key,
                "scenario": self.scenario,
                "outcome": outcome,
                "note": note,
                "seconds": round(seconds, 1),
                "version": self.version,
                "protocol": self.protocol,
            }
        )

    def saw(self, done: Done) -> None:
        """Note the protocol version a run reports."""
        with contextlib.suppress(AssertionError, ValueError):
            self.protocol = self.protocol or done.meta.get("protocol_version")

    def not_offered(self, why: str) -> None:
        self.record("not-offered", why, 0.0)
        pytest.skip(f"{self.scenario}: not offered by {self.bridge.agent.profile}: {why}")

    @contextlib.contextmanager
    def running(self) -> Iterator[Cell]:
        reason = self.bridge.agent.impossible.get(self.scenario)
        if reason is not None:
            self.record("impossible", reason, 0.0)
            pytest.skip(
                f"{self.scenario} is impossible offline for {self.bridge.agent.profile}: {reason}"
            )
        started = time.monotonic()
        try:
            yield self
        except AssertionError as exc:
            self.record("fail", self.stable(str(exc)), time.monotonic() - started)
            raise
        self.record("pass", "; ".join(self.notes), time.monotonic() - started)

    def stable(self, message: str) -> str:
        """The failure's first line without what changes from run to run."""
        line = (message.strip().splitlines() or [""])[0]
        replacements = [
            (str(self.bridge.folder), "RUN"),
            (str(self.bridge.account.home), "~"),
            (self.bridge.token, "TOKEN"),
        ]
        for old, new in replacements:
            line = line.replace(old, new)
        line = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", line)
        line = re.sub(r"\bsub_[0-9a-f]{12}\b", "sub_…", line)
        line = re.sub(r"\b\d+\.\d+s\b", "…s", line)
        return line[:200]


def summary_of(done: Done) -> str:
    """Status, error code and error of an envelope, for a failure message."""
    envelope = done.envelope
    meta = envelope.get("meta") or {}
    error = (envelope.get("error") or "").splitlines()[:1]
    return f"{envelope.get('status')} {meta.get('error_code') or ''}: {' '.join(error)}".strip()
