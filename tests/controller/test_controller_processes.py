"""Two `machiavelox controller` processes, two real shards, the fake API server.

One replica leads and does every write; the other only watches the Lease. The leader drains the
idle top shard and scales down; on SIGTERM it releases the Lease and the other takes over at
once and serves the next rush (it resumes the drained shard first). Both stop cleanly.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.local.pki import session_pki
from machiavelox.local.processes import (
    MACHIAVELOX,
    PARENT_PID,
    Proc,
    channel,
    free_port,
    wait_healthy,
)
from tests.controller.conftest import CAPACITY
from tests.controller.fake_kube import FakeKube
from tests.controller.test_controller import create_table, end_tables


def wait_for(what: str, condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.05)


def start_controller(name: str, kube: FakeKube, shards: list[Proc], tmp: Path) -> Proc:
    port = free_port()
    env = {"MACHIAVELOX_CONTROLLER_NAMESPACE": kube.namespace,
           "MACHIAVELOX_CONTROLLER_STATEFULSET": kube.statefulset,
           "MACHIAVELOX_CONTROLLER_SHARDS": ",".join(f"shard-{i}={p.address}"
                                                     for i, p in enumerate(shards)),
           "MACHIAVELOX_CONTROLLER_MIN_REPLICAS": "1",
           "MACHIAVELOX_CONTROLLER_MAX_REPLICAS": "3",
           "MACHIAVELOX_CONTROLLER_BUFFER": "2",
           "MACHIAVELOX_CONTROLLER_SHARD_CAPACITY": str(CAPACITY),
           "MACHIAVELOX_CONTROLLER_SCALE_DOWN_DELAY_S": "0",
           "MACHIAVELOX_CONTROLLER_INTERVAL_S": "0.3",
           "MACHIAVELOX_CONTROLLER_LEASE_DURATION_S": "3",
           "MACHIAVELOX_CONTROLLER_RENEW_S": "0.3",
           "MACHIAVELOX_CONTROLLER_IDENTITY": name,
           "MACHIAVELOX_CONTROLLER_KUBE_API": kube.url,
           "MACHIAVELOX_CONTROLLER_PORT": str(port),
           "MACHIAVELOX_METRICS_PORT": "0",
           **session_pki().env("controller")}  # its calls to shards: mTLS as the controller
    log_path = tmp / f"{name}.log"
    popen = subprocess.Popen([*MACHIAVELOX, "controller"],
                             env={**os.environ, **env, PARENT_PID: str(os.getpid())},
                             stdout=subprocess.DEVNULL, stderr=log_path.open("wb"),
                             start_new_session=True)
    proc = Proc(name, popen, f"127.0.0.1:{port}", log_path, env=env)
    wait_healthy(proc)
    return proc


def load(shard: Proc) -> table_pb2.GetLoadResponse:
    with channel(shard, "controller") as ch:
        answer: table_pb2.GetLoadResponse = table_pb2_grpc.TableAuthorityServiceStub(
            ch).GetLoad(table_pb2.GetLoadRequest(), timeout=5)
        return answer


def metric(proc: Proc, name: str) -> float:
    """A sample of the process's /metrics (its port is logged once, as JSON)."""
    [port] = [r["metrics_port"] for r in proc.logs() if "metrics_port" in r]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    [value] = [line.split()[-1] for line in text.splitlines() if line.startswith(name + " ")]
    return float(value)


def holder(kube: FakeKube) -> str:
    lease = kube.leases.get("machiavelox-controller")
    return str(lease["spec"].get("holderIdentity") or "") if lease else ""


def agent(name: str) -> str:
    return f"machiavelox-controller/{name}"


def test_two_replicas_one_leader_handover_on_sigterm(kube: FakeKube, shards: list[Proc],
                                                     tmp_path: Path) -> None:
    controllers = {name: start_controller(name, kube, shards, tmp_path) for name in ("a", "b")}
    try:
        wait_for("a leader", lambda: holder(kube) in controllers)
        leader = holder(kube)
        follower = "b" if leader == "a" else "a"
        # idle shards: the leader drains the top one, then scales down
        wait_for("scale-down to 1", lambda: kube.replicas == 1)
        assert load(shards[1]).draining
        writes = kube.writes("statefulsets/scale")
        assert [w.body["spec"]["replicas"] for w in writes if w.body] == [1]
        assert {w.user_agent for w in writes} == {agent(leader)}
        assert {(r.verb, r.resource) for r in kube.requests
                if r.user_agent == agent(follower)} <= {("get", "leases"),
                                                        ("watch", "statefulsets")}
        assert metric(controllers[leader], "machiavelox_controller_leader") == 1
        assert metric(controllers[follower], "machiavelox_controller_leader") == 0
        wait_for("the leader's next round", lambda: metric(
            controllers[leader], "machiavelox_controller_replicas") == 1)

        assert controllers[leader].stop() == 0  # SIGTERM: the Lease is released...
        wait_for("the follower leads", lambda: holder(kube) == follower)
        # ...well before it would have expired (released leases say so)
        released = [r for r in kube.writes("leases") if r.user_agent == agent(leader)
                    and r.body and not r.body["spec"].get("holderIdentity")]
        assert len(released) == 1

        tables = {f"shard-0.t{i}": [f"p{i}a", f"p{i}b", f"p{i}c"] for i in range(3)}
        for table_id, players in tables.items():  # a rush on the one shard left
            asyncio.run(create_table(shards[0], table_id, players))
        wait_for("scale-up to 2", lambda: kube.replicas == 2)
        wait_for("shard-1 resumed", lambda: not load(shards[1]).draining)
        assert kube.writes("statefulsets/scale")[-1].user_agent == agent(follower)
        assert kube.replicas == 2
        asyncio.run(end_tables(shards[0], tables))  # the matches end before the shards stop
    finally:
        for proc in controllers.values():
            proc.check_clean()
    assert not kube.unknown()
