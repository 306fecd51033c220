"""W3C trace context in ``_meta`` and spans for the phases of a run, when the host traces with
OpenTelemetry; nothing at all (not even an import) when it does not."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.helpers import new_repo
from tests.spy import Spy

# Run in a fresh interpreter: OpenTelemetry's tracer provider is process-global, and the
# rest of the suite must run as a host without OpenTelemetry does.
TRACED_RUN = """
import json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pathlib import Path
from acp_bridge import acp_spawn_sync, load_config

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
config = load_config(Path(sys.argv[1]), search=False)
with trace.get_tracer("host").start_as_current_span("host work") as host:
    result = acp_spawn_sync("spy", "hi", config=config, cwd=sys.argv[2])
spans = [
    {"name": s.name, "id": f"{s.context.span_id:016x}", "trace": f"{s.context.trace_id:032x}",
     "parent": f"{s.parent.span_id:016x}" if s.parent else None,
     "attributes": dict(s.attributes or {})}
    for s in exporter.get_finished_spans()
]
print(json.dumps({"result": result.to_dict(), "spans": spans}))
"""


def _traced_run(spy: Spy, config_path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", TRACED_RUN, str(config_path), str(spy.harness.workspace)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_requests_carry_the_hosts_trace_and_phases_are_spans(spy: Spy) -> None:
    caps = {"sessionCapabilities": {"close": {}}}
    spy.config({"initialize": {"agentCapabilities": caps}})
    traced = _traced_run(spy, spy.harness.root / "acp-bridge.yaml")
    result, spans = traced["result"], {s["name"]: s for s in traced["spans"]}
    assert result["status"] == "done", result["error"]
    host, run = spans["host work"], spans["acp_bridge.acp_spawn"]
    assert result["meta"]["trace_id"] == host["trace"] == run["trace"]
    assert run["parent"] == host["id"]
    assert run["attributes"]["acp.session_id"] == "spy-session-1"
    assert run["attributes"]["acp.status"] == "done"
    phases = ["acp.initialize", "acp.session", "acp.prompt", "acp.shutdown"]
    assert all(spans[p]["parent"] == run["id"] for p in phases)
    sent = [m for m in spy.received() if "method" in m]
    methods = ["initialize", "session/new", "session/prompt", "session/close"]
    assert [m["method"] for m in sent] == methods
    for message, phase in zip(sent, phases, strict=True):
        version, trace_id, span_id, _flags = message["params"]["_meta"]["traceparent"].split("-")
        assert (version, trace_id, span_id) == ("00", host["trace"], spans[phase]["id"]), phase


def test_without_opentelemetry_nothing_is_imported_or_sent(tmp_path: Path) -> None:
    # A fresh interpreter: this test process has imported OpenTelemetry already.
    code = (
        "import sys, json\n"
        "from acp_bridge import acp_spawn_sync\n"
        "r = acp_spawn_sync('demo', 'Reply with exactly OK')\n"
        "print(json.dumps([r.status, r.meta.trace_id, r.meta.transcript,\n"
        "                  any(m.startswith('opentelemetry') for m in sys.modules)]))\n"
    )
    home, work = tmp_path / "home", tmp_path / "work"  # a run never works in the home folder
    home.mkdir()
    work.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_STATE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=str(work),
    )
    status, trace_id, transcript, imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert (status, trace_id, imported) == ("done", None, False)
    with open(transcript) as lines:
        sent = [json.loads(line)["msg"] for line in lines if '"dir":"out"' in line]
    assert sent and not any("_meta" in m.get("params", {}) for m in sent)


# A host that traces and runs a batch, a compare and a smoke suite on the demo agent; its
# exporter is in memory, the agents' is the collector on 127.0.0.1 the test runs.
TRACED_FAN_OUT = """
import json, sys
import anyio
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pathlib import Path
from acp_bridge import batch_sync, compare_sync, load_config
from acp_bridge.smoke._suite import expand, load_suite
from acp_bridge.smoke._suite_run import SmokeSettings, SuiteRun

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
config = load_config()
repo, suite = sys.argv[1], Path(sys.argv[2])
tasks = [{"key": k, "entry": "acp_spawn", "agent": "demo", "task": "Reply with exactly " + t}
         for k, t in (("a", "A"), ("b", sys.argv[3]))]
with trace.get_tracer("host").start_as_current_span("host work"):
    results = batch_sync(tasks, config=config)
    done = [r.status for r in results]
    compared = compare_sync("demo", "write made.txt: yes", config=config, cwd=repo)
    runs, _ = expand([load_suite(suite)])
    cases = anyio.run(SuiteRun(config, SmokeSettings()).run, runs, anyio.Event())
