"""The chart's Role grants exactly what the controller does: the controller (real `kubernetes`
client) runs against the fake API server under the names the chart gives it, and every request
it makes must be allowed by a rule, and every verb of every rule must be used."""

from __future__ import annotations

import asyncio
import time

from machiavelox.controller.kube import LeaseStore, ShardScale, StatefulSetWatch, api_client
from machiavelox.controller.lease import LeaderElector
from machiavelox.controller.reconcile import Controller
from machiavelox.controller.settings import ControllerSettings
from machiavelox.controller.shards import ShardClients
from machiavelox.local.pki import session_pki
from tests.controller.fake_kube import FakeKube, Request, running
from tests.deploy.chart import NAMESPACE, container_env, full, one, pod_spec, render


def allowed(request: Request, rules: list[dict[str, object]]) -> list[int]:
    """Indexes of the rules that allow the request (RBAC: any rule suffices)."""
    out = []
    for i, rule in enumerate(rules):
        names = rule.get("resourceNames") or []
        assert isinstance(names, list)
        if (request.api_group in rule["apiGroups"]  # type: ignore[operator]
                and request.resource in rule["resources"]  # type: ignore[operator]
                and request.verb in rule["verbs"]  # type: ignore[operator]
                and (not names or request.name in names)):
            out.append(i)
    return out


async def exercise(kube: FakeKube, settings: ControllerSettings) -> None:
    """What a controller does in its life: lead, watch, reconcile (scale), release."""
    api = api_client(kube.url, settings.identity)
    elector = LeaderElector(LeaseStore(api, settings.namespace, settings.lease_name),
                            settings.identity, settings.lease_duration_s,
                            settings.renew_deadline_s)
    assert elector.tick() and elector.tick()  # create, then get + update
    woke = asyncio.Event()
    loop = asyncio.get_running_loop()

    def changed() -> None:
        loop.call_soon_threadsafe(woke.set)

    watch = StatefulSetWatch(api, settings.namespace, settings.statefulset, changed, timeout_s=5)
    watch.start()
    await asyncio.wait_for(woke.wait(), 10)
    shards = ShardClients(settings.shard_address, settings.shard_id, 0.5,
                          session_pki().tls("controller").connector("table"))
    controller = Controller(settings.policy, ShardScale(api, settings.namespace,
                                                        settings.statefulset),
                            shards, elector.leading, time.monotonic, 1.0)
    done = await controller.reconcile_once()  # no shard yet: below the minimum, scale up
    assert done is not None and done.acted == ("replicas 0->2",)
    watch.stop()
    await shards.close()
    elector.release()


async def test_the_role_is_exactly_what_the_controller_uses() -> None:
    docs = render()
    role = one(docs, "Role", full("controller"))
    [container] = pod_spec(one(docs, "Deployment", full("controller")))["containers"]
    env = container_env(container, pod_name="mx-machiavelox-controller-abc")
    with running(namespace=NAMESPACE, statefulset=full("table"), replicas=0) as kube:
        settings = ControllerSettings.from_env({**env,
                                                "MACHIAVELOX_CONTROLLER_KUBE_API": kube.url})
        assert settings.identity == "mx-machiavelox-controller-abc"
        await exercise(kube, settings)
        requests = list(kube.requests)
    assert kube.unknown() == []
    rules = role["rules"]
    used: set[tuple[int, str]] = set()
    for request in requests:
        assert request.status < 400 or request.status == 404, request
        assert request.path.startswith(f"/apis/{request.api_group}/v1/namespaces/{NAMESPACE}/")
        matching = allowed(request, rules)
        assert matching, f"the Role does not allow {request.verb} {request.resource} " \
                         f"{request.name!r}"
        used.update((i, request.verb) for i in matching)
    granted = {(i, verb) for i, rule in enumerate(rules) for verb in rule["verbs"]}
    assert granted - used == set(), "granted but never used"
