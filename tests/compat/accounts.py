"""Who runs the bridge in the matrix: root, and an unprivileged account, each with HOME where
users have it, its own managed prefix of agents and its own run store.

- ``root``: this test process's own bridge (``python -m acp_bridge``), HOME of root, the
  process's environment without the test's knobs and model variables. Needs the tests to run
  as root.
- ``user``: the account named by ``$ACP_BRIDGE_COMPAT_USER`` (default ``acp-compat``;
  ``.ci/run`` creates it). When the tests run as root, each command runs as that account
  with a login environment (HOME, USER, SHELL, a PATH with its own bridge); its bridge is a
  venv of its own (root's is not readable by others: ``/root`` is 0700), built here once
  with ``pip install -e`` of this checkout. When the tests run unprivileged, this account is
  the current user.

Agents are installed per account, the way a user installs them (``acp-bridge agents
install``): each account has its own managed prefix, kept between runs (a second run finds
them installed); an install shares nothing with another account's, which its sandbox could
not read anyway. ``$ACP_BRIDGE_COMPAT_REQUIRE=1`` makes a missing account (or root) a
failure instead of a skip.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pwd
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
USER_ENV = "ACP_BRIDGE_COMPAT_USER"
DEFAULT_USER = "acp-compat"
REQUIRE_ENV = "ACP_BRIDGE_COMPAT_REQUIRE"
ACCOUNTS = ("root", "user")

# The host's own model endpoints and keys, and the test run's knobs: a user's shell for the
# matrix has none of them (each row sets what it needs).
_DROPPED = re.compile(
    r"(PYTEST|ACP_BRIDGE|ANTHROPIC|OPENAI|GEMINI|GOOGLE|CODEX|CLAUDE|VIBE|MISTRAL|KIMI|"
    r"GOOSE|OPENCODE|FAST_AGENT|GENERIC|QWEN|AUGMENT|XDG|VIRTUAL_ENV|COV)(_.*)?"
    r"|.*_API_KEY|.*_BASE_URL"
)

_NETWORK = re.compile(
    r"(?i)(https?_proxy|no_proxy|all_proxy|NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|"
    r"REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|PIP_CERT|PIP_INDEX_URL|PIP_EXTRA_INDEX_URL|"
    r"PIP_FIND_LINKS|PIP_DEFAULT_TIMEOUT|npm_config_registry|npm_config_cafile)"
)


def missing(reason: str) -> None:
    """A prerequisite of the matrix is missing here: a failure when required, else a skip
    that says why (pytest's summary lists it)."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@dataclass(frozen=True)
class Account:
    key: str  # "root" or "user"
    name: str
    uid: int
    gid: int
    home: Path
    bridge: tuple[str, ...]  # the argv that runs its acp-bridge
    env: dict[str, str] = field(repr=False)  # its login environment

    @property
    def switches(self) -> bool:
        """Its commands run as another user than this process."""
        return self.uid != os.getuid()

    @property
    def cache(self) -> Path:
        """The matrix's own folder in its home (run folders, its bridge's venv)."""
        return self.home / ".cache" / "acp-bridge-compat"

    def own(self, path: Path, *, inside: bool = True) -> None:
        """Hand ``path`` (and everything under it, unless not ``inside``) to the account."""
        if not self.switches:
            return
        if not inside:  # a chown marks the inode changed: never of another test's files
            os.lchown(path, self.uid, self.gid)
            return
        for root, dirs, files in os.walk(path):
            for name in [root, *(Path(root, n) for n in dirs + files)]:
                os.lchown(name, self.uid, self.gid)

    def popen(
        self, argv: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        """Start ``argv`` as the account (stdout and stderr piped, no stdin)."""
        switch = {}
        if self.switches:
            switch = {"user": self.uid, "group": self.gid, "extra_groups": []}
        return subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env if env is not None else self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **switch,  # type: ignore[call-overload]
        )

    def run(
        self, argv: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float
    ) -> subprocess.CompletedProcess[str]:
        process = self.popen(argv, cwd=cwd, env=env)
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            raise AssertionError(
                f"{argv[0]} … did not end within {timeout:g}s: {err[-2000:]}"
            ) from None
        return subprocess.CompletedProcess(list(argv), process.returncode, out, err)


def _root_env() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not _DROPPED.fullmatch(name)}
    return env | {"HOME": pwd.getpwuid(0).pw_dir}


