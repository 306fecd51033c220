"""Stream benchmark: how many ``session/update`` notifications per second a client reads.

    python benchmarks/stream.py [--n 100000] [--n-large 400000] [--rounds 3]

One synthetic agent (``stream_agent.py``) streams N ``agent_message_chunk`` notifications
in one prompt turn. In the same run, interleaved round by round, four clients read it:

- ``limit``: the agent spawned by hand, the handshake written by hand, then a bare
  ``readline()`` + ``json.loads`` loop over the N lines (nothing else: the ceiling);
- ``sdk``: the official Python SDK (``acp.spawn_agent_process``), counting its
  ``session_update`` callbacks and collecting the chunk texts;
- ``bridge``: ``acp_bridge.acp_spawn.acp_spawn`` with a profile for the stream agent,
  transcripts ON (the default);
- ``bridge-nt``: the same with transcripts switched off in the config.

Each measurement runs in a fresh worker process (this script with ``--worker``), so the
clients cannot share imports, caches or memory, and each reports its own peak RSS.
``turn`` is the prompt turn: from sending ``session/prompt`` to having its reply, every
update before it handled. ``updates/s`` is N / turn. Each ratio is also given from the CPU
time the clients spent in their turns (steadier than wall time on a loaded machine). Every
client must have received all N chunks: the limit counts them, the SDK and the bridge must
produce the exact concatenation of the chunk texts (for the bridge: the envelope's
``output``).

Ratios are taken within each round (the machine's speed drifts; a ratio of two runs made
side by side drifts less), then the median over the rounds is printed. A last round runs
every client at ``--n-large`` to show whether peak memory grows with N.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
AGENT = HERE / "stream_agent.py"
sys.path.insert(0, str(HERE))

from stream_agent import chunk_text  # noqa: E402

CLIENTS = ("limit", "sdk", "bridge", "bridge-nt")
WORKER_TIMEOUT = 600.0  # seconds; a deadlocked client fails the benchmark instead of hanging
WIDTH = int(os.environ.get("STREAM_WIDTH", "0"))
"""Characters per chunk (0: token-sized); set by ``--width``, passed to workers."""


# --- measurement helpers (run inside a worker) ---------------------------------------------


def _rss_kb() -> int:
    """Peak resident set size of this process so far, in KiB: the kernel's VmHWM. Not
    ``ru_maxrss``, which Linux carries across ``exec``: a worker started by a parent of
    56 MB would report 56 MB at least (the parent's, from before the exec)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:  # not Linux
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))


def _report(
    client: str, n: int, received: int, ok: bool, turn: float, wall: float, **extra: Any
) -> None:
    print(
        json.dumps(
            {
                "client": client,
                "n": n,
                "received": received,
                "ok": ok,
                "turn_s": turn,
                "wall_s": wall,
                "rate": n / turn if turn > 0 else 0.0,
                **extra,
            }
        )
    )


def chunks_in(output: str) -> tuple[int, bool]:
    """How many of the stream's chunks ``output`` starts with, in order, and whether that is
    all of ``output``. Checked piece by piece: building the expected text would itself cost
    memory in the worker whose peak RSS we report."""
    count, at = 0, 0
    while output.startswith(text := chunk_text(count, WIDTH), at):
        at += len(text)
        count += 1
    return count, at == len(output)


def _agent_argv(n: int) -> list[str]:
    return [sys.executable, str(AGENT), str(n), str(WIDTH)]


# --- the four clients ----------------------------------------------------------------------


def run_limit(n: int) -> None:
    """Bare stdlib: the handshake by hand, then readline + json.loads per line."""
    rss_before = _rss_kb()
    started = time.perf_counter()
    with subprocess.Popen(
        _agent_argv(n), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1 << 16
    ) as agent:
        assert agent.stdin is not None and agent.stdout is not None
        stdin, readline, loads = agent.stdin, agent.stdout.readline, json.loads

        def call(request_id: int, method: str, params: dict[str, Any]) -> None:
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            stdin.write(json.dumps(message).encode() + b"\n")
            stdin.flush()

        call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        loads(readline())
        call(2, "session/new", {"cwd": str(HERE), "mcpServers": []})
        session_id = loads(readline())["result"]["sessionId"]
        t0, c0 = time.perf_counter(), time.process_time()
        call(3, "session/prompt", {"sessionId": session_id, "prompt": []})
        updates = 0
        while True:
            message = loads(readline())
            if "id" in message:
                break
            updates += 1
        turn, cpu = time.perf_counter() - t0, time.process_time() - c0
        stdin.close()
        agent.wait(timeout=30)
    wall = time.perf_counter() - started
    peak = _rss_kb()
    _report(
        "limit", n, updates, updates == n, turn, wall,
        rss_before_kb=rss_before, peak_rss_kb=peak, turn_cpu_s=cpu,
    )  # fmt: skip


