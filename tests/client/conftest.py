"""Fixtures of the client's tests: real clusters on loopback (machiavelox.local.processes).

`table_cluster`: a shard and a gateway (development Login on), tables created directly on the
shard, for the connection's tests. `cluster`: everything `machiavelox up` starts (matchmaking,
presence, scoring, two shards, the gateway, the bot host), with the rules clock 40 times
faster, shared by the tests of a module (each test uses its own player names: a player is in
one place at a time). A module may set TIME_SCALE, BOT_INTERVAL_S (between the actions of
its practice tables' basic bots, which the bot host runs) and DEAL_SEED (every table's first
deal is that seeded one: a smazzata of a known length, which keeps CI's time steady).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from machiavelox.bots.invite import BOT_INTERVAL_S
from machiavelox.local.processes import Proc, check_all_clean, free_port, start
from machiavelox.local.up import launch, stop_all

KEY = "test-key-0123456789abcdef"
TIME_SCALE = 40.0


@pytest.fixture
def table_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    tmp = tmp_path_factory.mktemp("table-cluster")
    shard_port = free_port()
    procs: dict[str, Proc] = {}
    try:
        procs["shard"] = start("shard", "table", {"MACHIAVELOX_SHARD_ID": "shard-0",
                                                  "MACHIAVELOX_TABLE_PORT": str(shard_port),
                                                  "MACHIAVELOX_SCORING_ADDRESS": "",
                                                  "MACHIAVELOX_GRACE_S": "1"}, tmp)
        procs["gateway"] = start("gateway", "gateway", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
            "MACHIAVELOX_PRESENCE_ADDRESS": "", "MACHIAVELOX_GRACE_S": "1",
            "MACHIAVELOX_GATEWAY_SHARDS": f"shard-0=127.0.0.1:{shard_port}"}, tmp)
        yield procs
    finally:
        check_all_clean(reversed(list(procs.values())))


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    """A module may set its own TIME_SCALE, BOT_INTERVAL_S and DEAL_SEED."""
    tmp = tmp_path_factory.mktemp("cluster")
    scale = float(getattr(request.module, "TIME_SCALE", TIME_SCALE))
    interval = float(getattr(request.module, "BOT_INTERVAL_S", BOT_INTERVAL_S))
    seed = getattr(request.module, "DEAL_SEED", None)
    with pytest.MonkeyPatch.context() as env:
        if seed is not None:  # the shards inherit it
            env.setenv("MACHIAVELOX_TABLE_DEAL_SEED", str(int(seed)))
        procs = launch(0, tmp, tmp, time_scale=scale, bot_interval_s=interval)
    yield procs
    assert stop_all(procs) == [], "every service stops cleanly on SIGTERM"
    for proc in procs.values():
        errors = [r for r in proc.logs() if r.get("level") in ("ERROR", "CRITICAL")]
        assert not errors, f"{proc.name} logged errors: {errors}"
