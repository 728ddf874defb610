"""A shard's capacity counts tables in play, not tables in memory (`Shard.full`).

The real Shard in process, with no journal. Would fail if a full shard took one more table, or
if an ended table still in memory (waiting out its resume grace) kept a place: the count is
skipped while the tables in memory are fewer than the capacity, and must be exact once they
are not.
"""

from __future__ import annotations

import pytest

from machiavelox import rules
from machiavelox.platform.errors import ServiceError
from machiavelox.table.shard import Shard
from tests.support.shard_items import play_to_end, recording_link, ticking_clock

PLAYERS = ["ann", "bob", "cy"]


def _create(shard: Shard, table_id: str) -> None:
    shard.create_table(table_id, PLAYERS, rules.MatchKind.SINGLE, True)


async def test_a_full_shard_refuses_and_an_ended_table_frees_its_place() -> None:
    shard = Shard("shard-0", 2, ticking_clock(), resume_grace_s=10)
    link, _ = recording_link(shard)
    _create(shard, "shard-0.t0")
    _create(shard, "shard-0.t1")
    assert shard.full
    with pytest.raises(ServiceError) as refused:
        _create(shard, "shard-0.t2")
    assert refused.value.reason == "shard/full"
    _create(shard, "shard-0.t1")  # the same table asked again: still its own, no new place

    await play_to_end(shard, link, "shard-0.t0", PLAYERS)
    assert shard.tables["shard-0.t0"].finished and len(shard.tables) == 2  # still in memory
    assert not shard.full and shard.tables_in_play == 1
    _create(shard, "shard-0.t2")  # the ended table's place
    assert shard.full and len(shard.tables) == 3
    with pytest.raises(ServiceError) as again:
        _create(shard, "shard-0.t3")
    assert again.value.reason == "shard/full"
    await shard.close()
