"""Where the demo agent exports its span: only over OTLP/HTTP JSON, as its client says."""

from __future__ import annotations

from acp_bridge._demo.telemetry import traces_url


def test_the_traces_endpoint_from_the_base_or_the_signals_own() -> None:
    base = {
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1/",
    }
    assert traces_url(base) == "http://h:1/v1/traces"
    own = {**base, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:2/spans"}
    assert traces_url(own) == "http://t:2/spans"


def test_no_export_without_json_or_an_endpoint() -> None:
    assert traces_url({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1"}) is None  # protobuf
    assert traces_url({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}) is None
