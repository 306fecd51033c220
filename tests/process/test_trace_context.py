"""W3C trace context in ``_meta`` and spans for the phases of a run, when the host traces with
OpenTelemetry; nothing at all (not even an import) when it does not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

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
