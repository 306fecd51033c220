"""The agent's environment under ACP's telemetry-export guidance (Tracing.agent_env)."""

from __future__ import annotations

from acp_bridge._acp.session.tracing import Tracing

HOST = {
    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
    "OTEL_RESOURCE_ATTRIBUTES": "team=tools",
    "OTHER": "x",
}


def test_a_host_that_does_not_trace_gives_no_otel_settings() -> None:
    env = {"PATH": "/bin"}
    assert Tracing().agent_env(env, "demo", HOST) == env
    assert Tracing(exports=False).agent_env(env, "demo", HOST) == env


def test_the_hosts_settings_pass_and_the_guidances_names_are_filled_in() -> None:
    env = Tracing(exports=True).agent_env({"PATH": "/bin"}, "demo", HOST)
    assert env == {
        "PATH": "/bin",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
        "OTEL_RESOURCE_ATTRIBUTES": "team=tools",
        "OTEL_SERVICE_NAME": "demo",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    }


def test_what_the_user_set_is_never_overridden() -> None:
    host = {**HOST, "OTEL_SERVICE_NAME": "mine", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    profile = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}  # the profile's env
    env = Tracing(exports=True).agent_env(profile, "demo", host)
    assert env["OTEL_SERVICE_NAME"] == "mine"
    assert env["OTEL_EXPORTER_OTLP_PROTOCOL"] == "grpc"
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://collector:4318"


def test_opentelemetry_imported_without_a_tracer_provider_is_not_tracing() -> None:
    # The API's default provider records nothing: its agents get no OTEL_* settings.
    # (This process never sets a provider: the traced runs are fresh interpreters.)
    import opentelemetry.trace  # noqa: F401

    tracing = Tracing.from_host()
    assert tracing.enabled and not tracing.exports
    assert tracing.agent_env({}, "demo", HOST) == {}
