"""Optional OpenTelemetry: spans for the phases of a run, and W3C trace context in ``_meta``.

ACP reserves the root ``_meta`` keys ``traceparent``, ``tracestate`` and ``baggage`` for W3C
trace context, so an agent that traces can join the host's trace. When the host uses
OpenTelemetry, every request we send carries the context of the phase span it belongs to
(``acp.initialize``, ``acp.session``, ``acp.prompt``, ``acp.shutdown``, all under one
``acp_bridge.acp_spawn`` span, itself under whatever span the host had open).

Zero cost without it: the bridge never imports OpenTelemetry itself. It looks for
``opentelemetry.trace`` among the modules the host already imported (a host that did not
import it has no trace context to pass on), so a run without it pays one dict lookup, and
the ``otel`` extra only says which versions we test with.

ACP's telemetry-export guidance (the ``agent-telemetry-export`` RFD) adds the other half: a
client that traces passes the standard ``OTEL_*`` exporter settings to the agents it starts,
so an agent with an OpenTelemetry SDK exports its own spans where the host's go, and the
``traceparent`` in ``_meta`` makes them children of ours. :meth:`Tracing.agent_env` does
that, only when the host has a tracer provider set (the API's default provider records
nothing, so there is nothing to join).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from acp_bridge._version import __version__

TRACE_KEYS = ("traceparent", "tracestate", "baggage")

OTEL_PREFIX = "OTEL_"
DEFAULT_PROTOCOL = "http/protobuf"
"""What the guidance names, and what every OpenTelemetry SDK reads (``grpc`` is the other
choice some SDKs default to: saying it keeps an agent's SDK and the host's collector agreed)."""


class Tracing:
    """Spans and trace context for one run; every method is a no-op without OpenTelemetry."""

    def __init__(self, tracer: Any = None, propagate: Any = None, *, exports: bool = False) -> None:
        self._tracer = tracer
        self._propagate = propagate
        self.exports = exports
        """The host has a tracer provider set: its agents get the ``OTEL_*`` settings."""
        self.trace_id: str | None = None
        """The run's trace id (32 hex digits) once its span started, if it is recorded."""

    @classmethod
    def from_host(cls) -> Tracing:
        if "opentelemetry.trace" not in sys.modules:
            return cls()
        try:
            from opentelemetry import propagate, trace
        except ImportError:  # a half-installed OpenTelemetry must not break runs
            return cls()
        # The API's own providers record nothing: a host that set none does not trace.
        idle = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
        exports = not isinstance(trace.get_tracer_provider(), idle)
        return cls(trace.get_tracer("acp_bridge", __version__), propagate, exports=exports)

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    @contextmanager
    def span(self, name: str, **attributes: Any) -> Iterator[Any]:
        """A span around one phase (the current span inside); None without OpenTelemetry."""
        if self._tracer is None:
            yield None
            return
        clean = {k: v for k, v in attributes.items() if v is not None}
        with self._tracer.start_as_current_span(name, attributes=clean) as span:
            context = span.get_span_context()
            if self.trace_id is None and context.is_valid:
                self.trace_id = f"{context.trace_id:032x}"
            yield span

    def meta(self) -> dict[str, str]:
        """The reserved ``_meta`` keys for the current context (empty when there is none)."""
        if self._propagate is None:
            return {}
        carrier: dict[str, str] = {}
        self._propagate.inject(carrier)
        return {key: carrier[key] for key in TRACE_KEYS if key in carrier}

    def with_meta(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` with the trace context added to its ``_meta`` (unchanged without)."""
        trace = self.meta()
        if not trace:
            return dict(params)
        existing = params.get("_meta")
        meta = {**existing, **trace} if isinstance(existing, dict) else trace
        return {**params, "_meta": meta}

    def agent_env(
        self, env: Mapping[str, str], service: str, host: Mapping[str, str]
    ) -> dict[str, str]:
        """``env`` (an agent's environment) with the ``OTEL_*`` settings of ACP's
        telemetry-export guidance, when the host traces; ``env`` unchanged when it does not.

        The host's own ``OTEL_*`` variables (``host``: its environment, which its SDK read
        too) pass through, and what ``env`` already says (the profile's ``env``) wins over
        them: the guidance asks clients never to override a user's settings. What neither
        says is filled in: ``OTEL_SERVICE_NAME`` (the profile's name, so the agent's spans
        are told apart from the host's) and ``OTEL_EXPORTER_OTLP_PROTOCOL``."""
        if not self.exports:
            return dict(env)
        merged = {name: value for name, value in host.items() if name.startswith(OTEL_PREFIX)}
        merged.update(env)
        merged.setdefault("OTEL_SERVICE_NAME", service)
        merged.setdefault("OTEL_EXPORTER_OTLP_PROTOCOL", DEFAULT_PROTOCOL)
        return merged

    def current(self, **attributes: Any) -> None:
        """Attributes on the span now current (a batch's task, from a caller's hook)."""
        if self._tracer is not None:
            from opentelemetry import trace  # imported already: the host imported it

            set_attributes(trace.get_current_span(), **attributes)


def set_status(span: Any, ok: bool, description: str | None = None) -> None:
    """A span's status: OK, or ERROR with ``description`` (None-safe, like the others)."""
    if span is not None:
        from opentelemetry.trace import Status, StatusCode  # imported: a span exists

        span.set_status(Status(StatusCode.OK) if ok else Status(StatusCode.ERROR, description))


def set_attributes(span: Any, **attributes: Any) -> None:
    """Attributes on a span from :meth:`Tracing.span` (None-safe both ways)."""
    if span is not None:
        for key, value in attributes.items():
            if value is not None:
                span.set_attribute(key, value)


NO_TRACING = Tracing()
