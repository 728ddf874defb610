"""A Machiavelox network bot resumes a dropped Play stream (docs/protocol.md, "Resuming after a
dropped connection", "Resending an unanswered action (idempotent)"; bots/stream.py).

Over a real cluster (`machiavelox up`'s services on loopback, rules clock x5, a seeded deal:
tests/bots/test_network_bots.py's) under `machiavelox up`'s supervisor, three `hard` bots
queue and play a smazzata. At the first bot's first decision after `KILL_AFTER` of its actions
were answered (`Bot.on_decided`, before its reaction delay) the gateway is killed by PID
(SIGKILL) and waited for, so the action the bot then sends goes nowhere. The supervisor starts
the gateway again on its port; every bot's stream ended UNAVAILABLE, and each resumes it: a new
stream with `Join{last_seq}`, the action in flight sent again with the same
`client_action_id`.

Asserted, for each bot: it resumed; across all its streams it received every event after its
first snapshot exactly once, in order (no gap, none twice); no action id answered twice; the
smazzata played to its end (the last message the ended snapshot; the same result for all three)
with no refusal its view could predict. For the first bot: the action sent into the dead stream
was answered exactly once, on the resumed stream. The gateway was restarted once; no service
logged an error.

Fails without the resume (checked with `stream.MAX_RESUMES` at 0: the bots stop at the kill
with no result) and without the resend (checked: the action sent into the dead stream is never
answered).
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

import grpc
import pytest

from machiavelox import rules
from machiavelox._gen.v1 import common_pb2, gateway_pb2
from machiavelox.bots.player import Bot
from machiavelox.local.processes import Proc
from machiavelox.local.supervisor import Supervisor
from machiavelox.platform import keepalive
from tests.bots.test_network_bots import SCALE
from tests.bots.test_network_bots import cluster as seeded_cluster  # noqa: F401 (a fixture)

NAMES = ("rs1", "rs2", "rs3")
KILL_AFTER = 4  # the first bot's actions answered before the gateway is killed
STEP_S = 20.0  # the longest the killed gateway may take to exit


@pytest.fixture
def supervised(seeded_cluster: dict[str, Proc]  # noqa: F811 (the fixture imported above)
               ) -> Iterator[tuple[dict[str, Proc], Supervisor]]:
    """The cluster, its crashed services restarted (the supervisor stops first)."""
    supervisor = Supervisor(seeded_cluster).start()
    try:
        yield seeded_cluster, supervisor
    finally:
        supervisor.stop()


def answered(record: list[gateway_pb2.PlayResponse]) -> list[str]:
    """The action ids of the bot's acks and refusals in `record`, in order."""
    ids = [r.ack.client_action_id if r.WhichOneof("kind") == "ack" else
           r.refused.client_action_id for r in record if r.WhichOneof("kind") in ("ack",
                                                                                  "refused")]
    return [i for i in ids if i]


@pytest.mark.timeout(150)
async def test_bots_resume_their_streams_when_the_gateway_is_killed_mid_game(
        supervised: tuple[dict[str, Proc], Supervisor]) -> None:
    procs, supervisor = supervised
    gateway = procs["gateway"]
    records: dict[str, list[gateway_pb2.PlayResponse]] = {n: [] for n in NAMES}
    killed: list[tuple[str, int, list[str]]] = []  # the id sent into the dead stream, where

    async with grpc.aio.insecure_channel(gateway.address, options=keepalive.CLIENT) as ch:
        bots = [Bot(name, ch, ch, level="hard", time_scale=SCALE, max_game_s=100,
                    record=records[name]) for name in NAMES]
        first = bots[0]

        async def kill_once(action: rules.Action, view: rules.PlayerView) -> None:
            record = records[first.name]
            done = answered(record)
            if killed or len(done) < KILL_AFTER:
                return
            killed.append((f"{first.name}-{len(done) + 1}", len(record), done))
            popen = gateway.popen
            os.kill(popen.pid, signal.SIGKILL)
            await asyncio.to_thread(popen.wait, STEP_S)

        first.on_decided = kill_once
        outcomes = await asyncio.wait_for(asyncio.gather(*(b.run() for b in bots)), 120)

    assert killed, "the gateway was killed mid-game"
    for o in outcomes:
        seen = records[o.player]
        assert o.result is not None, (o.player, o.resumes, o.actions)
        assert o.result == outcomes[0].result, "the same end for all"
        assert o.resumes >= 1, o.player
        assert o.predictable == [], (o.player, o.predictable)
        last = seen[-1]
        assert last.WhichOneof("kind") == "snapshot", last
        assert last.snapshot.view.phase == common_pb2.PHASE_ENDED
        start = next(r.snapshot.seq for r in seen if r.WhichOneof("kind") == "snapshot")
        seqs = [r.event.seq for r in seen if r.WhichOneof("kind") == "event"]
        assert seqs == list(range(start + 1, start + 1 + len(seqs))), (o.player, "gap or twice")
        ids = answered(seen)
        assert len(ids) == len(set(ids)), (o.player, "an action answered twice")
    assert supervisor.restarts("gateway") == 1
    [(resent, at, before)] = killed
    assert before == [f"{first.name}-{i}" for i in range(1, len(before) + 1)], before
    assert answered(records[first.name][at:]).count(resent) == 1, "the resend answered once"
    for proc in procs.values():  # the kill is no service's error
        errors = [r for r in proc.logs() if r.get("level") in ("ERROR", "CRITICAL")]
        assert not errors, f"{proc.name} logged errors: {errors}"
    print("resumes / actions / events:",
          [(o.player, o.resumes, o.actions, o.events) for o in outcomes])
