"""``acp-bridge doctor``: is each profile ready to run here, and if not, what to do.

For each profile: is it valid; is its command found (its managed install, else on the PATH
its agent will get); what version it says it is, and whether that is older than the
profile's ``min_version``; whether one of the variables that authenticate it (``auth.env``)
is set (a warning only: the agent starts without); which sandbox mode a run would use — and
why not the stronger one, and under Landlock what the cwd loses; and whether the agent
really starts in that sandbox and answers ``initialize``. Every problem comes with a
one-line fix.

The version is asked with ``subprocess`` in a worker thread (bounded): one short command per
profile, and a tool the tests can fake without starting real agents.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio

from acp_bridge._acp.agent_executable import agent_command, find_command, install_hint
from acp_bridge._entries.confinement import sandbox_spec
from acp_bridge._os.process.environment import constructed_env
from acp_bridge._os.sandbox import SandboxUnavailable, choose_mode, probe_modes
from acp_bridge._os.sandbox.landlock import SPLIT_WRITE_ROOT, landlock_rules
from acp_bridge._os.sandbox.plan import plan_paths
from acp_bridge.config import AgentProfile, LoadedConfig, ResolvedSandbox
from acp_bridge.errors import ConfigError

VERSION_TIMEOUT = 10.0
_VERSION = re.compile(r"\d+(?:\.\d+)+")


@dataclass(frozen=True)
class Check:
    name: str  # profile, command, version, auth, sandbox, cwd, start
    ok: bool
    detail: str
    fix: str = ""
    warning: bool = False  # worth knowing, not in the way of "ready" (a key set later)


@dataclass
class Report:
    profile: str
    checks: list[Check] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return all(check.ok for check in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "ready": self.ready,
            "checks": [asdict(c) for c in self.checks],
        }


def parse_version(text: str) -> tuple[int, ...] | None:
    """The first dotted number in a command's version output (``codex-acp 0.16.0``)."""
    found = _VERSION.search(text)
    return tuple(int(part) for part in found.group().split(".")) if found else None


def _ask_version(argv: list[str], env: Mapping[str, str]) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return -1, f"no answer within {VERSION_TIMEOUT:g}s"
    except OSError as exc:
        return -1, exc.strerror or str(exc)
    return done.returncode, (done.stdout or done.stderr).strip()


def command_version(profile: AgentProfile, command: str) -> str | None:
    """The version ``command`` says it is (``version_args``), or None (bounded in time)."""
    env = constructed_env(depth=1, extra=profile.env, passthrough=profile.env_passthrough)
    code, output = _ask_version([command, *profile.version_args], env)
    version = parse_version(output) if code == 0 else None
    return ".".join(map(str, version)) if version is not None else None


async def _command_checks(profile: AgentProfile) -> list[Check]:
    env = constructed_env(depth=1, extra=profile.env, passthrough=profile.env_passthrough)
    found = find_command(profile)
    if found is None:
        fix = install_hint(profile) or f"install {profile.command} and put it on PATH"
        return [Check("command", False, f"{profile.command} not found on PATH", fix)]
    env = agent_command(profile, env)[1]  # the managed install's bin first, as a run has it
    checks = [Check("command", True, found)]
    code, output = await anyio.to_thread.run_sync(_ask_version, [found, *profile.version_args], env)
    version = parse_version(output) if code == 0 else None
    if version is None:
        why = output.splitlines()[0] if output else f"exit code {code}"
        return [*checks, Check("version", True, f"unknown ({why})")]
    shown = ".".join(map(str, version))
    wanted = parse_version(profile.min_version or "")
    if wanted is not None and version < wanted:
        fix = install_hint(profile) or f"upgrade {profile.command}"
        detail = f"{shown} is older than {profile.min_version} (min_version)"
        return [*checks, Check("version", False, detail, f"upgrade: {fix}")]
    return [*checks, Check("version", True, shown)]


