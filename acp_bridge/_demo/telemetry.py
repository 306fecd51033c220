"""The demo agent's own span, exported the way ACP's telemetry-export guidance asks agents to:
configured only by the ``OTEL_*`` variables its client set, parented by the ``traceparent``
in the prompt's ``_meta``. Standard library only (see _demo/agent.py), so it speaks only
OTLP/HTTP with JSON bodies: under any other ``OTEL_EXPORTER_OTLP_PROTOCOL`` (or without an
endpoint or a traceparent) it exports nothing, as an agent without an SDK would.
"""

from __future__ import annotations

import json
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EXPORT_TIMEOUT = 2.0
"""Seconds an export may take: a collector that does not answer must not hold up a turn."""


def traces_url(environ: dict[str, str]) -> str | None:
    """Where spans go (the signal's own endpoint, else the base one + ``/v1/traces``), or
    None when the client configured no OTLP/HTTP JSON export."""
    if environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "") != "http/json":
        return None
    if environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
    return base.rstrip("/") + "/v1/traces" if base else None


def export_span(
    name: str, meta: dict[str, Any], started_ns: int, attributes: dict[str, str]
) -> None:
    """One finished span, a child of ``meta``'s ``traceparent``; best effort (a collector
    that is down loses the span, never the turn)."""
    url = traces_url(dict(os.environ))
    parts = str(meta.get("traceparent", "")).split("-")
    if url is None or len(parts) != 4:
        return
    _version, trace_id, parent_id, _flags = parts
    span = {
        "traceId": trace_id,
        "spanId": os.urandom(8).hex(),
        "parentSpanId": parent_id,
        "name": name,
        "kind": 1,  # internal
        "startTimeUnixNano": str(started_ns),
        "endTimeUnixNano": str(time.time_ns()),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }
    service = os.environ.get("OTEL_SERVICE_NAME", "acp-bridge-demo")
    body = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": service}}]
                },
                "scopeSpans": [{"scope": {"name": "acp_bridge._demo"}, "spans": [span]}],
            }
        ]
    }
    # Imported here: only an agent told to export pays for urllib (and ssl).
    import urllib.request

    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=EXPORT_TIMEOUT) as answer:
            answer.read()
    except OSError:
        pass  # best effort: the guidance's collectors are optional
