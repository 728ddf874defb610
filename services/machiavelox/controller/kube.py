"""The controller's Kubernetes side, through the official `kubernetes` client.

Only what the chart's Role grants, and nothing else:

    statefulsets/scale   get, update   read and set the shard StatefulSet's replicas
    statefulsets         watch         (with a metadata.name field selector) wake up on change
    leases               get, create, update   leader election (lease.py)

The client is synchronous: every call here is blocking and `reconcile.py`/`lease.py` run them
in a worker thread; the watch runs in its own daemon thread and only wakes the event loop.
Replicas are written with the resourceVersion they were read with, so a write based on a stale
view fails with Conflict instead of undoing someone else's change.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import urllib3
from kubernetes import client, config, watch

from .errors import Conflict, KubeError
from .lease import LeaseRecord

log = logging.getLogger(__name__)

_TIMEOUT = (5.0, 10.0)  # connect, read (s) of every request but the watch


def _wrap(err: Exception) -> KubeError:
    if isinstance(err, client.ApiException):
        cls = Conflict if err.status == 409 else KubeError
        return cls(f"API server answered {err.status} {err.reason}")
    return KubeError(f"API server unreachable: {type(err).__name__}: {err}")


_ERRORS = (client.ApiException, urllib3.exceptions.HTTPError, OSError)


def api_client(kube_api: str, identity: str) -> client.ApiClient:
    """In-cluster service account credentials, or a plain URL (`kubectl proxy`, tests)."""
    configuration = client.Configuration()
    if kube_api:
        configuration.host = kube_api
    else:
        config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=configuration)
    api = client.ApiClient(configuration)
    api.user_agent = f"machiavelox-controller/{identity}"
    return api


@dataclass(frozen=True)
class Scale:
    replicas: int
    resource_version: str


class ShardScale:
    """The shard StatefulSet's `scale` subresource."""

    def __init__(self, api: client.ApiClient, namespace: str, statefulset: str) -> None:
        self.apps = client.AppsV1Api(api)
        self.namespace = namespace
        self.statefulset = statefulset

    def read(self) -> Scale:
        try:
            scale = self.apps.read_namespaced_stateful_set_scale(
                self.statefulset, self.namespace, _request_timeout=_TIMEOUT)
        except _ERRORS as err:
            raise _wrap(err) from None
        replicas = scale.spec.replicas if scale.spec and scale.spec.replicas is not None else 0
        version = scale.metadata.resource_version if scale.metadata else None
        return Scale(replicas, version or "")

    def write(self, replicas: int, resource_version: str) -> None:
        body = client.V1Scale(
            api_version="autoscaling/v1", kind="Scale",
            metadata=client.V1ObjectMeta(name=self.statefulset, namespace=self.namespace,
                                         resource_version=resource_version or None),
            spec=client.V1ScaleSpec(replicas=replicas))
        try:
            self.apps.replace_namespaced_stateful_set_scale(
                self.statefulset, self.namespace, body, _request_timeout=_TIMEOUT)
        except _ERRORS as err:
            raise _wrap(err) from None


class StatefulSetWatch:
    """Calls `on_change` for every event on the StatefulSet (a daemon thread; reconnects)."""

    def __init__(self, api: client.ApiClient, namespace: str, statefulset: str,
                 on_change: Callable[[], None], timeout_s: int = 300) -> None:
        self.apps = client.AppsV1Api(api)
        self.namespace = namespace
        self.statefulset = statefulset
        self.on_change = on_change
        self.timeout_s = timeout_s
        self._stopped = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread = threading.Thread(target=self._run, name="statefulset-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._watch is not None:
            self._watch.stop()  # type: ignore[no-untyped-call]

    def _run(self) -> None:
        backoff = 1.0
        while not self._stopped.is_set():
            self._watch = watch.Watch()  # type: ignore[no-untyped-call]
            try:
                for _event in self._watch.stream(  # type: ignore[no-untyped-call]
                        self.apps.list_namespaced_stateful_set, self.namespace,
                        field_selector=f"metadata.name={self.statefulset}",
                        timeout_seconds=self.timeout_s,
                        _request_timeout=(5.0, self.timeout_s + 30.0)):
                    backoff = 1.0
                    if self._stopped.is_set():
                        return
                    self.on_change()
            except Exception as err:  # keep watching whatever the client raised
                if self._stopped.is_set():
                    return
                log.warning("statefulset watch failed (%s), again in %.0f s", err, backoff)
                self._stopped.wait(backoff)
                backoff = min(backoff * 2, 30.0)
            # else: the server ended the watch at its timeout; open another


class LeaseStore:
    """The Lease object of leader election, as `LeaseRecord`s."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str) -> None:
        self.coordination = client.CoordinationV1Api(api)
        self.namespace = namespace
        self.name = name

    def get(self) -> LeaseRecord | None:
        try:
            lease = self.coordination.read_namespaced_lease(self.name, self.namespace,
                                                            _request_timeout=_TIMEOUT)
        except client.ApiException as err:
            if err.status == 404:
                return None
            raise _wrap(err) from None
        except _ERRORS as err:
            raise _wrap(err) from None
        return _record(lease)

    def create(self, record: LeaseRecord) -> LeaseRecord:
        try:
            lease = self.coordination.create_namespaced_lease(
                self.namespace, self._lease(record), _request_timeout=_TIMEOUT)
        except _ERRORS as err:
            raise _wrap(err) from None
        return _record(lease)

    def replace(self, record: LeaseRecord) -> LeaseRecord:
        try:
            lease = self.coordination.replace_namespaced_lease(
                self.name, self.namespace, self._lease(record), _request_timeout=_TIMEOUT)
        except _ERRORS as err:
            raise _wrap(err) from None
        return _record(lease)

    def _lease(self, record: LeaseRecord) -> client.V1Lease:
        return client.V1Lease(
            api_version="coordination.k8s.io/v1", kind="Lease",
            metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace,
                                         resource_version=record.resource_version or None),
            spec=client.V1LeaseSpec(
                holder_identity=record.holder or None,
                lease_duration_seconds=record.duration_s,
                acquire_time=record.acquire_time, renew_time=record.renew_time,
                lease_transitions=record.transitions))


def _record(lease: Any) -> LeaseRecord:
    spec = lease.spec
    meta = lease.metadata

    def when(value: object) -> datetime | None:
        return value if isinstance(value, datetime) else None

    return LeaseRecord(
        holder=(spec.holder_identity or "") if spec else "",
        duration_s=(spec.lease_duration_seconds or 0) if spec else 0,
        acquire_time=when(spec.acquire_time) if spec else None,
        renew_time=when(spec.renew_time) if spec else None,
        transitions=(spec.lease_transitions or 0) if spec else 0,
        resource_version=(meta.resource_version or "") if meta else "")
