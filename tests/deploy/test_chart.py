"""The chart, rendered and linted by the real Helm engine for every ci/*-values.yaml, every
object validated against the Kubernetes API schemas of two versions, and the properties that
matter checked on the rendered objects."""

from __future__ import annotations

import base64
from typing import Any

import helm_python as helm
import kubernetes_validate  # type: ignore[import-untyped]  # no py.typed, no stubs
import pytest

from tests.deploy.chart import (
    CHART,
    NAMESPACE,
    VALUE_SETS,
    Manifest,
    find,
    full,
    notes,
    one,
    pod_spec,
    render,
    value_set,
    workloads,
)

NAMES = [p.name.removesuffix("-values.yaml") for p in VALUE_SETS]
# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest the
# validator ships.
KUBE_VERSIONS = ["1.30.0", kubernetes_validate.utils.latest_version()]
# Custom resources (Prometheus Operator, cert-manager): no schema in the validator (checked
# below).
CUSTOM_KINDS = {"ServiceMonitor": "monitoring.coreos.com/v1",
                "PrometheusRule": "monitoring.coreos.com/v1",
                "Certificate": "cert-manager.io/v1"}
COMPONENTS = ["gateway", "table", "matchmaking", "scoring", "presence", "controller", "bot-host"]


def test_the_ci_value_sets_cover_what_ci_must_render() -> None:
    assert {"default", "minimal", "production", "postgres-redis"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_helm_lint_finds_nothing(name: str) -> None:
    report = helm.lint(str(CHART), value_set(name), strict=True, namespace=NAMESPACE,
                       kube_version="v1.30.0")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert problems == [] and report["errors"] == []


@pytest.mark.parametrize("name", NAMES)
def test_every_object_is_valid_kubernetes(name: str) -> None:
    docs = render(value_set(name))
    assert len(docs) > 10
    for doc in docs:
        if doc["kind"] in CUSTOM_KINDS:
            assert doc["apiVersion"] == CUSTOM_KINDS[doc["kind"]]
            continue
        for version in KUBE_VERSIONS:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as err:
                pytest.fail(f"{doc['kind']} {doc['metadata']['name']} on {version}: "
                            f"{err.message} at {list(err.path)}")


def test_the_validator_is_strict() -> None:
    """A field Kubernetes does not know is refused, so the test above can fail."""
    doc = one(render(), "Service", full("scoring"))
    doc["spec"]["portz"] = []
    with pytest.raises(kubernetes_validate.ValidationError, match="portz"):
        kubernetes_validate.validate(doc, KUBE_VERSIONS[0], strict=True)


def container_port(container: dict[str, Any], name: str = "grpc") -> int:
    [port] = [p["containerPort"] for p in container["ports"] if p["name"] == name]
    return int(port)


@pytest.mark.parametrize("name", NAMES)
def test_probes_are_kubernetes_grpc_probes_on_the_health_service(name: str) -> None:
    """On the plaintext health port: Kubernetes' gRPC probes present no client certificate,
    and the gRPC ports take mutual TLS."""
    for workload in workloads(render(value_set(name))):
        for container in pod_spec(workload)["containers"]:
            env = {e["name"]: e.get("value") for e in container["env"]}
            health = container_port(container, "health")
            assert health != container_port(container)
            assert env["MACHIAVELOX_HEALTH_PORT"] == str(health)
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                grpc = container[probe]["grpc"]
                assert grpc["port"] == health, workload["metadata"]["name"]
                # no service name: the overall status of grpc.health.v1.Health, which every
                # service sets (platform/server.py)
                assert grpc.get("service", "") == ""


def test_shards_are_a_statefulset_behind_their_headless_service() -> None:
    docs = render()
    sts = one(docs, "StatefulSet", full("table"))
    service = one(docs, "Service", sts["spec"]["serviceName"])
    assert service["metadata"]["name"] == full("table") + "-headless"
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True  # draining shards stay reachable
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
    [container] = pod_spec(sts)["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["MACHIAVELOX_SHARD_ID"]["value"] == "$(POD_NAME)"  # shard id = pod name
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"


def test_everyone_finds_shards_by_their_stable_names() -> None:
    docs = render()
    headless = f"{full('table')}-headless.{NAMESPACE}.svc.cluster.local:7100"
    gateway = one(docs, "Deployment", full("gateway"))
    env = {e["name"]: e.get("value") for e in pod_spec(gateway)["containers"][0]["env"]}
    shards = dict(item.split("=") for item in env["MACHIAVELOX_GATEWAY_SHARDS"].split(","))
    assert shards == {f"{full('table')}-{i}": f"{full('table')}-{i}.{headless}"
                      for i in range(10)}  # every shard that can exist, no other
    controller = one(docs, "Deployment", full("controller"))
    env = {e["name"]: e.get("value") for e in pod_spec(controller)["containers"][0]["env"]}
    assert env["MACHIAVELOX_CONTROLLER_SHARD_TEMPLATE"] == "{shard}." + headless
    assert env["MACHIAVELOX_CONTROLLER_STATEFULSET"] == full("table")
    matchmaking = one(docs, "Deployment", full("matchmaking"))
    env = {e["name"]: e.get("value") for e in pod_spec(matchmaking)["containers"][0]["env"]}
    shards = dict(item.split("=") for item in env["MACHIAVELOX_MATCHMAKING_SHARDS"].split(","))
    assert list(shards) == [f"{full('table')}-{i}" for i in range(10)]  # controller.maxReplicas
    assert all(address == f"{shard}.{headless}" for shard, address in shards.items())


def test_matchmaking_knows_every_shard_that_can_exist() -> None:
    for values, count in (({"controller": {"maxReplicas": 3, "minReplicas": 1}}, 3),
                          ({"controller": {"enabled": False}, "table": {"replicas": 5}}, 5),
                          ({"controller": {"maxReplicas": 2}, "table": {"replicas": 4}}, 4)):
        matchmaking = one(render(values), "Deployment", full("matchmaking"))
        env = {e["name"]: e.get("value") for e in pod_spec(matchmaking)["containers"][0]["env"]}
        assert len(env["MACHIAVELOX_MATCHMAKING_SHARDS"].split(",")) == count, values


def test_the_controller_owns_the_shard_count() -> None:
    sts = one(render(), "StatefulSet", full("table"))
    assert "replicas" not in sts["spec"]  # helm upgrade never resets what the controller set
    fixed = one(render({"controller": {"enabled": False}, "table": {"replicas": 3}}),
                "StatefulSet", full("table"))
    assert fixed["spec"]["replicas"] == 3
    assert find(render({"controller": {"enabled": False}}), "Role") == []


@pytest.mark.parametrize("kind", ["ClusterIP", "NodePort", "LoadBalancer"])
def test_the_gateway_service_type_is_configurable_and_speaks_grpc(kind: str) -> None:
    docs = render({"gateway": {"service": {"type": kind, "port": 443}}})
    service = one(docs, "Service", full("gateway"))
    assert service["spec"]["type"] == kind
    [port] = service["spec"]["ports"]
    assert port["port"] == 443 and port["targetPort"] == "grpc"
    assert port["appProtocol"] == "kubernetes.io/h2c"


def test_only_the_gateway_is_reachable_from_outside() -> None:
    docs = render()
    public = [s["metadata"]["name"] for s in find(docs, "Service")
              if s["spec"].get("type", "ClusterIP") != "ClusterIP"]
    assert public == [full("gateway")]
    deny = one(docs, "NetworkPolicy", "mx-machiavelox-default-deny")
    assert deny["spec"]["policyTypes"] == ["Ingress"] and "ingress" not in deny["spec"]
    open_to_all = []
    for policy in find(docs, "NetworkPolicy"):
        for rule in policy["spec"].get("ingress", []):
            if "from" not in rule:
                open_to_all.append(policy["metadata"]["name"])
            else:  # inside the cluster only: pods, or every namespace's pods; never ipBlock
                assert all("ipBlock" not in peer for peer in rule["from"])
    assert open_to_all == [full("gateway")]
    exposed = render({"matchmaking": {"expose": True}, "global": {"tls": {"internal": "off"}}})
    assert {full("gateway"), full("matchmaking") + "-public"} == {
        s["metadata"]["name"] for s in find(exposed, "Service")
        if s["spec"].get("type", "ClusterIP") != "ClusterIP"}
    with pytest.raises(helm.HelmRenderError, match=r"matchmaking\.expose needs"):
        render({"matchmaking": {"expose": True}})  # its port takes the gateways' certificate


def test_each_service_admits_only_its_callers() -> None:
    """The gRPC port of each service from its callers alone (no `helm test` pod: it checks the
    health ports); the health port from the release's pods; nothing else but /metrics."""
    docs = render()
    callers = {"table": {"gateway", "matchmaking", "controller"},
               "scoring": {"table", "matchmaking"}, "presence": {"gateway", "table"},
               "matchmaking": {"gateway"}, "controller": set()}
    release = {"app.kubernetes.io/name": "machiavelox", "app.kubernetes.io/instance": "mx"}
    for component, expected in callers.items():
        policy = one(docs, "NetworkPolicy", full(component))
        rules = {r["ports"][0]["port"]: r for r in policy["spec"]["ingress"]}
        assert set(rules) == ({"grpc"} if expected else set()) | {"health", "metrics"}
        got = {peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
               for peer in rules.get("grpc", {"from": []})["from"]}
        assert got == expected, component
        assert rules["health"]["from"] == [{"podSelector": {"matchLabels": release}}]
    gateway = one(docs, "NetworkPolicy", full("gateway"))
    assert [r["ports"][0]["port"] for r in gateway["spec"]["ingress"]] == [
        "grpc", "health", "metrics"]  # the public port, from anyone (or gatewayFrom)


@pytest.mark.parametrize("name", NAMES)
def test_pods_run_unprivileged_and_without_api_tokens(name: str) -> None:
    docs = render(value_set(name))
    pods = [(w["metadata"]["name"], pod_spec(w)) for w in workloads(docs)]
    pods += [(p["metadata"]["name"], p["spec"]) for p in find(docs, "Pod")]
    for pod_name, spec in pods:
        assert spec["securityContext"]["runAsNonRoot"] is True, pod_name
        assert spec["automountServiceAccountToken"] is (pod_name == full("controller"))
        for container in spec["containers"]:
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True
            assert security["allowPrivilegeEscalation"] is False
            assert security["capabilities"]["drop"] == ["ALL"]
            assert container["resources"]["requests"]["cpu"]


@pytest.mark.parametrize("name", NAMES)
def test_grace_periods_cover_the_graceful_shutdown(name: str) -> None:
    values = value_set(name)
    grace = float(values.get("global", {}).get("graceSeconds", 5))
    for workload in workloads(render(values)):
        spec = pod_spec(workload)
        [container] = spec["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert float(env["MACHIAVELOX_GRACE_S"]) == grace
        sleep = container.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get(
            "seconds", 0)
        assert spec["terminationGracePeriodSeconds"] > sleep + grace, workload["metadata"]
    sts = one(render(values), "StatefulSet", full("table"))
    spec = pod_spec(sts)
    assert spec["terminationGracePeriodSeconds"] >= 600  # tables play on to the end
    [container] = spec["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    drain = int(env["MACHIAVELOX_TABLE_DRAIN_S"])  # a stopping shard serves its tables...
    assert drain >= 0.9 * spec["terminationGracePeriodSeconds"] - 60
    assert drain + grace < spec["terminationGracePeriodSeconds"]  # ...then stops in time


def test_the_gateways_sleep_before_stopping_and_autoscale() -> None:
    docs = render()
    gateway = one(docs, "Deployment", full("gateway"))
    assert "replicas" not in gateway["spec"]  # the HPA owns it
    assert gateway["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    [container] = pod_spec(gateway)["containers"]
    assert container["lifecycle"]["preStop"]["sleep"]["seconds"] == 5
    hpa = one(docs, "HorizontalPodAutoscaler", full("gateway"))
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": full("gateway")}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 10)


@pytest.mark.parametrize("name", NAMES)
def test_disruption_budgets_and_spread_select_their_own_pods(name: str) -> None:
    docs = render(value_set(name))
    pods = {w["metadata"]["name"]: w["spec"]["template"]["metadata"]["labels"]
            for w in workloads(docs)}
    for pdb in find(docs, "PodDisruptionBudget"):
        selector = pdb["spec"]["selector"]["matchLabels"]
        matched = [n for n, labels in pods.items() if selector.items() <= labels.items()]
        assert matched == [pdb["metadata"]["name"]]
    for workload in workloads(docs):
        for constraint in pod_spec(workload).get("topologySpreadConstraints", []):
            selector = constraint["labelSelector"]["matchLabels"]
            assert selector.items() <= pods[workload["metadata"]["name"]].items()
            assert constraint["whenUnsatisfiable"] == "ScheduleAnyway"


def test_rbac_is_only_what_the_controller_uses() -> None:
    docs = render()
    role = one(docs, "Role", full("controller"))
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r.get("resourceNames", [])),
              tuple(r["verbs"])) for r in role["rules"]}
    assert rules == {
        (("apps",), ("statefulsets/scale",), (full("table"),), ("get", "update")),
        (("apps",), ("statefulsets",), (full("table"),), ("watch",)),
        (("coordination.k8s.io",), ("leases",), (full("controller") + "-leader",),
         ("get", "update")),
        (("coordination.k8s.io",), ("leases",), (), ("create",)),
    }
    assert find(docs, "ClusterRole") == [] and find(docs, "ClusterRoleBinding") == []
    binding = one(docs, "RoleBinding", full("controller"))
    assert binding["roleRef"]["name"] == full("controller")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": full("controller"),
                                    "namespace": NAMESPACE}]
    controller = one(docs, "Deployment", full("controller"))
    assert pod_spec(controller)["serviceAccountName"] == full("controller")
    env = {e["name"]: e.get("value") for e in pod_spec(controller)["containers"][0]["env"]}
    assert env["MACHIAVELOX_CONTROLLER_LEASE_NAME"] == full("controller") + "-leader"