def root_account() -> Account:
    if os.geteuid() != 0:
        missing("the root rows need the tests to run as root (CI does)")
    entry = pwd.getpwuid(0)
    bridge = (sys.executable, "-m", "acp_bridge")
    return Account("root", entry.pw_name, 0, entry.pw_gid, Path(entry.pw_dir), bridge, _root_env())


def user_account() -> Account:
    """The unprivileged account (its bridge not yet built: see :func:`with_bridge`)."""
    if os.geteuid() != 0:  # we are the unprivileged user
        entry = pwd.getpwuid(os.getuid())
        env = {name: value for name, value in os.environ.items() if not _DROPPED.fullmatch(name)}
        bridge = (sys.executable, "-m", "acp_bridge")
        return Account(
            "user", entry.pw_name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir), bridge, env
        )
    name = os.environ.get(USER_ENV) or DEFAULT_USER
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        missing(
            f"no account {name!r} for the unprivileged rows: create it "
            f"(useradd -m {name}), as .ci/run does"
        )
        raise  # not reached: missing() raises
    if entry.pw_uid == 0:
        missing(f"account {name!r} is root; the unprivileged rows need another one")
    home = Path(entry.pw_dir)
    venv = home / ".cache" / "acp-bridge-compat" / "venv"
    path = f"{venv / 'bin'}:{home / '.local' / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    # The machine's network settings (its proxy, the CA bundle that proxy needs), which
    # every account on it has; npm reads no global npmrc once given --prefix.
    env = {name: value for name, value in os.environ.items() if _NETWORK.fullmatch(name)}
    env |= {
        "HOME": str(home),
        "USER": name,
        "LOGNAME": name,
        "SHELL": entry.pw_shell or "/bin/sh",
        "PATH": path,
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    bridge = (str(venv / "bin" / "acp-bridge"),)
    return Account("user", name, entry.pw_uid, entry.pw_gid, home, bridge, env)


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """One holder at a time across the test processes (xdist workers) of this machine."""
    folder = Path("/tmp") / f"acp-bridge-compat-locks-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    with (folder / f"{name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def with_bridge(account: Account) -> Account:
    """The account, its bridge installed: root's is this process's; the unprivileged one's
    is a venv in its home with this checkout installed (editable), made once and remade
    when the checkout or its dependencies change."""
    if not account.switches:
        return account
    venv = account.cache / "venv"
    stamp = venv / "acp-bridge-compat.stamp"
    wanted = f"{REPO}\n{hashlib.sha256((REPO / 'pyproject.toml').read_bytes()).hexdigest()}\n"
    with locked(f"venv-{account.name}"):
        if stamp.is_file() and stamp.read_text() == wanted:
            return account
        account.cache.mkdir(parents=True, exist_ok=True)
        account.own(account.home / ".cache", inside=False)
        account.own(account.cache, inside=False)
        # Its bridge is this checkout, installed editable: the account reads it at every
        # run. A checkout under /root (0700) it cannot read is said here, not as pip's error.
        readable = account.run(
            ["test", "-r", str(REPO / "pyproject.toml")], cwd=account.home, timeout=30
        )
        if readable.returncode != 0:
            missing(
                f"{account.name} cannot read this checkout ({REPO}), which its bridge is "
                "installed from: clone it where every account can read it"
            )
        python = "python3"
        steps = [
            [python, "-m", "venv", "--clear", str(venv)],
            [str(venv / "bin" / "pip"), "install", "-q", "-e", str(REPO)],
        ]
        for argv in steps:
            done = account.run(argv, cwd=account.home, timeout=900)
            if done.returncode != 0:
                missing(
                    f"cannot build {account.name}'s bridge venv ({' '.join(argv)}): "
                    f"{done.stderr[-1500:]}"
                )
        stamp.write_text(wanted)
        account.own(stamp)
    return account


@dataclass(frozen=True)
class Install:
    agent: str
    account: str
    seconds: float
    fresh: bool
    ok: bool
    output: str


def install(account: Account, profile: str) -> Install:
    """``acp-bridge agents install PROFILE`` as the account (a no-op when installed)."""
    with locked(f"install-{account.name}-{profile}"):
        started = time.monotonic()
        done = account.run(
            [*account.bridge, "agents", "install", profile], cwd=account.home, timeout=1800
        )
        seconds = time.monotonic() - started
    output = done.stdout + done.stderr
    fresh = "already installed" not in output
    return Install(profile, account.key, seconds, fresh, done.returncode == 0, output)
