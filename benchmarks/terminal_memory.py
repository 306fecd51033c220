"""Terminal memory: 1 GiB of command output through a 1 MiB ``outputByteLimit``.

Runs through the real :class:`TerminalService` (process, pipe, pump, ring buffer) and prints
the bridge process's peak RSS (VmHWM) for a trivial command (the reference) and for the
1 GiB command, as a ratio, plus the check that the kept text is exactly the stream's last
bytes, cut on a character boundary. Linux only (/proc/self/status, /proc/self/clear_refs).

    .venv/bin/python benchmarks/terminal_memory.py [--gib 1] [--limit-mib 1]

The command writes a known stream: the 10-byte block "aé€😀" (characters of 1, 2, 3 and 4
bytes) over and over, then "abcd" so the total is a whole number of GiB. The last MiB then
starts in the middle of 😀, so the kept text must drop its last two bytes at the front.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from acp_bridge._acp.services.terminals import TerminalService
from acp_bridge._os.fs.roots import Roots
from acp_bridge._os.process.environment import constructed_env
from acp_bridge.config import TerminalSettings

BLOCK = "aé€😀".encode()
END = b"abcd"
PRODUCER = f"""
import os, sys
total, block, end = int(sys.argv[1]), {BLOCK!r}, {END!r}
blocks, extra = divmod(total - len(end), len(block))
assert extra == 0, "total must be len(end) more than a multiple of the block"
chunk_blocks = (1 << 20) // len(block)
chunk = block * chunk_blocks
out = sys.stdout.buffer
for _ in range(blocks // chunk_blocks):
    out.write(chunk)
out.write(block * (blocks % chunk_blocks) + end)
out.flush()
"""


def peak_rss_kib() -> int:
    status = Path("/proc/self/status").read_text()
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    assert match, "no VmHWM in /proc/self/status"
    return int(match.group(1))


def reset_peak_rss() -> None:
    """Make VmHWM start again from the current RSS (Linux >= 4.0)."""
    Path("/proc/self/clear_refs").write_text("5")


def expected_tail(total: int, limit: int) -> bytes:
    """The true last ``limit`` bytes of the stream, minus a character cut at the front."""
    blocks = limit // len(BLOCK) + 2
    stream_end = (BLOCK * blocks + END)[-limit:] if total > limit else b""
    skip = 0
    while skip < 3 and stream_end[skip] & 0xC0 == 0x80:
        skip += 1
    return stream_end[skip:]


async def run(command: str, args: list[str], limit: int, cwd: Path) -> Measured:
    """Run one command through a TerminalService; peak RSS is read after the command
    (the pump and the ring) and again after ``terminal/output`` (the reply's text)."""
    async with anyio.create_task_group() as tg:
        service = TerminalService(
            roots=Roots.for_session(cwd),
            cwd=cwd,
            env=constructed_env(depth=1),
            settings=TerminalSettings(output_byte_limit=limit, timeout=600),
            tg=tg,
        )
        started = time.perf_counter()
        created = await service.create(sessionId="bench", command=command, args=args)
        await service.wait_for_exit(sessionId="bench", **created)
        elapsed = time.perf_counter() - started
        pumped_peak = peak_rss_kib()
        output = await service.output(sessionId="bench", **created)
        await service.release(sessionId="bench", **created)
        tg.cancel_scope.cancel()
    return Measured(output, elapsed, pumped_peak, peak_rss_kib())


@dataclass
class Measured:
    output: dict[str, Any]
    elapsed: float
    peak_after_run: int  # KiB
    peak_after_output: int  # KiB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="output size in GiB")
    parser.add_argument("--limit-mib", type=float, default=1.0, help="outputByteLimit in MiB")
    options = parser.parse_args()
    limit = int(options.limit_mib * (1 << 20))
    total = int(options.gib * (1 << 30))
    total -= (total - len(END)) % len(BLOCK)  # a whole number of blocks, then END

    with tempfile.TemporaryDirectory() as scratch:
        cwd = Path(scratch)
        reference = anyio.run(run, "true", [], limit, cwd)
        reset_peak_rss()
        big = anyio.run(run, sys.executable, ["-c", PRODUCER, str(total)], limit, cwd)

    kept = str(big.output["output"]).encode()
    exact = kept == expected_tail(total, limit)
    base = reference.peak_after_output
    mib = 1024.0
    print(f"output:              {total:,} bytes through outputByteLimit {limit:,}")
    print(f"time:                {big.elapsed:.2f} s ({total / big.elapsed / 1e6:,.0f} MB/s)")
    print(f"peak RSS, `true`:    {base / mib:.1f} MiB (reference: same process, same service)")
    print(
        f"peak RSS, big run:   {big.peak_after_run / mib:.1f} MiB after the command "
        f"({big.peak_after_run / base:.2f}x), {big.peak_after_output / mib:.1f} MiB after "
        f"terminal/output ({big.peak_after_output / base:.2f}x)"
    )
    print(f"kept:                {len(kept):,} bytes, truncated={big.output['truncated']}")
    print(f"exact last bytes:    {'yes' if exact else 'NO'} (cut on a character boundary)")
    ok = exact and big.output["truncated"] and reference.output["output"] == ""
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