def test_the_token_key_is_a_secret() -> None:
    docs = render()
    secret = one(docs, "Secret", "mx-machiavelox-token")
    key = base64.b64decode(secret["data"]["token-key"])
    assert len(key) >= 16
    for component in ("gateway", "matchmaking"):
        [container] = pod_spec(one(docs, "Deployment", full(component)))["containers"]
        [env] = [e for e in container["env"] if e["name"] == "MACHIAVELOX_TOKEN_KEY"]
        assert env["valueFrom"]["secretKeyRef"] == {"name": "mx-machiavelox-token",
                                                    "key": "token-key"}
    for component in ("scoring", "presence", "controller"):  # least privilege
        [container] = pod_spec(one(docs, "Deployment", full(component)))["containers"]
        assert "MACHIAVELOX_TOKEN_KEY" not in {e["name"] for e in container["env"]}
    given = render({"global": {"tokenKey": {"value": "a-key-of-the-operators-own"}}})
    assert base64.b64decode(one(given, "Secret", "mx-machiavelox-token")["data"][
        "token-key"]) == b"a-key-of-the-operators-own"
    existing = render(value_set("production"))
    assert find(existing, "Secret") == []


def test_postgresql_and_redis_are_external_with_secret_passwords() -> None:
    docs = render(value_set("postgres-redis"))
    [scoring] = pod_spec(one(docs, "Deployment", full("scoring")))["containers"]
    env = {e["name"]: e for e in scoring["env"]}
    assert env["MACHIAVELOX_SCORING_DATABASE_URL"]["value"] == (
        "postgresql://mxv_scoring@postgres.default.svc.cluster.local:5432/mxv?sslmode=require")
    assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "mx-machiavelox-postgresql"
    secret = one(docs, "Secret", "mx-machiavelox-postgresql")
    assert base64.b64decode(secret["data"]["password"]) == b"s3cret pass@word"
    [presence] = pod_spec(one(docs, "Deployment", full("presence")))["containers"]
    env = {e["name"]: e for e in presence["env"]}
    assert env["MACHIAVELOX_PRESENCE_REDIS_URL"]["value"] == (
        "redis://:$(REDIS_PASSWORD)@redis.default.svc.cluster.local:6380/2")
    assert env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "mx-machiavelox-redis"
    assert one(docs, "Deployment", full("scoring"))["spec"]["replicas"] == 2
    assert find(docs, "PersistentVolumeClaim") == []
    sqlite = render()
    [scoring] = pod_spec(one(sqlite, "Deployment", full("scoring")))["containers"]
    env = {e["name"]: e for e in scoring["env"]}
    assert env["MACHIAVELOX_SCORING_DATABASE_URL"]["value"] == "sqlite:////data/scoring.sqlite3"
    assert one(sqlite, "PersistentVolumeClaim", full("scoring"))