def run_sdk(n: int) -> None:
    """The official SDK client: a session_update callback per notification."""
    import acp
    from acp.schema import AgentMessageChunk, ClientCapabilities, Implementation, TextContentBlock

    class CountingClient:
        def __init__(self) -> None:
            self.updates = 0
            self.texts: list[str] = []

        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            self.updates += 1
            if isinstance(update, AgentMessageChunk) and isinstance(
                update.content, TextContentBlock
            ):
                self.texts.append(update.content.text)

        async def request_permission(self, **kwargs: Any) -> Any:
            raise acp.RequestError.method_not_found("session/request_permission")

        async def read_text_file(self, **kwargs: Any) -> Any:
            raise acp.RequestError.method_not_found("fs/read_text_file")

        async def write_text_file(self, **kwargs: Any) -> Any:
            raise acp.RequestError.method_not_found("fs/write_text_file")

        async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
            raise acp.RequestError.method_not_found(method)

        async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
            return None

    async def main() -> None:
        client = CountingClient()
        rss_before = _rss_kb()
        started = time.perf_counter()
        argv = _agent_argv(n)
        async with acp.spawn_agent_process(client, argv[0], *argv[1:]) as (conn, _process):
            await conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="bench-sdk", version="1"),
            )
            session = await conn.new_session(cwd=str(HERE), mcp_servers=[])
            t0, c0 = time.perf_counter(), time.process_time()
            reply = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("go")])
            turn, cpu = time.perf_counter() - t0, time.process_time() - c0
        wall = time.perf_counter() - started
        peak = _rss_kb()
        ok = (
            reply.stop_reason == "end_turn"
            and client.updates == len(client.texts) == n
            and all(text == chunk_text(i, WIDTH) for i, text in enumerate(client.texts))
        )
        _report(
            "sdk", n, client.updates, ok, turn, wall,
            rss_before_kb=rss_before, peak_rss_kb=peak, turn_cpu_s=cpu,
        )  # fmt: skip

    asyncio.run(main())


def _bridge_config(directory: Path, n: int, transcripts: bool) -> Path:
    config = {
        "transcripts": {"enabled": transcripts, "dir": str(directory / "transcripts")},
        "acp": {
            "agents": [
                {
                    "name": "stream",
                    "description": "benchmarks/stream_agent.py",
                    "command": sys.executable,
                    "args": [str(AGENT), str(n), str(WIDTH)],
                    "timeouts": {"startup": 60, "session": 60, "run": WORKER_TIMEOUT},
                }
            ]
        },
    }
    path = directory / "acp-bridge.yaml"
    path.write_text(json.dumps(config, indent=2))  # JSON is YAML
    return path


def run_bridge(n: int, transcripts: bool) -> None:
    """acp_spawn, in-process, exactly as a host calls it."""
    import anyio

    from acp_bridge._acp.session.acp_session import AcpSession
    from acp_bridge._acp.turn.messages import MAX_ANSWER_BYTES
    from acp_bridge._entries.acp_spawn.entry import acp_spawn
    from acp_bridge.config import load_config

    # The envelope has no per-phase timing, so the prompt turn is timed by wrapping the
    # session's prompt method (from session/prompt sent to its reply, updates included).
    turns: list[float] = []
    cpus: list[float] = []
    prompt = AcpSession.prompt

    async def timed_prompt(self: AcpSession, *args: Any, **kwargs: Any) -> Any:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return await prompt(self, *args, **kwargs)
        finally:
            turns.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)

    AcpSession.prompt = timed_prompt  # type: ignore[method-assign]
    name = "bridge" if transcripts else "bridge-nt"
    with tempfile.TemporaryDirectory(prefix="acp-bridge-bench-") as tmp:
        loaded = load_config(_bridge_config(Path(tmp), n, transcripts), search=False)
        rss_before = _rss_kb()
        started = time.perf_counter()
        results = []

        async def run() -> None:
            # Not returned from the coroutine: at loop shutdown asyncio may repr() the main
            # task's result, which for a multi-MB output is a transient spike we'd measure.
            results.append(await acp_spawn("stream", "go", config=loaded, cwd=tmp))

        anyio.run(run)
        result = results[0]
        wall = time.perf_counter() - started
        peak = _rss_kb()
        transcript = result.meta.transcript
        transcript_bytes = Path(transcript).stat().st_size if transcript else 0
    output = result.output if isinstance(result.output, str) else ""
    received, whole = chunks_in(output)
    # A long answer is kept up to its cap (messages.MAX_ANSWER_BYTES: ASCII here, a
    # byte a character), the chunk across it cut to its head.
    capped = bool(WIDTH) and received < n and len(output) == MAX_ANSWER_BYTES
    if capped and not whole:
        done_at = len(output) - len(output) % WIDTH if WIDTH else len(output)
        whole = chunk_text(received, WIDTH).startswith(output[done_at:])
    ok = result.status == "done" and (received == n or capped) and whole
    _report(
        name,
        n,
        received,
        ok,
        turns[0] if turns else 0.0,
        wall,
        rss_before_kb=rss_before,
        peak_rss_kb=peak,
        transcript_bytes=transcript_bytes,
        error=result.error,
        turn_cpu_s=cpus[0] if cpus else 0.0,
    )