def _auth_check(profile: AgentProfile, environ: Mapping[str, str]) -> Check | None:
    if not profile.auth.env:
        return None
    present = [name for name in profile.auth.env if environ.get(name) or profile.env.get(name)]
    if present:
        return Check("auth", True, f"{present[0]} is set")
    names = ", ".join(profile.auth.env)
    logins = [p for p in profile.sandbox.state if p.is_dir() and any(p.iterdir())]
    if logins:  # the agent's own state: it may hold a login made with the agent's CLI
        return Check("auth", True, f"none of {names} is set; the agent's own login in {logins[0]}?")
    fix = f"export {profile.auth.env[0]}=… (or one of {names}), or log in with the agent itself"
    # A warning: the agent starts and answers without it (the start check proves that);
    # its first session will ask for a key.
    return Check("auth", True, f"none of {names} is set", fix, warning=True)


async def _sandbox_checks(loaded: LoadedConfig, profile: AgentProfile) -> list[Check]:
    settings = profile.sandbox.over(loaded.config.sandbox)
    try:
        choice = await choose_mode(settings.mode, network=settings.network)
    except SandboxUnavailable as exc:
        return [Check("sandbox", False, str(exc), "install bubblewrap, or set sandbox.mode: off")]
    detail = f"{choice.mode}: {choice.reason}"
    if choice.mode != "bwrap":
        weaker = [p for p in await probe_modes() if p.mode == "bwrap" and not p.works]
        if weaker:
            detail += f" (not bwrap: {weaker[0].problem}; fix: {weaker[0].fix})"
    checks = [Check("sandbox", True, detail)]
    if choice.mode == "landlock":
        checks += _landlock_cwd_checks(settings, profile, choice.abi)
    return checks


def _landlock_cwd_checks(settings: ResolvedSandbox, profile: AgentProfile, abi: int) -> list[Check]:
    """What Landlock cannot give an agent run here (in this cwd): a write root that holds a
    hidden path (the home folder holding ~/.ssh) loses entry creation at its top."""
    cwd = profile.cwd or Path.cwd()
    try:
        spec = sandbox_spec(settings, cwd=cwd, reads=(cwd,), writes=(cwd,))
        rules = landlock_rules(plan_paths(spec), abi=abi, network=True, private_tmp=None)
    except ConfigError as exc:
        return [Check("cwd", True, f"not checked: {exc}", warning=True)]
    split = [w for w in rules.warnings if w.startswith(SPLIT_WRITE_ROOT)]
    return [Check("cwd", True, w.split(". Fix: ")[0], w.split(". Fix: ")[-1], True) for w in split]


async def _start_check(loaded: LoadedConfig, name: str) -> Check:
    """Ready means it starts: in its sandbox, through initialize (bounded in time)."""
    from acp_bridge._agents.readiness_probe import probe_initialize

    probe = await probe_initialize(loaded, name)
    if probe.ok:
        return Check("start", True, probe.detail)
    fix = "see the error; `acp-bridge run NAME hi --observe verbose` shows the agent's stderr"
    return Check("start", False, probe.detail, fix.replace("NAME", name))


async def diagnose(
    loaded: LoadedConfig,
    names: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    *,
    start: bool = True,
) -> list[Report]:
    """A report for each profile named (default: every profile). ``start``: prove each
    ready one by starting it in its sandbox through ``initialize``."""
    host = os.environ if environ is None else environ
    reports = []
    for name in list(names) or loaded.profiles.names():
        report = Report(name)
        try:
            profile = loaded.profiles.get(name).profile
        except ConfigError as exc:
            first = exc.problems[0] if exc.problems else exc
            fix = "acp-bridge profiles list (for the names), or fix the file as said"
            report.checks.append(Check("profile", False, str(first), fix))
            reports.append(report)
            continue
        report.checks += await _command_checks(profile)
        auth = _auth_check(profile, host)
        if auth is not None:
            report.checks.append(auth)
        report.checks += await _sandbox_checks(loaded, profile)
        if report.ready and start:  # found, and a sandbox to run in: does it really start?
            report.checks.append(await _start_check(loaded, name))
        reports.append(report)
    return reports
