"""``acp-bridge doctor``: is each profile ready to run here, and if not, what to do.

For each profile: is it valid; is its command found (its managed install, else on the PATH
its agent will get); which sandbox mode a run would use — and why not the stronger one, and
under Landlock what the cwd loses; what version it is (from the record ``acp-bridge agents
install`` wrote, else its ``version_args`` asked *in its sandbox*), and whether that is
older than the profile's ``min_version``; and then the proof (``readiness_probe.py``): the
agent started as a run starts it, through ``initialize`` and ``session/new``, closed again.

"ready" means that proof went through. Auth is judged by what the agent says: a ``-32000``
answer to ``session/new`` (gemini, qwen, kimi, vibe, codex without a key), or an auth status
it reports (claude-agent-acp's ``_auth/status_update``: "Not logged in") — never by a folder
that exists. An agent that opens sessions with nothing to answer them (opencode with no
provider: ``auth.checked_by_session: false`` in its profile) is ready only when one of its
``auth.env`` variables is set or one of its ``auth.files`` exists. Every problem comes with a
one-line fix.

Nothing of the agent runs outside its sandbox: an agent's ``--version`` may write its state
(codex wrote ``~/.codex``, which an earlier doctor then took for a login).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from acp_bridge._acp.agent_executable import find_command, install_hint, installed, managed_command
from acp_bridge._entries.confinement import sandbox_spec
from acp_bridge._os.sandbox import SandboxUnavailable, choose_mode, probe_modes
from acp_bridge._os.sandbox.landlock import SPLIT_WRITE_ROOT, landlock_rules
from acp_bridge._os.sandbox.plan import plan_paths
from acp_bridge.config import AgentProfile, LoadedConfig, ResolvedSandbox
from acp_bridge.errors import ConfigError

if TYPE_CHECKING:
    from acp_bridge._agents.readiness_probe import ProbeResult

_VERSION = re.compile(r"\d+(?:\.\d+)+")


@dataclass(frozen=True)
class Check:
    name: str  # profile, command, sandbox, cwd, version, start, session, auth
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

    @property
    def problem(self) -> Check | None:
        """The first check in the way of "ready" (what smoke's --skip-missing says)."""
        return next((check for check in self.checks if not check.ok), None)

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


def recorded_version(profile: AgentProfile) -> str | None:
    """The version the managed install of the profile's package records, when the profile
    runs that install."""
    if profile.package is None or managed_command(profile) is None:
        return None
    stamp = installed(profile.package)
    version = stamp.get("version") if stamp else None
    return str(version) if version else None


async def command_version(loaded: LoadedConfig, name: str) -> tuple[str | None, str]:
    """The version of profile ``name``'s command and where it comes from (its install
    record, else its ``version_args`` asked in its sandbox), or (None, why not)."""
    profile = loaded.profiles.get(name).profile
    recorded = recorded_version(profile)
    if recorded is not None:
        return recorded, "its install record"
    # Here, not at the top: the probe brings the run's machinery (agents list reads records).
    from acp_bridge._agents.readiness_probe import sandboxed_version

    said, why_not = await sandboxed_version(loaded, name)
    version = parse_version(said)
    if version is None:
        return None, why_not or (said.splitlines()[0] if said else "it printed nothing")
    return ".".join(map(str, version)), "asked in its sandbox"


def _version_check(profile: AgentProfile, shown: str, source: str) -> Check:
    wanted = parse_version(profile.min_version or "")
    version = parse_version(shown)
    if wanted is not None and version is not None and version < wanted:
        fix = install_hint(profile) or f"upgrade {profile.command}"
        detail = f"{shown} is older than {profile.min_version} (min_version; {source})"
        return Check("version", False, detail, f"upgrade: {fix}")
    return Check("version", True, f"{shown} ({source})")


def _command_check(profile: AgentProfile) -> Check:
    found = find_command(profile)
    if found is None:
        fix = install_hint(profile) or f"install {profile.command} and put it on PATH"
        return Check("command", False, f"{profile.command} not found on PATH", fix)
    return Check("command", True, found)


async def _version_checks(loaded: LoadedConfig, name: str, profile: AgentProfile) -> list[Check]:
    version, source = await command_version(loaded, name)
    if version is None:
        return [Check("version", True, f"unknown ({source})")]
    return [_version_check(profile, version, source)]


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


async def _probe_checks(report: Report, loaded: LoadedConfig, profile: AgentProfile) -> None:
    """Ready means it starts in its sandbox, answers ``initialize`` and opens a session
    (closed again) — and says nothing against its auth. Bounded in time."""
    from acp_bridge._agents.readiness_probe import probe_session

    probe = await probe_session(loaded, report.profile)
    checks = report.checks
    for index, check in enumerate(checks):  # no version from outside: the agent's own word
        if check.name == "version" and check.detail.startswith("unknown") and probe.agent_version:
            checks[index] = _version_check(profile, probe.agent_version, "its initialize")
    checks += _session_checks(report.profile, profile, probe)


def _session_checks(name: str, profile: AgentProfile, probe: ProbeResult) -> list[Check]:
    verbose = f"`acp-bridge run {name} hi --observe verbose` shows the agent's stderr"
    if not probe.started:
        fix = f"see the error; {verbose}"
        if probe.late:
            fix = f"raise timeouts.startup in the profile, or see why it is slow: {verbose}"
        return [Check("start", False, probe.detail, fix)]
    checks = [Check("start", True, probe.detail)]
    if probe.auth_refused:
        why = f"session/new refused: {probe.auth_refused}"
        return [*checks, Check("auth", False, why, _auth_fix(profile, probe))]
    if not probe.ok:
        fix = f"see the agent's answer; {verbose}"
        if probe.late:
            fix = f"raise timeouts.session in the profile, or see why it is slow: {verbose}"
        return [*checks, Check("session", False, probe.session_error, fix)]
    opened = Check("session", True, f"session/new answered; closed again by {probe.closed_by}")
    return [*checks, opened, _auth_check(profile, probe)]


def _auth_check(profile: AgentProfile, probe: ProbeResult) -> Check:
    """After a session opened: what the agent reported about its auth, else whether one of
    the variables or files the profile says authenticate it is there: a warning only where
    the agent checks its auth at session/new, not ready where it opens sessions regardless
    (``auth.checked_by_session: false``, opencode with no provider: a prompt never ends)."""
    present = [n for n in profile.auth.env if n in probe.env_names]
    status = probe.auth_status
    if status is not None:
        label = str(status.get("label") or status.get("kind") or "")
        said = " ".join(str(status[k]) for k in ("detail",) if status.get(k))
        reported = f"the agent reports: {label}" + (f" ({said})" if said else "")
        if status.get("kind") != "none":
            return Check("auth", True, reported)
        if not present:
            return Check("auth", False, reported, _auth_fix(profile, probe))
        # claude-agent-acp says "Not logged in" with ANTHROPIC_AUTH_TOKEN, and its turns work.
        detail = f"{reported}, though {present[0]} is set"
        return Check("auth", True, detail, warning=True)
    found = [path for path in profile.auth.files if path.is_file()]
    if not profile.auth.env and not profile.auth.files:
        return Check("auth", True, "session/new answered without asking for a key")
    if present:
        return Check("auth", True, f"{present[0]} is set; session/new answered")
    if found:
        return Check("auth", True, f"{found[0]} exists; session/new answered")
    missing = []
    if profile.auth.env:
        missing.append(f"none of {', '.join(profile.auth.env)} is set")
    if profile.auth.files:
        missing.append(f"none of {', '.join(map(str, profile.auth.files))} exists")
    wanted = " and ".join(missing)
    if not profile.auth.checked_by_session:
        # It opens sessions with no model to answer with (opencode): a prompt then never
        # ends, so its opened session proves nothing about a run (auth.checked_by_session).
        detail = f"{wanted}; the agent opens sessions without them, but a prompt gets no answer"
        return Check("auth", False, detail, _auth_fix(profile, probe))
    detail = f"{wanted}; session/new answered without (a prompt may still ask)"
    return Check("auth", True, detail, _auth_fix(profile, probe), warning=True)


def _auth_fix(profile: AgentProfile, probe: ProbeResult) -> str:
    """The ways to authenticate the agent: a variable the profile or the agent names (and
    passes to it), the agent's own terminal login."""
    names = list(dict.fromkeys([*profile.auth.env, *probe.auth_vars]))
    ways = []
    if names:
        others = f" (or one of {', '.join(names)})" if len(names) > 1 else ""
        ways.append(f"export {names[0]}=…{others}")
        passed = {*profile.env_passthrough, *profile.env}
        if names[0] not in passed:
            ways[-1] += f" and list {names[0]} under env_passthrough in the profile"
    ways += [f"log in with `{line}` in a terminal" for line in probe.login_commands]
    if profile.auth.files:
        ways.append(f"write {profile.auth.files[0]} (its own login or model config)")
    if not ways:
        ways.append(f"log in with {profile.command}'s own login command")
    return "; or ".join(ways)


async def diagnose(
    loaded: LoadedConfig,
    names: Iterable[str] = (),
    *,
    start: bool = True,
    concurrency: int = 1,
) -> list[Report]:
    """A report for each profile named (default: every profile), in that order. ``start``:
    prove each ready one by starting it in its sandbox through ``initialize`` and
    ``session/new``; ``concurrency`` profiles at a time (each probe is an agent starting:
    on a small machine more at once makes each slower)."""
    wanted = list(names) or loaded.profiles.names()
    reports: dict[int, Report] = {}
    limiter = anyio.CapacityLimiter(max(1, concurrency))

    async def one(index: int, name: str) -> None:
        async with limiter:
            reports[index] = await _diagnose_one(loaded, name, start=start)

    async with anyio.create_task_group() as tg:
        for index, name in enumerate(wanted):
            tg.start_soon(one, index, name)
    return [reports[index] for index in range(len(wanted))]


async def _diagnose_one(loaded: LoadedConfig, name: str, *, start: bool) -> Report:
    report = Report(name)
    try:
        profile = loaded.profiles.get(name).profile
    except ConfigError as exc:
        first = exc.problems[0] if exc.problems else exc
        fix = "acp-bridge profiles list (for the names), or fix the file as said"
        report.checks.append(Check("profile", False, str(first), fix))
        return report
    report.checks.append(_command_check(profile))
    if not report.ready:
        return report
    report.checks += await _sandbox_checks(loaded, profile)
    if not report.ready:  # no sandbox: nothing of the agent can run, not even --version
        return report
    report.checks += await _version_checks(loaded, name, profile)
    if report.ready and start:  # found, and a sandbox to run in: does it really start?
        await _probe_checks(report, loaded, profile)
    return report