def worker(client: str, n: int) -> None:
    if client == "limit":
        run_limit(n)
    elif client == "sdk":
        run_sdk(n)
    elif client in ("bridge", "bridge-nt"):
        run_bridge(n, transcripts=client == "bridge")
    else:
        raise SystemExit(f"unknown client {client!r}")


# --- the driver ---------------------------------------------------------------------------


def measure(client: str, n: int, width: int = 0) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", client, "--n", str(n)],
        env={**os.environ, "STREAM_WIDTH": str(width or WIDTH)},
        capture_output=True,
        text=True,
        timeout=WORKER_TIMEOUT,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{client} worker failed (exit {proc.returncode}):\n{proc.stderr}")
    return dict(json.loads(lines[-1]))


def _spread(values: list[float], fmt: str) -> str:
    median = statistics.median(values)
    if len(values) == 1:
        return format(median, fmt)
    return f"{format(median, fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="chunks per turn")
    parser.add_argument("--n-large", type=int, default=400_000, help="chunks for the memory round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds at --n")
    parser.add_argument("--width", type=int, default=0, help="characters per chunk (0: short)")
    parser.add_argument("--clients", default=",".join(CLIENTS), help="comma-separated")
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.n)
        return 0
    if args.width:
        global WIDTH
        WIDTH = args.width

    clients = [c for c in args.clients.split(",") if c]
    print(
        f"stream benchmark: N={args.n:,} chunks, {args.rounds} interleaved rounds, "
        f"then N={args.n_large:,}; python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    )
    rounds: list[dict[str, dict[str, Any]]] = []
    for number in range(1, args.rounds + 1):
        rounds.append({c: measure(c, args.n) for c in clients})
        row = "  ".join(f"{c} {r['rate']:,.0f}/s" for c, r in rounds[-1].items())
        print(f"  round {number}: {row}", flush=True)
    large = {c: measure(c, args.n_large) for c in clients} if args.n_large else {}
    if large:
        row = "  ".join(f"{c} {r['rate']:,.0f}/s" for c, r in large.items())
        print(f"  N={args.n_large:,}: {row}", flush=True)

    failures = [
        f"{r['client']} N={r['n']}: received {r['received']:,}, expected {r['n']:,} "
        f"{r.get('error') or ''}".rstrip()
        for r in [*(m for rnd in rounds for m in rnd.values()), *large.values()]
        if not r["ok"]
    ]

    print()
    header = f"{'client':<10} {'updates/s (median, min–max)':>32} {'turn s':>7} {'wall s':>7}"
    header += f" {'peak RSS MB':>11}"
    if large:
        header += f" {'@' + format(args.n_large, ','):>11} {'growth MB':>9}"
    print(header)
    for client in clients:
        runs = [rnd[client] for rnd in rounds]
        line = (
            f"{client:<10} {_spread([r['rate'] for r in runs], ',.0f'):>32} "
            f"{statistics.median(r['turn_s'] for r in runs):>7.3f} "
            f"{statistics.median(r['wall_s'] for r in runs):>7.3f} "
            f"{statistics.median(r['peak_rss_kb'] for r in runs) / 1024:>11.1f}"
        )
        if large:
            big = large[client]
            small = statistics.median(r["peak_rss_kb"] for r in runs)
            line += (
                f" {big['peak_rss_kb'] / 1024:>11.1f} {(big['peak_rss_kb'] - small) / 1024:>9.1f}"
            )
        print(line)

    def ratio(a: str, b: str) -> list[float]:
        return [rnd[a]["rate"] / rnd[b]["rate"] for rnd in rounds if a in rnd and b in rnd]

    def cpu_ratio(a: str, b: str) -> list[float]:
        """Speed a/b from the CPU each client spent in the turn: steadier than wall time on
        a loaded machine (the agent's writes and other work share the cores)."""
        return [
            rnd[b]["turn_cpu_s"] / rnd[a]["turn_cpu_s"] for rnd in rounds if a in rnd and b in rnd
        ]

    print()
    for a, b in (("bridge", "sdk"), ("bridge", "limit"), ("bridge-nt", "bridge"), ("sdk", "limit")):
        values = ratio(a, b)
        if values:
            print(
                f"{a}/{b}: {_spread(values, '.2f')}  by turn CPU: {_spread(cpu_ratio(a, b), '.2f')}"
            )
    if "bridge" in clients:
        rate = statistics.median(r["bridge"]["rate"] for r in rounds)
        checks = [(f"bridge ≥ 100,000 updates/s: {rate:,.0f}", rate >= 100_000)]
        if "sdk" in clients:
            vs_sdk = statistics.median(ratio("bridge", "sdk"))
            checks.append((f"bridge ≥ 2.5× the SDK: {vs_sdk:.2f}×", vs_sdk >= 2.5))
        if "limit" in clients:
            vs_limit = statistics.median(ratio("limit", "bridge"))
            checks.append((f"bridge within 2.5× of the limit: {vs_limit:.2f}×", vs_limit <= 2.5))
        print()
        for text, met in checks:
            print(f"{'met ' if met else 'MISS'}  {text}")
    if args.json:
        args.json.write_text(json.dumps({"rounds": rounds, "large": large}, indent=2))
    for failure in failures:
        print(f"FAILED CHECK: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
