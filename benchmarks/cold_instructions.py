"""Cold start counted in instructions: the same work every time, on a noisy machine too.

    python benchmarks/cold_instructions.py [--base PATH] [--ladder]

Timings of a cold ``acp-bridge run`` swing by ±15% from run to run on a shared 2-core
machine, which hides a change worth 2%. The number of instructions the bridge process
executes (valgrind's callgrind, user space only: no kernel, no cache misses, so a proxy for
CPU time, not a measure of it) repeats within 0.1%. This counts them for

- ``bridge``: ``acp-bridge run demo "Reply with exactly OK"`` with this tree (the bridge
  process only; the demo agent and bubblewrap are children, not counted);
- ``base``: the same with ``--base`` (the ``acp-bridge`` of another tree with its own venv,
  e.g. the tree before a change), and the ratio bridge/base;
- ``--ladder``: what each layer of the run's imports adds, each step importing one more
  (the interpreter, asyncio, pydantic, the config package, the wire schema, the entry,
  the command line), to see where a cold run's instructions go.

Needs ``valgrind`` (Debian: ``apt-get install valgrind``). The timed figures of record stay
those of ``cold_start.py`` and ``quick.py``; this is for deciding which change is worth it.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import acp_bridge

TASK = "Reply with exactly OK"
TIMEOUT = 600.0  # a run under valgrind is ~50 times slower
LADDER = (
    ("the interpreter", "pass"),
    ("asyncio + anyio", "import asyncio, anyio"),
    ("pydantic", "from pydantic import BaseModel"),
    ("the config package", "import acp_bridge.config"),
    ("the ACP wire schema", "import acp_bridge._acp.wire.schema"),
    ("the envelope", "import acp_bridge.envelope"),
    ("the acp_spawn entry", "import acp_bridge._entries.acp_spawn.entry"),
    (
        "the command line",
        "import acp_bridge.cli._run_commands.entry_commands, acp_bridge.cli._parser",
    ),
)


def instructions(argv: list[str], env: dict[str, str], cwd: Path) -> int:
    """Instructions the process ``argv`` executes (its children not counted)."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=TIMEOUT,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or not found:
        raise SystemExit(f"{argv[0]} under valgrind: exit {done.returncode}\n{done.stderr}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="the acp-bridge command of the tree to compare with")
    parser.add_argument("--ladder", action="store_true", help="what each import layer adds")
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    # An editable install on a machine that sets PYTHONDONTWRITEBYTECODE never compiles the
    # package: every run would count the compiler (cold_start.py does the same).
    compileall.compile_dir(Path(acp_bridge.__file__).parent, quiet=1)
    bridge = str(Path(sys.executable).with_name("acp-bridge"))
    with tempfile.TemporaryDirectory(prefix="acp-bridge-instructions-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_BRIDGE_")}
        env.update(XDG_CONFIG_HOME=str(work / "config"), XDG_STATE_HOME=str(work / "state"))
        ours = instructions([bridge, "run", "demo", TASK], env, work)
        print(f"bridge  {ours / 1e9:.3f} G instructions")
        if args.base:
            base_package = subprocess.run(
                [str(Path(args.base).with_name("python")), "-c",
                 "import acp_bridge, os; print(os.path.dirname(acp_bridge.__file__))"],
                capture_output=True, text=True, check=True, timeout=60,
            ).stdout.strip()  # fmt: skip
            compileall.compile_dir(base_package, quiet=1)
            theirs = instructions([args.base, "run", "demo", TASK], env, work)
            print(f"base    {theirs / 1e9:.3f} G instructions")
            print(f"bridge/base: {ours / theirs:.3f}")
        if args.ladder:
            previous, program = 0, "import gc; gc.disable()"
            for name, statement in LADDER:
                program += f"; {statement}"
                count = instructions([sys.executable, "-c", program], env, work)
                print(f"{count / 1e6:7.0f} M  +{(count - previous) / 1e6:5.0f} M  {name}")
                previous = count
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
