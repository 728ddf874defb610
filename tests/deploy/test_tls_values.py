"""The chart's service identity (docs/security.md): every component gets the certificate of its
role from a Secret, mounted read-only, with the settings that point at it; cert-manager makes
those Secrets when asked; mutual TLS can be switched off for a mesh; the probes and `helm test`
use the plaintext health port."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest

from machiavelox.platform.tls import TlsSettings, role_uri, server_name
from tests.deploy.chart import container_env, find, full, one, pod_spec, render, workloads

COMPONENTS = ["gateway", "table", "matchmaking", "scoring", "presence", "controller", "bot-host"]
MOUNT = "/etc/machiavelox/tls"


def component(workload: dict[str, Any]) -> str:
    return str(workload["metadata"]["labels"]["app.kubernetes.io/component"])


def secret_of(workload: dict[str, Any]) -> str | None:
    spec = pod_spec(workload)
    [container] = spec["containers"]
    mounts = [m for m in container["volumeMounts"] if m["mountPath"] == MOUNT]
    if not mounts:
        return None
    [mount] = mounts
    assert mount["readOnly"] is True
    [volume] = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    return str(volume["secret"]["secretName"])


def test_every_component_presents_the_certificate_of_its_role() -> None:
    docs = render()
    seen = {}
    for workload in workloads(docs):
        [container] = pod_spec(workload)["containers"]
        env = container_env(container)
        assert env["MACHIAVELOX_INTERNAL_TLS"] == "mtls"
        assert (env["MACHIAVELOX_TLS_CA"], env["MACHIAVELOX_TLS_CERT"],
                env["MACHIAVELOX_TLS_KEY"]) == (f"{MOUNT}/ca.crt", f"{MOUNT}/tls.crt",
                                                f"{MOUNT}/tls.key")
        settings = TlsSettings.from_env(env)  # what the service reads at start
        assert settings.mode == "mtls" and settings.cert == f"{MOUNT}/tls.crt"
        seen[component(workload)] = secret_of(workload)
    assert seen == {c: f"{full('tls')}-{c}" for c in COMPONENTS}


def test_secrets_of_your_own_per_role() -> None:
    docs = render({"global": {"tls": {"secrets": {"table": "shards-cert",
                                                  "gateway": "edge-cert"}}}})
    secrets = {component(w): secret_of(w) for w in workloads(docs)}
    assert secrets["table"] == "shards-cert" and secrets["gateway"] == "edge-cert"
    assert secrets["scoring"] == f"{full('tls')}-scoring"


def test_off_for_a_mesh_mounts_nothing() -> None:
    for workload in workloads(render({"global": {"tls": {"internal": "off"}}})):
        [container] = pod_spec(workload)["containers"]
        env = container_env(container)
        assert env["MACHIAVELOX_INTERNAL_TLS"] == "off"
        assert not {k for k in env if k.startswith("MACHIAVELOX_TLS_")}
        assert secret_of(workload) is None
        assert TlsSettings.from_env(env).mode == "off"


def test_cert_manager_makes_every_roles_certificate_into_the_mounted_secrets() -> None:
    values = {"global": {"tls": {"certManager": {"enabled": True, "issuerRef": {
        "name": "cluster-ca", "kind": "ClusterIssuer"}}}}}
    docs = render(values)
    certificates = {c["spec"]["commonName"]: c for c in find(docs, "Certificate")}
    assert set(certificates) == set(COMPONENTS)
    mounted = {component(w): secret_of(w) for w in workloads(docs)}
    for role, certificate in certificates.items():
        spec = certificate["spec"]
        assert spec["secretName"] == mounted[role]
        assert spec["uris"] == [role_uri(role)] and spec["dnsNames"] == [server_name(role)]
        assert {"server auth", "client auth"} <= set(spec["usages"])
        assert spec["issuerRef"] == {"name": "cluster-ca", "kind": "ClusterIssuer",
                                     "group": "cert-manager.io"}
    values["global"]["tls"]["certManager"]["resultsReader"] = True
    reader = [c for c in find(render(values), "Certificate")
              if c["spec"]["commonName"] == "results-reader"]
    assert [c["spec"]["secretName"] for c in reader] == [f"{full('tls')}-results-reader"]
    assert find(render(), "Certificate") == []  # off by default: your own Secrets


def test_cert_manager_needs_an_issuer() -> None:
    with pytest.raises(helm.HelmRenderError, match=r"issuerRef\.name"):
        render({"global": {"tls": {"certManager": {"enabled": True}}}})


def test_the_health_port_is_a_port_of_its_own() -> None:
    with pytest.raises(helm.HelmRenderError, match=r"global\.healthPort"):
        render({"global": {"healthPort": 7100}})
    with pytest.raises(helm.HelmRenderError, match=r"global\.healthPort"):
        render({"global": {"healthPort": 9464}})


def test_the_helm_test_checks_health_ports_without_a_certificate() -> None:
    docs = render()
    pod = one(docs, "Pod", f"{full('test')}-health")
    [container] = pod["spec"]["containers"]
    assert all(arg.endswith(":7090") for arg in container["args"])
    assert all(v.get("secret") is None for v in pod["spec"]["volumes"])
    for service in find(docs, "Service"):
        if service["metadata"]["name"] not in (full("gateway"),):  # the public one
            assert {"name": "health", "port": 7090, "targetPort": "health"} in service[
                "spec"]["ports"], service["metadata"]["name"]
