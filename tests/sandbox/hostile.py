"""A hostile "agent" acting on its own, run inside the sandbox by the tests.

Usage: ``python hostile.py MARKER CONFIG_JSON``. Every process it starts carries MARKER in
its command line (forked children share it; the ``env -i`` child gets it as an argument),
so the test finds survivors by command line — environments are scrubbed by ``env -i``.

It tries to write, delete, list and read outside its roots, to read the bridge's
environment through ``/proc``, starts a ``setsid`` double-fork daemon and an ``env -i``
daemon (both ignoring SIGTERM) and 100 forked children, then prints one JSON report line.
``"stay": true`` keeps it running afterwards (the test ends it); on SIGTERM it prints
``TERM`` and exits 0, so a graceful stop can be told from a kill.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

CHILDREN = 100
SLEEPER = "import signal, time, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
SLEEPER += "os = __import__('os'); os.write(int(sys.argv[1]), b'e'); time.sleep(600)"


def attempt(fn: Callable[[], object]) -> str:
    try:
        result = fn()
    except OSError as exc:
        return f"denied:{exc.errno}"
    return f"ok:{result!r}"[:200]


def write(path: str) -> int:
    with open(path, "w") as f:
        return f.write("hostile\n")


def read(path: str) -> str:
    with open(path, "rb") as f:
        return f.read(200).decode("utf-8", "replace")


def environ_leaks(token: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if token.encode() in f.read():
                        with open(f"/proc/{entry}/cmdline", "rb") as c:
                            command = c.read(300).replace(b"\0", b" ").decode("utf-8", "replace")
                        found.append(f"{entry} {command}")
            except OSError:
                continue
    return found


def daemonize(ready: int) -> None:
    """Classic double fork + setsid; the grandchild ignores SIGTERM and sleeps."""
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    os.write(ready, b"d")
    time.sleep(600)
    os._exit(0)


def main() -> None:
    marker, config = sys.argv[1], json.loads(sys.argv[2])
    report: dict[str, object] = {"pid": os.getpid(), "ppid": os.getppid()}
    report["writes"] = {p: attempt(lambda p=p: write(p)) for p in config["writes"]}
    report["deletes"] = {p: attempt(lambda p=p: os.unlink(p)) for p in config["deletes"]}
    report["lists"] = {p: attempt(lambda p=p: len(os.listdir(p))) for p in config["lists"]}
    report["reads"] = {p: attempt(lambda p=p: read(p)) for p in config["reads"]}
    report["inside"] = attempt(lambda: write(config["inside"]))
    report["tmpdir"] = attempt(
        lambda: write(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"t{os.getpid()}"))
    )
    report["ppid_environ"] = attempt(lambda: read(f"/proc/{os.getppid()}/environ"))
    report["environ_leaks"] = environ_leaks(config["token"])

    ready_r, ready_w = os.pipe()
    daemonize(ready_w)
    subprocess.Popen(
        ["env", "-i", sys.executable, "-c", SLEEPER, str(ready_w), marker],
        start_new_session=True,
        pass_fds=(ready_w,),
    )
    for _ in range(CHILDREN):
        if os.fork() == 0:
            os.write(ready_w, b"c")
            time.sleep(600)
            os._exit(0)
    got = b""
    while len(got) < CHILDREN + 2:
        got += os.read(ready_r, 512)
    report["started"] = len(got)

    def on_term(signo: int, frame: object) -> None:
        os.write(1, b"TERM\n")  # not print(): the main thread may be inside print() still
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    with open(config["report"] + ".part", "w") as f:
        json.dump(report, f)
    os.rename(config["report"] + ".part", config["report"])
    print(json.dumps(report), flush=True)
    if config.get("stay"):
        time.sleep(600)


if __name__ == "__main__":
    main()
