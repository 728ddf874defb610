"""A real OTLP/gRPC trace receiver for tests, run as its own process.

    python -m tests.support.otlp_receiver --out spans.jsonl --port-file port.txt

It serves OpenTelemetry's `TraceService/Export` (the servicer generated in opentelemetry-proto)
on 127.0.0.1 (port 0: a free one, written to --port-file once listening) and appends every
span it receives to --out as one JSON line:

    {"service": "machiavelox-scoring", "name": "...", "kind": "SERVER",
     "trace_id": "<32 hex>", "span_id": "<16 hex>", "parent_span_id": "<16 hex or ''>",
     "start_ns": ..., "end_ns": ..., "attributes": {...}, "status": "ERROR" | "OK" | "UNSET",
     "links": [{"trace_id": ..., "span_id": ..., "attributes": {...}}], "resource": {...}}

`Receiver` starts and stops it from a test; `Receiver.wait_for` polls the file.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

ROOT = Path(__file__).resolve().parents[2]
Span = dict[str, Any]


def any_value(value: common_pb2.AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def attributes(items: Iterable[common_pb2.KeyValue]) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in items}


def span_json(span: trace_pb2.Span, resource: dict[str, Any], scope: str) -> Span:
    return {
        "service": resource.get("service.name", ""),
        "scope": scope,
        "name": span.name,
        "kind": trace_pb2.Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_span_id": span.parent_span_id.hex(),
        "start_ns": span.start_time_unix_nano,
        "end_ns": span.end_time_unix_nano,
        "attributes": attributes(span.attributes),
        "status": trace_pb2.Status.StatusCode.Name(span.status.code).removeprefix(
            "STATUS_CODE_"),
        "links": [{"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex(),
                   "attributes": attributes(link.attributes)} for link in span.links],
        "resource": resource,
    }


class Collector(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, out: Path) -> None:
        self._out = out.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def Export(self, request: trace_service_pb2.ExportTraceServiceRequest,
               context: Any) -> trace_service_pb2.ExportTraceServiceResponse:
        lines = []
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    lines.append(json.dumps(span_json(span, resource, scope_spans.scope.name)))
        with self._lock:
            for line in lines:
                self._out.write(line + "\n")
            self._out.flush()
        return trace_service_pb2.ExportTraceServiceResponse()

    def close(self) -> None:
        with self._lock:
            self._out.close()


def serve(out: Path, port: int, port_file: Path | None) -> int:
    collector = Collector(out)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    # opentelemetry-proto's generated *_grpc modules have no annotations nor stubs
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
        collector, server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    if port_file is not None:
        tmp = port_file.with_suffix(".tmp")
        tmp.write_text(str(bound))
        tmp.replace(port_file)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.stop(1).wait()
    collector.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, default=None)
    args = parser.parse_args(argv)
    return serve(args.out, args.port, args.port_file)


# ---------------------------------------------------------------------------------- for tests
class Receiver:
    """The receiver in its own process, for a test: `endpoint` for OTEL_EXPORTER_OTLP_ENDPOINT,
    `spans()` what it has received so far."""

    def __init__(self, workdir: Path) -> None:
        self.out = workdir / "spans.jsonl"
        self.port_file = workdir / "otlp-port.txt"
        self.stderr = workdir / "otlp-receiver.stderr"
        self.out.touch()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.otlp_receiver", "--out", str(self.out),
             "--port-file", str(self.port_file)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=self.stderr.open("wb"),
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        deadline = time.monotonic() + 20
        while not self.port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the OTLP receiver did not start: "
                                     f"{self.stderr.read_text()[-2000:]}")
            time.sleep(0.05)
        self.port = int(self.port_file.read_text())

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, sampler: str = "parentbased_always_on") -> dict[str, str]:
        """What a service needs to export every span here, quickly."""
        return {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": self.endpoint,
                "OTEL_TRACES_SAMPLER": sampler, "OTEL_BSP_SCHEDULE_DELAY": "100"}

    def spans(self) -> list[Span]:
        out = []
        for line in self.out.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line))
        return out

    def wait_for(self, predicate: Callable[[list[Span]], bool],
                 timeout_s: float = 30.0) -> list[Span]:
        """Poll until `predicate(spans)` holds; the spans then, or AssertionError."""
        deadline = time.monotonic() + timeout_s
        while True:
            spans = self.spans()
            if predicate(spans):
                return spans
            if time.monotonic() > deadline:
                names = sorted({f"{s['service']}:{s['name']}" for s in spans})
                raise AssertionError(f"spans not received within {timeout_s} s; got {names}")
            time.sleep(0.1)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


if __name__ == "__main__":
    sys.exit(main())