spans = [
    {"name": s.name, "id": f"{s.context.span_id:016x}", "trace": f"{s.context.trace_id:032x}",
     "parent": f"{s.parent.span_id:016x}" if s.parent else None,
     "status": s.status.status_code.name, "attributes": dict(s.attributes or {})}
    for s in exporter.get_finished_spans()
]
print(json.dumps({"batch": done, "transcripts": [r.meta.transcript for r in results],
                  "compare": [a.status for a in compared.attempts],
                  "smoke": [c.verdict for c in cases], "spans": spans}))
"""

HEADER_SECRET = "x-otlp-token=sekrit-otlp-7"

SUITE = """\
name: traced
cases:
  - name: replies
    entry: acp_spawn
    agents: [demo]
    task: Reply with exactly SMOKE
    expect: {status: done, output: SMOKE}
"""


class _Collector(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver of JSON traces: what it got, by path."""

    received: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, json.loads(body)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the test reads what it got, not a log on stderr


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    received: list[tuple[str, dict[str, Any]]] = []
    handler = type("Handler", (_Collector,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_one_trace_from_the_host_through_tasks_attempts_cases_and_the_agents_spans(
    tmp_path: Path, collector: tuple[str, list[tuple[str, dict[str, Any]]]]
) -> None:
    endpoint, received = collector
    repo = new_repo(tmp_path / "repo")
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "GIT_CONFIG_GLOBAL": os.environ.get("GIT_CONFIG_GLOBAL", "/dev/null"),
        # The user's own settings: the host's endpoint, and JSON (what the demo speaks)
        # where the bridge would say http/protobuf.
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        # the collector's credentials: passed to the agents, never written down
        "OTEL_EXPORTER_OTLP_HEADERS": HEADER_SECRET,
    }
    done = subprocess.run(
        [sys.executable, "-c", TRACED_FAN_OUT, str(repo), str(suite), HEADER_SECRET],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=str(work),
    )
    assert done.returncode == 0, done.stderr
    traced = json.loads(done.stdout.strip().splitlines()[-1])
    assert traced["batch"] == ["done", "done"]
    for transcript in traced["transcripts"]:  # task b's agent said the headers back
        text = Path(transcript).read_text()
        assert "Reply with exactly" in text and HEADER_SECRET not in text
    assert traced["compare"] == ["done"]
    assert traced["smoke"] == ["passed"]
    spans = traced["spans"]
    by_id = {s["id"]: s for s in spans}
    (host,) = [s for s in spans if s["name"] == "host work"]
    assert {s["trace"] for s in spans} == {host["trace"]}

    def named(name: str) -> list[dict[str, Any]]:
        return [s for s in spans if s["name"] == name]

    units = {
        "acp_bridge.batch.task": ("acp_bridge.batch", {"a", "b"}, "done"),
        "acp_bridge.compare.attempt": ("acp_bridge.compare", {"demo#1"}, "done"),
        "acp_bridge.smoke.case": ("acp_bridge.smoke", {"traced::replies [demo]"}, "done"),
    }
    for unit, (whole, keys, status) in units.items():
        (outer,) = named(whole)
        assert outer["parent"] == host["id"], whole
        found = named(unit)
        assert {s["attributes"]["acp.batch.key"] for s in found} == keys, unit
        for span in found:
            assert span["parent"] == outer["id"]
            assert span["attributes"]["acp.status"] == status
            assert span["attributes"]["acp.node"]
            assert span["status"] == "OK"
            # the run under it: its acp_spawn span is the task's child
            (run,) = [s for s in named("acp_bridge.acp_spawn") if s["parent"] == span["id"]]
            assert run["attributes"]["acp.task_id"] == span["attributes"]["acp.task_id"]
    (case,) = named("acp_bridge.smoke.case")
    assert case["attributes"]["acp.smoke.verdict"] == "passed"
    # The agents' own spans, exported with the settings they were given, as children of the
    # prompt that carried them (its traceparent).
    prompts = {s["id"] for s in named("acp.prompt")}
    assert len(prompts) == 4  # two tasks, one attempt, one case
    agent_spans = []
    for path, body in received:
        assert path == "/v1/traces"
        for resource in body["resourceSpans"]:
            attributes = {
                a["key"]: a["value"]["stringValue"] for a in resource["resource"]["attributes"]
            }
            assert attributes["service.name"] == "demo"  # OTEL_SERVICE_NAME: the profile's name
            for scope in resource["scopeSpans"]:
                agent_spans += scope["spans"]
    assert len(agent_spans) == 4
    for span in agent_spans:
        assert span["traceId"] == host["trace"]
        assert span["parentSpanId"] in prompts
        assert by_id[span["parentSpanId"]]["name"] == "acp.prompt"
