"""The agent's stdin and stdout, handed to the agent inside bubblewrap past bwrap's own
processes.

Why: a child inherits its stdio from whoever starts it, and under bubblewrap that is bwrap
— the outer bwrap and its init (PID 1 of the sandbox) both keep fds 0, 1 and 2 for as long
as the sandbox lives. An agent that closed its stdout and kept running was then never seen
to close it (the pipe still had writers): the run waited for its timeout instead of ending
``agent_exited``, as it does without a sandbox.

How: bwrap's two processes close every inherited fd above 2 (they pass them on to the
command, then drop their own copies: ``close_extra_fds`` in bubblewrap.c, in the monitor
and in the init). So the pipes travel above 2: the process we start is a POSIX shell
(:func:`outer_argv`) that moves the pipes it gets as stdin and stdout to fds 3 and 4, puts
``/dev/null`` at 0 and 1, and ``exec``\\s bwrap; the command bwrap runs is another shell
(:func:`handoff_argv`) that moves 3 and 4 back to 0 and 1, closes them, and ``exec``\\s
the agent (keeping its pid, PID 2 of the sandbox). The bridge reads and writes the pipes as
any child's. stderr stays inherited: bwrap's own messages go there too, and nothing waits
for its end.

Cost: two ``exec``\\s of ``/bin/sh`` (~1 ms of CPU each). It replaced a Python shim that
took the pipes over a unix socket (``SCM_RIGHTS``): ~10 ms of CPU per sandboxed agent, and
sending file descriptors blocked the event loop for ~7 ms a run when 64 started at once.
"""

from __future__ import annotations

SHELL = "/bin/sh"
"""POSIX's shell: on the host, and inside the sandbox (the system is mounted read-only)."""
# dash takes only one-digit fds in redirections, hence 3 and 4 (free: a child keeps no fd
# above 2 that it was not given, and bwrap is given none before these).
_OUTER = 'exec "$@" 3<&0 4>&1 0</dev/null 1>/dev/null'
_INNER = 'exec "$@" 0<&3 1>&4 3<&- 4>&-'


def outer_argv(argv: list[str]) -> list[str]:
    """``argv`` (the bwrap command line) started with the pipes it gets as stdin and stdout
    moved to fds 3 and 4, and ``/dev/null`` as its own stdin and stdout."""
    return [SHELL, "-c", _OUTER, "sh", *argv]


def handoff_argv(argv: list[str]) -> list[str]:
    """``argv`` (the agent, inside bwrap) run with fds 3 and 4 as its stdin and stdout."""
    return [SHELL, "-c", _INNER, "sh", *argv]
