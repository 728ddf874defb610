"""The controller's settings: read from MACHIAVELOX_CONTROLLER_*, refused with clear messages."""

from __future__ import annotations

import pytest

from machiavelox.controller.decide import Buffer
from machiavelox.controller.settings import ControllerSettings
from machiavelox.platform.settings import SettingsError

BASE = {"MACHIAVELOX_CONTROLLER_STATEFULSET": "mx-table",
        "MACHIAVELOX_CONTROLLER_SHARD_TEMPLATE": "{shard}.mx-table-headless.games.svc:7100",
        "MACHIAVELOX_CONTROLLER_NAMESPACE": "games"}


def test_defaults_and_addresses() -> None:
    s = ControllerSettings.from_env({**BASE, "HOSTNAME": "mx-controller-abc"})
    assert (s.namespace, s.statefulset, s.identity) == ("games", "mx-table", "mx-controller-abc")
    assert s.policy.buffer == Buffer(percent=10)
    assert (s.policy.min_replicas, s.policy.max_replicas, s.policy.shard_capacity) == (1, 10, 2000)
    assert s.shard_id(3) == "mx-table-3"
    assert s.shard_address(3) == "mx-table-3.mx-table-headless.games.svc:7100"
    assert s.renew_deadline_s < s.lease_duration_s
    assert s.kube_api == ""


def test_explicit_shard_addresses_win_over_the_template() -> None:
    s = ControllerSettings.from_env({**BASE, "MACHIAVELOX_CONTROLLER_SHARDS":
                                     "mx-table-0=127.0.0.1:9000"})
    assert s.shard_address(0) == "127.0.0.1:9000"
    assert s.shard_address(1) == "mx-table-1.mx-table-headless.games.svc:7100"
    only_map = {**BASE, "MACHIAVELOX_CONTROLLER_SHARD_TEMPLATE": "",
                "MACHIAVELOX_CONTROLLER_SHARDS": "mx-table-0=127.0.0.1:9000"}
    assert ControllerSettings.from_env(only_map).shard_address(1) is None


@pytest.mark.parametrize(("change", "message"), [
    ({"MACHIAVELOX_CONTROLLER_STATEFULSET": ""}, "must name the shard StatefulSet"),
    ({"MACHIAVELOX_CONTROLLER_SHARD_TEMPLATE": ""}, "SHARD_TEMPLATE"),
    ({"MACHIAVELOX_CONTROLLER_SHARD_TEMPLATE": "shard.svc:7100"}, "must contain {shard}"),
    ({"MACHIAVELOX_CONTROLLER_BUFFER": "lots"}, "number of tables"),
    ({"MACHIAVELOX_CONTROLLER_BUFFER": "100%"}, "1% to 99%"),
    ({"MACHIAVELOX_CONTROLLER_MIN_REPLICAS": "4", "MACHIAVELOX_CONTROLLER_MAX_REPLICAS": "3"},
     "must not be below min"),
    ({"MACHIAVELOX_CONTROLLER_MIN_REPLICAS": "0"}, "at least 1"),
    ({"MACHIAVELOX_CONTROLLER_RENEW_S": "10"}, "two thirds of the lease duration"),
    ({"MACHIAVELOX_CONTROLLER_INTERVAL_S": "0"}, "must be positive"),
    ({"MACHIAVELOX_CONTROLLER_PORT": "70000"}, "at most 65535"),
    ({"MACHIAVELOX_LOG_LEVEL": "LOUD"}, "MACHIAVELOX_LOG_LEVEL"),
    ({"MACHIAVELOX_CONTROLLER_MAX_REPLICAS": "many"}, "must be an integer"),
])
def test_bad_settings_are_refused_clearly(change: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        ControllerSettings.from_env({**BASE, **change})
