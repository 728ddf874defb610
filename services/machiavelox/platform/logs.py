"""Structured JSON logs: one formatter for every service, context fields as `extra`.

    log.info("action applied", extra={"table_id": t, "player": p, "seq": n})

A record logged while a span is current also gets its `trace_id` and `span_id` (hex, as trace
back-ends show them), so a log line leads to its trace and back.
"""

from __future__ import annotations

import json
import logging
import sys
import time

from opentelemetry import trace

CONTEXT_FIELDS = ("table_id", "player", "seq", "shard_id", "gateway_id", "ticket_id", "code",
                  "peer", "method", "offset", "metrics_port")


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key in CONTEXT_FIELDS:
            value = record.__dict__.get(key)
            if value is not None:
                out[key] = value
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            out["trace_id"] = f"{span.trace_id:032x}"
            out["span_id"] = f"{span.span_id:016x}"
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(service: str, level: str = "INFO") -> None:
    """Send every log record of the process to stderr as one JSON line."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
