"""The observability interceptor over real gRPC on loopback: every RPC shape, every way a call
ends, the status the client sees, the server span and the gRPC metrics it leaves, and trace
context flowing into a servicer and out of it through the client interceptor."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from machiavelox.platform.errors import ErrorInterceptor, not_found
from machiavelox.platform.observability import Observability, ObservabilitySettings
from machiavelox.platform.telemetry import Attr, Telemetry, TracingSettings

from .conftest import value

pytestmark = pytest.mark.timeout(60)

SERVICE = "test.v1.Probe"


class Probe:
    """A servicer of raw bytes whose behaviour the request names."""

    def __init__(self, outgoing: list[Any]) -> None:
        self.outgoing = outgoing  # [channel] for the "call-out" behaviour
        self.seen_trace_ids: list[int] = []

    async def unary(self, request: bytes, context: Any) -> bytes:
        self.seen_trace_ids.append(trace.get_current_span().get_span_context().trace_id)
        if request == b"refuse":
            raise not_found("probe/none", "nothing here")
        if request == b"crash":
            raise ValueError("a bug")
        if request == b"set-code":
            context.set_code(grpc.StatusCode.ALREADY_EXISTS)
            return b""
        if request == b"call-out":
            call = self.outgoing[0].unary_unary(f"/{SERVICE}/Unary")
            return bytes(await call(b"ok", timeout=5))
        return request

    async def server_stream(self, request: bytes, context: Any) -> AsyncIterator[bytes]:
        yield b"first"
        if request == b"forever":
            await asyncio.Event().wait()
        yield b"second"

    async def client_stream(self, requests: AsyncIterator[bytes], context: Any) -> bytes:
        return b"".join([r async for r in requests])

    async def bidi(self, requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
        async for r in requests:
            yield r.upper()


@pytest.fixture
async def probe() -> AsyncIterator[tuple[Any, Observability, InMemorySpanExporter, Probe]]:
    exporter = InMemorySpanExporter()
    settings = ObservabilitySettings.from_env("probe", {"MACHIAVELOX_METRICS_PORT": "0"})
    telemetry = Telemetry(TracingSettings("machiavelox-probe", ("otlp",),
                                          "parentbased_always_on", 1.0), exporters=[exporter])
    obs = Observability("probe", settings, telemetry=telemetry)
    outgoing: list[Any] = []
    servicer = Probe(outgoing)
    server = grpc.aio.server(interceptors=[obs.server_interceptor(), ErrorInterceptor()])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {
        "Unary": grpc.unary_unary_rpc_method_handler(servicer.unary),
        "ServerStream": grpc.unary_stream_rpc_method_handler(servicer.server_stream),
        "ClientStream": grpc.stream_unary_rpc_method_handler(servicer.client_stream),
        "Bidi": grpc.stream_stream_rpc_method_handler(servicer.bidi),
    }),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    address = f"127.0.0.1:{port}"
    outgoing.append(grpc.aio.insecure_channel(address, interceptors=obs.client_interceptors()))
    async with grpc.aio.insecure_channel(address) as channel:
        yield channel, obs, exporter, servicer
    await outgoing[0].close()
    await server.stop(0)
    obs.close()


def handled(obs: Observability, method: str, code: str, rpc_type: str = "unary") -> float:
    samples = {}
    for family in obs.registry.collect():
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return value(samples, "grpc_server_handled_total", grpc_service=SERVICE, grpc_method=method,
                 grpc_code=code, grpc_type=rpc_type)


def finished(obs: Observability, exporter: InMemorySpanExporter) -> list[Any]:
    assert obs.telemetry.provider is not None
    obs.telemetry.provider.force_flush()
    return list(exporter.get_finished_spans())


async def test_unary_outcomes_are_counted_and_traced(probe: Any) -> None:
    channel, obs, exporter, servicer = probe
    unary = channel.unary_unary(f"/{SERVICE}/Unary")
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert await unary(b"ok", metadata=(("traceparent", parent),), timeout=5) == b"ok"
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await unary(b"refuse", timeout=5)
    assert refused.value.code() is grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.aio.AioRpcError) as crashed:
        await unary(b"crash", timeout=5)
    assert crashed.value.code() is grpc.StatusCode.UNKNOWN
    with pytest.raises(grpc.aio.AioRpcError) as set_code:
        await unary(b"set-code", timeout=5)
    assert set_code.value.code() is grpc.StatusCode.ALREADY_EXISTS

    for code in ("OK", "NOT_FOUND", "UNKNOWN", "ALREADY_EXISTS"):
        assert handled(obs, "Unary", code) == 1, code
    spans = finished(obs, exporter)
    assert len(spans) == 4
    ok, refused_span, crashed_span, _ = spans
    assert ok.name == f"{SERVICE}/Unary" and ok.kind is trace.SpanKind.SERVER
    assert f"{ok.context.trace_id:032x}" == "0af7651916cd43dd8448eb211c80319c"
    assert ok.parent is not None and f"{ok.parent.span_id:016x}" == "b7ad6b7169203331"
    assert servicer.seen_trace_ids[0] == ok.context.trace_id, "the span is current inside"
    assert refused_span.attributes[Attr.RPC_GRPC_STATUS_CODE] == 5
    assert refused_span.attributes[Attr.REASON] == "probe/none"
    assert refused_span.status.status_code is trace.StatusCode.UNSET
    assert crashed_span.status.status_code is trace.StatusCode.ERROR
    assert [e.name for e in crashed_span.events] == ["exception"]
    assert refused_span.parent is None, "no traceparent: a trace of its own"


async def test_streams_end_ok_cancelled_or_past_their_deadline(probe: Any) -> None:
    channel, obs, exporter, _ = probe
    stream = channel.unary_stream(f"/{SERVICE}/ServerStream")
    assert [r async for r in stream(b"two", timeout=5)] == [b"first", b"second"]
    call = stream(b"forever")
    assert await call.read() == b"first"
    call.cancel()
    with pytest.raises(grpc.aio.AioRpcError) as late:
        async for _ in stream(b"forever", timeout=0.5):
            pass
    assert late.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    client_stream = channel.stream_unary(f"/{SERVICE}/ClientStream")
    assert await client_stream(iter([b"a", b"b"]), timeout=5) == b"ab"
    bidi = channel.stream_stream(f"/{SERVICE}/Bidi")
    assert [r async for r in bidi(iter([b"x", b"y"]), timeout=5)] == [b"X", b"Y"]

    for _ in range(100):  # the server ends cancelled calls asynchronously
        if handled(obs, "ServerStream", "CANCELLED", "server_stream") and handled(
                obs, "ServerStream", "DEADLINE_EXCEEDED", "server_stream"):
            break
        await asyncio.sleep(0.02)
    assert handled(obs, "ServerStream", "OK", "server_stream") == 1
    assert handled(obs, "ServerStream", "CANCELLED", "server_stream") == 1
    assert handled(obs, "ServerStream", "DEADLINE_EXCEEDED", "server_stream") == 1
    assert handled(obs, "ClientStream", "OK", "client_stream") == 1
    assert handled(obs, "Bidi", "OK", "bidi_stream") == 1
    names = sorted(s.name.rsplit("/", 1)[1] for s in finished(obs, exporter))
    assert names == ["Bidi", "ClientStream", "ServerStream", "ServerStream", "ServerStream"]


async def test_a_call_made_by_a_servicer_continues_its_trace(probe: Any) -> None:
    channel, obs, exporter, _ = probe
    unary = channel.unary_unary(f"/{SERVICE}/Unary")
    assert await unary(b"call-out", timeout=5) == b"ok"
    spans = finished(obs, exporter)
    servers = [s for s in spans if s.kind is trace.SpanKind.SERVER]
    [client] = [s for s in spans if s.kind is trace.SpanKind.CLIENT]
    [outer] = [s for s in servers if s.parent is None]
    [inner] = [s for s in servers if s.parent is not None]
    assert {s.context.trace_id for s in spans} == {outer.context.trace_id}
    assert client.parent is not None and client.parent.span_id == outer.context.span_id
    assert inner.parent is not None and inner.parent.span_id == client.context.span_id
    assert client.attributes[Attr.RPC_GRPC_STATUS_CODE] == 0