def env_of(workload: Manifest) -> dict[str, dict[str, Any]]:
    [container] = pod_spec(workload)["containers"]
    return {e["name"]: e for e in container["env"]}


def test_without_postgresql_each_shard_journals_on_its_own_volume() -> None:
    sts = one(render(), "StatefulSet", full("table"))
    env = env_of(sts)
    assert env["MACHIAVELOX_DATA_DIR"]["value"] == "/data"
    # the shard id (the pod name) in the file name: one journal per shard
    assert env["MACHIAVELOX_TABLE_JOURNAL"]["value"] == (
        "sqlite:////data/journal-$(POD_NAME).sqlite3")
    assert "PGPASSWORD" not in env
    [container] = pod_spec(sts)["containers"]
    assert {"name": "journal", "mountPath": "/data"} in container["volumeMounts"]
    assert "journal" not in {v["name"] for v in pod_spec(sts)["volumes"]}  # the claim's
    [claim] = sts["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "journal"
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "1Gi"
    assert "storageClassName" not in claim["spec"]  # the cluster's default
    # a shard scaled away keeps its journal for when its ordinal comes back
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain", "whenScaled": "Retain"}
    assert "checksum/config" not in sts["spec"]["template"]["metadata"]["annotations"]
    sized = one(render({"table": {"journal": {"storage": {"size": "5Gi",
                                                          "storageClass": "local-ssd"}}}}),
                "StatefulSet", full("table"))
    [claim] = sized["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["storageClassName"] == "local-ssd"
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"


@pytest.mark.parametrize("name", ["postgres-redis", "production"])
def test_with_postgresql_the_shards_journal_in_scorings_database(name: str) -> None:
    docs = render(value_set(name))
    sts = one(docs, "StatefulSet", full("table"))
    scoring = one(docs, "Deployment", full("scoring"))
    table_env, scoring_env = env_of(sts), env_of(scoring)
    url = table_env["MACHIAVELOX_TABLE_JOURNAL"]["value"]
    assert url == scoring_env["MACHIAVELOX_SCORING_DATABASE_URL"]["value"]
    assert url.startswith("postgresql://") and ":" not in url.split("@")[0].removeprefix(
        "postgresql://")  # no password in the URL
    assert table_env["PGPASSWORD"] == scoring_env["PGPASSWORD"]  # the same Secret and key
    assert "volumeClaimTemplates" not in sts["spec"]
    assert "MACHIAVELOX_DATA_DIR" not in table_env
    [container] = pod_spec(sts)["containers"]
    assert "/data" not in {m["mountPath"] for m in container["volumeMounts"]}
    # the shards restart with a new password or server, as scoring does
    checksum = sts["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    assert checksum == scoring["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    # the NetworkPolicies restrict ingress only: the shards reach PostgreSQL as scoring does
    assert {tuple(p["spec"]["policyTypes"]) for p in find(docs, "NetworkPolicy")} <= {
        ("Ingress",)}


def test_the_journal_settings_come_from_the_values() -> None:
    sts = one(render({"table": {"journal": {"timeoutSeconds": 0.5}, "resumeGraceSeconds": 30,
                                "reportWaitSeconds": 20}}), "StatefulSet", full("table"))
    env = {k: v["value"] for k, v in env_of(sts).items() if "value" in v}
    assert env["MACHIAVELOX_TABLE_JOURNAL_TIMEOUT_S"] == "0.5"
    assert env["MACHIAVELOX_TABLE_RESUME_GRACE_S"] == "30"
    assert env["MACHIAVELOX_TABLE_REPORT_WAIT_S"] == "20"
    # the report wait comes after the drain and the graceful stop, within the grace period
    assert int(env["MACHIAVELOX_TABLE_DRAIN_S"]) == 3600 - 5 - 20 - 30


def test_tracing_and_scraping_are_configured() -> None:
    docs = render(value_set("production"))
    for workload in workloads(docs):
        [container] = pod_spec(workload)["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector.observability.svc:4317"
        assert env["OTEL_TRACES_SAMPLER"] == "parentbased_traceidratio"
        assert env["OTEL_TRACES_SAMPLER_ARG"] == "0.01"
        assert env["MACHIAVELOX_METRICS_PORT"] == "9464"
        annotations = workload["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == "9464"
    monitor = one(docs, "ServiceMonitor", "mx-machiavelox")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    selector = monitor["spec"]["selector"]["matchLabels"]
    scraped = [s for s in find(docs, "Service")
               if selector.items() <= s["metadata"]["labels"].items()]
    jobs = {s["metadata"]["labels"][monitor["spec"]["jobLabel"]] for s in scraped}
    # the job names of the alerts (production has no bot host: its players sign in with OIDC)
    assert jobs == {f"machiavelox-{c}" for c in COMPONENTS if c != "bot-host"}
    for service in scraped:
        assert "metrics" in {p["name"] for p in service["spec"]["ports"]}
    rule = one(docs, "PrometheusRule", "mx-machiavelox")
    names = {g["name"] for g in rule["spec"]["groups"]}
    assert {"machiavelox-alerts"} <= names and len(names) >= 2
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in {
        e["name"] for e in pod_spec(one(render(), "Deployment", full("gateway")))[
            "containers"][0]["env"]}


def test_the_helm_test_checks_every_service() -> None:
    docs = render()
    pod = one(docs, "Pod", "mx-machiavelox-test-health")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    [container] = pod["spec"]["containers"]
    assert container["command"] == ["python", "/checks/health-check.py"]
    targets = dict(arg.split("=") for arg in container["args"])
    assert set(targets) == {"gateway", "matchmaking", "scoring", "presence", "controller",
                            full("table") + "-0"}
    services = {s["metadata"]["name"]: s for s in find(docs, "Service")}
    suffix = f".{NAMESPACE}.svc.cluster.local"
    for address in targets.values():
        host, port = address.rsplit(":", 1)
        host = host.removesuffix(suffix)
        service = services[host.split(".", 1)[-1] if host.startswith(full("table")) else host]
        assert int(port) in {p["port"] for p in service["spec"]["ports"]}, address
    config = one(docs, "ConfigMap", "mx-machiavelox-test-health")
    script = (CHART / "files" / "health-check.py").read_text()
    assert config["data"]["health-check.py"] == script
    assert config["metadata"]["annotations"]["helm.sh/hook"] == "test"


def test_notes_tell_how_to_reach_the_gateway() -> None:
    text = notes()
    assert "mx-machiavelox-gateway" in text and "helm test mx" in text


def test_chart_metadata() -> None:
    with helm.Chart.load(str(CHART)) as chart:
        meta = chart.metadata
        assert chart.schema is not None
    assert meta["apiVersion"] == "v2" and meta["name"] == "machiavelox"
    assert meta["kubeVersion"] == ">=1.30.0-0"


def manifests_of(name: str) -> list[Manifest]:
    return render(value_set(name))


def test_value_sets_render_differently() -> None:
    """Each ci value set exercises something the others do not."""
    kinds = {name: sorted({(d["kind"], d["metadata"]["name"]) for d in manifests_of(name)})
             for name in NAMES}
    assert len({tuple(v) for v in kinds.values()}) == len(NAMES)
