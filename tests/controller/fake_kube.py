"""A tiny Kubernetes API server on loopback: only the endpoints the capacity controller uses.

No real API server can run on the machines that run these tests, so the controller's
Kubernetes side is driven through the real `kubernetes` client against this stand-in. It
speaks the same JSON and HTTP as the API server for:

    GET  /apis/apps/v1/namespaces/{ns}/statefulsets/{name}/scale      (read the Scale)
    PUT  /apis/apps/v1/namespaces/{ns}/statefulsets/{name}/scale      (replace, optimistic)
    GET  /apis/apps/v1/namespaces/{ns}/statefulsets?watch=true&fieldSelector=metadata.name=...
    GET  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}
    POST /apis/coordination.k8s.io/v1/namespaces/{ns}/leases
    PUT  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}

Writes check `metadata.resourceVersion` (409 Conflict on a stale one), as the real server does.
Every request is recorded with its verb in Kubernetes' authorization terms, so a test can
compare what the controller did with what the chart's Role allows. Anything else is answered
404 and recorded as such.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

_SCALE = re.compile(r"^/apis/apps/v1/namespaces/([^/]+)/statefulsets/([^/]+)/scale$")
_STS_COLLECTION = re.compile(r"^/apis/apps/v1/namespaces/([^/]+)/statefulsets$")
_LEASES = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases$")
_LEASE = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases/([^/]+)$")


@dataclass(frozen=True)
class Request:
    """One API request, in the terms RBAC authorizes it by."""

    method: str
    path: str
    query: dict[str, str]
    user_agent: str
    body: dict[str, Any] | None
    api_group: str  # "" for the core group
    resource: str  # "statefulsets/scale", "leases", ...
    name: str  # "" for a collection
    verb: str  # get, list, watch, create, update, patch, delete
    status: int = 0


@dataclass
class FakeKube:
    namespace: str = "mx"
    statefulset: str = "shard"
    replicas: int = 2
    requests: list[Request] = field(default_factory=list)
    leases: dict[str, dict[str, Any]] = field(default_factory=dict)
    # error injection: the statuses the next requests of a (method, resource) get instead
    inject: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    # user agents cut off from the server (answered 503), as a network partition would
    partitioned: set[str] = field(default_factory=set)
    _rv: int = 1
    _sts_rv: str = "1"
    _changed: threading.Condition = field(default_factory=threading.Condition)
    _server: ThreadingHTTPServer | None = None
    _stopping: bool = False

    # ------------------------------------------------------------------ objects
    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def set_replicas(self, replicas: int) -> None:
        """What `kubectl scale` would do (also wakes watchers)."""
        with self._changed:
            self.replicas = replicas
            self._sts_rv = self._next_rv()
            self._changed.notify_all()

    def scale_object(self) -> dict[str, Any]:
        return {"apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {"name": self.statefulset, "namespace": self.namespace,
                             "resourceVersion": self._sts_rv},
                "spec": {"replicas": self.replicas},
                "status": {"replicas": self.replicas,
                           "selector": f"app.kubernetes.io/name={self.statefulset}"}}

    def statefulset_object(self) -> dict[str, Any]:
        labels = {"app.kubernetes.io/name": self.statefulset}
        return {"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": self.statefulset, "namespace": self.namespace,
                             "resourceVersion": self._sts_rv},
                "spec": {"replicas": self.replicas, "serviceName": f"{self.statefulset}-headless",
                         "selector": {"matchLabels": labels},
                         "template": {"metadata": {"labels": labels},
                                      "spec": {"containers": [{"name": "table",
                                                               "image": "machiavelox"}]}}},
                "status": {"replicas": self.replicas, "readyReplicas": self.replicas}}

    # ------------------------------------------------------------------ queries for tests
    def writes(self, resource: str) -> list[Request]:
        return [r for r in self.requests
                if r.resource == resource and r.verb in ("create", "update", "patch")]

    def unknown(self) -> list[Request]:
        return [r for r in self.requests if r.status == 404 and r.resource == "?"]

    # ------------------------------------------------------------------ server
    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        fake = self

        class Handler(_Handler):
            kube = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-kube",
                         daemon=True).start()

    def stop(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def handle(self, method: str, path: str, query: dict[str, str], user_agent: str,
               body: dict[str, Any] | None) -> tuple[int, dict[str, Any] | Iterator[bytes]]:
        """Route one request; returns (status, JSON body or a stream of watch lines)."""
        with self._changed:
            info = _request_info(method, path, query)
            injected = self.inject.get((method, info[1]))
            out: dict[str, Any] | Iterator[bytes]
            if user_agent in self.partitioned:
                status, out = 503, _status(503, "ServiceUnavailable", "partitioned")
            elif injected:
                status = injected.pop(0)
                out = _status(status, "Conflict" if status == 409 else "InternalError",
                              "injected")
            else:
                status, out = self._route(method, path, query, body)
            self.requests.append(Request(method, path, query, user_agent, body, *info,
                                         status=status))
            return status, out

    def _route(self, method: str, path: str, query: dict[str, str],
               body: dict[str, Any] | None) -> tuple[int, dict[str, Any] | Iterator[bytes]]:
        if m := _SCALE.match(path):
            if m.groups() != (self.namespace, self.statefulset):
                return 404, _status(404, "NotFound", f"statefulsets.apps {m[2]!r} not found")
            if method == "GET":
                return 200, self.scale_object()
            if method == "PUT" and body is not None:
                rv = body.get("metadata", {}).get("resourceVersion")
                if rv is not None and rv != self._sts_rv:
                    return 409, _status(409, "Conflict", "the object has been modified")
                self.replicas = int(body["spec"]["replicas"])
                self._sts_rv = self._next_rv()
                self._changed.notify_all()
                return 200, self.scale_object()
        if (m := _STS_COLLECTION.match(path)) and method == "GET":
            selector = query.get("fieldSelector", "")
            if m[1] != self.namespace or selector != f"metadata.name={self.statefulset}":
                return 400, _status(400, "BadRequest", "this fake needs a metadata.name selector")
            if query.get("watch") in ("true", "1"):
                return 200, self._watch(float(query.get("timeoutSeconds", "30")))
            return 200, {"apiVersion": "apps/v1", "kind": "StatefulSetList",
                         "metadata": {"resourceVersion": self._sts_rv},
                         "items": [self.statefulset_object()]}
        if (m := _LEASES.match(path)) and method == "POST" and body is not None:
            name = body["metadata"]["name"]
            if name in self.leases:
                return 409, _status(409, "AlreadyExists", f"leases {name!r} already exists")
            return 201, self._store_lease(name, body)
        if m := _LEASE.match(path):
            name = m[2]
            if method == "GET":
                if name not in self.leases:
                    return 404, _status(404, "NotFound", f"leases {name!r} not found")
                return 200, self.leases[name]
            if method == "PUT" and body is not None:
                if name not in self.leases:
                    return 404, _status(404, "NotFound", f"leases {name!r} not found")
                rv = body.get("metadata", {}).get("resourceVersion")
                if rv != self.leases[name]["metadata"]["resourceVersion"]:
                    return 409, _status(409, "Conflict", "the object has been modified")
                return 200, self._store_lease(name, body)
        return 404, _status(404, "NotFound", f"the fake has no {method} {path}")

    def _store_lease(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": name, "namespace": self.namespace,
                              "resourceVersion": self._next_rv()},
                 "spec": dict(body.get("spec") or {})}
        self.leases[name] = lease
        return lease

    def _watch(self, timeout_s: float) -> Iterator[bytes]:
        """ADDED with the current object, then MODIFIED on every change, until the timeout."""
        def lines() -> Iterator[bytes]:
            deadline = time.monotonic() + timeout_s
            with self._changed:
                seen = self._sts_rv
                event = {"type": "ADDED", "object": self.statefulset_object()}
            yield json.dumps(event).encode() + b"\n"
            while True:
                with self._changed:
                    while (self._sts_rv == seen and not self._stopping
                           and time.monotonic() < deadline):
                        self._changed.wait(max(0.0, min(0.5, deadline - time.monotonic())))
                    if self._stopping or self._sts_rv == seen:
                        return
                    seen = self._sts_rv
                    event = {"type": "MODIFIED", "object": self.statefulset_object()}
                yield json.dumps(event).encode() + b"\n"

        return lines()


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code,
            "reason": reason, "message": message, "metadata": {}}


def _request_info(method: str, path: str, query: dict[str, str]) -> tuple[str, str, str, str]:
    """(api group, resource[/subresource], name, verb) as the API server's RBAC sees them."""
    parts = path.strip("/").split("/")
    if len(parts) >= 5 and parts[0] == "apis" and parts[3] == "namespaces":
        group, rest = parts[1], parts[5:]
    elif len(parts) >= 4 and parts[0] == "api" and parts[2] == "namespaces":
        group, rest = "", parts[4:]
    else:
        return "", "?", "", method.lower()
    resource = rest[0] if rest else "?"
    name = rest[1] if len(rest) > 1 else ""
    if len(rest) > 2:
        resource += "/" + rest[2]
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method)
    if verb is None:
        watching = query.get("watch") in ("true", "1")
        verb = "watch" if watching else ("get" if name else "list")
    if not name and verb in ("list", "watch"):  # RBAC names a list by its name selector
        selector = query.get("fieldSelector", "")
        if selector.startswith("metadata.name="):
            name = selector.removeprefix("metadata.name=")
    if not _known(path):
        resource = "?"
    return group, resource, name, verb


def _known(path: str) -> bool:
    return any(p.match(path) for p in (_SCALE, _STS_COLLECTION, _LEASES, _LEASE))


class _Handler(BaseHTTPRequestHandler):
    kube: FakeKube
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms stalls

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        status, out = self.kube.handle(self.command, url.path, query,
                                       self.headers.get("User-Agent", ""), body)
        if isinstance(out, dict):
            data = json.dumps(out).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for line in out:
                self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = _serve


@contextmanager
def running(**kwargs: Any) -> Iterator[FakeKube]:
    kube = FakeKube(**kwargs)
    kube.start()
    try:
        yield kube
    finally:
        kube.stop()
