"""Settings of the capacity controller (environment variables, Helm values `controller.*`).

    MACHIAVELOX_CONTROLLER_NAMESPACE         namespace of the shard StatefulSet and the Lease
                                             (the pod's own namespace when unset)
    MACHIAVELOX_CONTROLLER_STATEFULSET       the shard StatefulSet (required)
    MACHIAVELOX_CONTROLLER_SHARD_TEMPLATE    a shard's gRPC address, `{shard}` = the pod name
                                             `<statefulset>-<ordinal>`:
                                             "{shard}.<headless service>.<ns>.svc:7100"
    MACHIAVELOX_CONTROLLER_SHARDS            or explicit addresses: shard-0=host:port,...
    MACHIAVELOX_CONTROLLER_MIN_REPLICAS      fewest shards (1)
    MACHIAVELOX_CONTROLLER_MAX_REPLICAS      most shards (10); matchmaking must list this many
    MACHIAVELOX_CONTROLLER_BUFFER            free tables to keep: "200" or "10%" (10%)
    MACHIAVELOX_CONTROLLER_SHARD_CAPACITY    tables per shard, as MACHIAVELOX_TABLE_CAPACITY (2000)
    MACHIAVELOX_CONTROLLER_SCALE_DOWN_DELAY_S  excess must last this long before a drain (300)
    MACHIAVELOX_CONTROLLER_INTERVAL_S        seconds between rounds; a change of the
                                             StatefulSet starts one at once (10)
    MACHIAVELOX_CONTROLLER_RPC_TIMEOUT_S     deadline of GetLoad and SetDraining (2)
    MACHIAVELOX_CONTROLLER_LEASE_NAME        the coordination.k8s.io Lease (machiavelox-controller)
    MACHIAVELOX_CONTROLLER_LEASE_DURATION_S  how long a silent leader keeps the Lease (15)
    MACHIAVELOX_CONTROLLER_RENEW_S           how often the Lease is renewed or tried (2)
    MACHIAVELOX_CONTROLLER_IDENTITY          this replica's name in the Lease (the host name)
    MACHIAVELOX_CONTROLLER_KUBE_API          "" = in-cluster service account; or a URL such as
                                             http://127.0.0.1:8001 (`kubectl proxy`)
    MACHIAVELOX_CONTROLLER_HOST / _PORT      the health endpoint (127.0.0.1:7500)
    MACHIAVELOX_GRACE_S, MACHIAVELOX_LOG_LEVEL
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from machiavelox.platform.settings import (
    SettingsError,
    env_float,
    env_grace_s,
    env_int,
    env_log_level,
    env_map,
    env_port,
    env_str,
)

from .decide import Buffer, Policy, PolicyError

_SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@dataclass(frozen=True)
class ControllerSettings:
    namespace: str
    statefulset: str
    shard_template: str
    shards: dict[str, str]
    policy: Policy
    interval_s: float
    rpc_timeout_s: float
    lease_name: str
    lease_duration_s: float
    renew_s: float
    identity: str
    kube_api: str
    host: str
    port: int
    grace_s: float
    log_level: str

    @property
    def renew_deadline_s(self) -> float:
        """A leader that has not renewed for this long stops acting: well before any other
        replica may take the Lease over (it waits the whole duration after seeing a change)."""
        return self.lease_duration_s * 2 / 3

    def shard_id(self, ordinal: int) -> str:
        return f"{self.statefulset}-{ordinal}"

    def shard_address(self, ordinal: int) -> str | None:
        shard = self.shard_id(ordinal)
        if shard in self.shards:
            return self.shards[shard]
        if self.shard_template:
            return self.shard_template.format(shard=shard, ordinal=ordinal)
        return None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ControllerSettings:
        source = os.environ if env is None else env
        statefulset = env_str("CONTROLLER_STATEFULSET", "", env)
        if not statefulset:
            raise SettingsError("MACHIAVELOX_CONTROLLER_STATEFULSET must name the shard "
                                "StatefulSet")
        template = env_str("CONTROLLER_SHARD_TEMPLATE", "", env)
        shards = env_map("CONTROLLER_SHARDS", env)
        if not template and not shards:
            raise SettingsError("set MACHIAVELOX_CONTROLLER_SHARD_TEMPLATE "
                                "('{shard}.<headless service>:7100') or "
                                "MACHIAVELOX_CONTROLLER_SHARDS (shard-0=host:port,...)")
        if template and "{shard}" not in template:
            raise SettingsError("MACHIAVELOX_CONTROLLER_SHARD_TEMPLATE must contain {shard}, "
                                f"not {template!r}")
        try:
            policy = Policy(
                min_replicas=env_int("CONTROLLER_MIN_REPLICAS", 1, env),
                max_replicas=env_int("CONTROLLER_MAX_REPLICAS", 10, env),
                buffer=Buffer.parse(env_str("CONTROLLER_BUFFER", "10%", env)),
                shard_capacity=env_int("CONTROLLER_SHARD_CAPACITY", 2000, env),
                scale_down_delay_s=env_float("CONTROLLER_SCALE_DOWN_DELAY_S", 300.0, env))
        except PolicyError as err:
            raise SettingsError(f"MACHIAVELOX_CONTROLLER_*: {err}") from None
        duration = env_float("CONTROLLER_LEASE_DURATION_S", 15.0, env)
        renew = env_float("CONTROLLER_RENEW_S", 2.0, env)
        if not 0 < renew < duration * 2 / 3:
            raise SettingsError("MACHIAVELOX_CONTROLLER_RENEW_S must be positive and below two "
                                f"thirds of the lease duration ({duration:g} s), not {renew:g}")
        interval = env_float("CONTROLLER_INTERVAL_S", 10.0, env)
        timeout = env_float("CONTROLLER_RPC_TIMEOUT_S", 2.0, env)
        if interval <= 0 or timeout <= 0:
            raise SettingsError("MACHIAVELOX_CONTROLLER_INTERVAL_S and _RPC_TIMEOUT_S must be "
                                "positive")
        port = env_port("CONTROLLER_PORT", 7500, env)
        grace_s = env_grace_s(5.0, env)
        level = env_log_level("INFO", env)
        identity = env_str("CONTROLLER_IDENTITY", source.get("HOSTNAME") or socket.gethostname(),
                           env)
        return cls(
            namespace=env_str("CONTROLLER_NAMESPACE", _own_namespace(), env),
            statefulset=statefulset,
            shard_template=template,
            shards=shards,
            policy=policy,
            interval_s=interval,
            rpc_timeout_s=timeout,
            lease_name=env_str("CONTROLLER_LEASE_NAME", "machiavelox-controller", env),
            lease_duration_s=duration,
            renew_s=renew,
            identity=identity,
            kube_api=env_str("CONTROLLER_KUBE_API", "", env),
            host=env_str("CONTROLLER_HOST", "127.0.0.1", env),
            port=port,
            grace_s=grace_s,
            log_level=level,
        )


def _own_namespace() -> str:
    try:
        return _SA_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"
