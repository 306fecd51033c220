"""Starting a run's supervisor as a detached process, cheaply.

``/bin/sh -c '"$@" </dev/null >>LOG 2>&1 & echo $!'`` in a new session: the shell forks the
supervisor into the background, prints its pid and exits, and we reap the shell at once (a
few milliseconds). The supervisor is then nobody's child in this process (no zombie left in a
long-lived host, no ``Popen`` to keep), sits in a session without a controlling terminal (a
terminal hang-up never reaches it; it also ignores SIGHUP), has stdin on ``/dev/null`` and
writes whatever it prints to a per-run log, normally empty and then removed. The pid comes
back from the shell and its start time is read here, so the run's row names its supervisor
from the moment it exists: a supervisor that fails to boot shows as ``lost`` straight away.

Why a shell rather than a double ``os.fork``: forking a host that runs threads (every anyio
program does) is unsafe in the child until ``exec``; ``subprocess`` forks and ``exec``s the
shell in C, so no Python code of this process ever runs in a forked copy.

The supervisor gets this process's environment (``os.environ``) and working directory, exactly
what an entry called here would have used (its umask and resource limits too); :func:`env_key`
digests all of it, so a supervisor only ever takes runs started from the same
(:mod:`acp_bridge._runs.store.supervisors`): the runs it has at once share its variables, its
working directory, its umask and its limits.
"""

from __future__ import annotations

import hashlib
import os
import resource
import subprocess
import sys
from pathlib import Path

from acp_bridge._os.fs.private_files import create_private
from acp_bridge._os.process import proc
from acp_bridge._os.process.proc import Identity
from acp_bridge.errors import SpawnError

SUPERVISOR_MODULE = "acp_bridge._runs.supervisor.main"
_DETACH = '"$@" </dev/null >>"$0" 2>&1 & echo $!'
_LAUNCH_TIMEOUT = 10.0
# Variables a shell sets or changes on its own: the supervisor's environment differs from its
# starter's in these only, so they are not part of what "the same environment" means.
_VOLATILE = frozenset({b"_", b"PWD", b"OLDPWD", b"SHLVL"})
_LIMITS = sorted(name for name in dir(resource) if name.startswith("RLIMIT_"))


def env_key() -> str:
    """A digest of what a process started here inherits and its runs may notice: the
    environment variables, the working directory, the umask and the resource limits. Only
    the digest is stored: the environment holds API keys and stays in the processes' memory."""
    digest = hashlib.sha256()
    for name in sorted(os.environb):
        if name not in _VOLATILE:
            digest.update(name + b"=" + os.environb[name] + b"\0")
    # A process has one of each of these, and the runs in it at once share them.
    limits = [resource.getrlimit(getattr(resource, name)) for name in _LIMITS]
    inherited = f"{os.getcwd()}\0{proc.umask()}\0{limits}"  # noqa: PTH109
    digest.update(b"\0" + os.fsencode(inherited))
    return digest.hexdigest()[:32]


def launch(store_path: Path, run_id: str, log: Path) -> Identity:
    """Start the supervisor of ``run_id`` (detached); its identity."""
    os.close(create_private(log))  # the shell appends to it: private, and never a link
    argv = [
        "/bin/sh", "-c", _DETACH, str(log),
        sys.executable, "-m", SUPERVISOR_MODULE, "--db", str(store_path), run_id,
    ]  # fmt: skip
    try:
        shell = subprocess.run(
            argv,
            # Exactly os.environ, not the C-level environment a plain spawn would inherit:
            # native code may set variables there behind Python's back (ncurses adds
            # COLUMNS and LINES under pytest), and the env_key digest must match.
            env=os.environ,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            start_new_session=True,
            timeout=_LAUNCH_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpawnError(f"could not start the run's supervisor: {exc}") from exc
    out = shell.stdout.strip()
    if shell.returncode != 0 or not out.isdigit():
        detail = shell.stderr.decode(errors="replace").strip() or f"exit {shell.returncode}"
        raise SpawnError(f"could not start the run's supervisor: {detail}")
    who = proc.identity(int(out))
    if who is None:
        raise SpawnError(f"the run's supervisor exited as soon as it started; see {log}")
    return who
