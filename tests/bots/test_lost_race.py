"""A race lost by a leveled bot over the network, forced, and the bot recomputing (issue 15:
"races lost to faster players (the table moved under them: they recompute)").

Over a real cluster (`machiavelox up`'s services on loopback, rules clock x5, a seeded deal) a
friendly table seats two scripted apps (ana, ben: Play streams of the test's own) and one
`easy` network bot (`InviteBot`). The bot's test hook `Bot.on_decided` is awaited after each
decision, before the bot's human-like reaction delay: for the first decision that puts a card
onto a table meld (an Attach, M5.2, or a Place, M5.3), ana declares a card (M5.3.1, M6.2) and
moves every card of that meld, one at a time (ends first: no interior split), into a new meld
of her own, waiting for each ack before the hook returns. The meld the bot aimed at is gone when
its action arrives (M6.4: the first to arrive wins; an attach onto a meld that is there but
changed would be accepted and judged later, M5.4, so the meld's id has to go). Then:

- the bot's action is refused `meld/unknown` (nothing changed), and the bot counts it as a race
  (`BotOutcome.races`), not as a refusal its view could predict (`predictable`);
- ana's winning `moved` events carry her acks' arrival indexes, lower than every one the bot
  gets later (docs/protocol.md: `arrival_index`);
- ana gives her calata up (ANNULLA, M5.5.6: the table as it was); the bot plans again from the
  view it has then (M5.0.1) and puts the very card it was refused on the table, accepted;
- ana and ben abandon (M11.6, M11.3): the bot wins as the survivor; the smazzata ended with no
  refusal of the bot's that its view could predict.

The protocol gives a refused action no arrival index (`ActionRefused` is an id and a code), so
"ana arrived first" is shown by her acks' indexes against those of every ack the bot gets later.
Fails with a bot that gives up after a refusal, or one that sends the refused action again
(checked with temporary mutants of `LeveledBrain`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from machiavelox import codec, rules
from machiavelox._gen.v1 import (
    common_pb2,
    gateway_pb2,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    table_pb2,
)
from machiavelox.bots.invite import InviteBot
from machiavelox.bots.player import BotOutcome
from machiavelox.local.processes import Proc
from machiavelox.local.up import launch, stop_all
from machiavelox.platform import keepalive
from tests.faults.players import Player, acked
from tests.support.agora import next_update, tokens
from tests.support.client import PlayClient, bearer

pytestmark = pytest.mark.timeout(90)
SCALE = 5.0  # the rules clock: the bot's delays (table time) and the 40 s of a calata / 5
SEED = 22  # the deal: the bot, p3, attaches early (draws, a set of 8s, draws, then 8D)
STEP_S = 20.0  # the longest any one expected step may take (wall time)
LOST_CODE = "meld/unknown"  # the engine's refusal: no meld of that id on the table


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Proc]]:
    monkeypatch.setenv("MACHIAVELOX_TABLE_DEAL_SEED", str(SEED))  # the shards inherit it
    procs = launch(0, tmp_path, tmp_path, time_scale=SCALE)
    try:
        yield procs
    finally:
        assert stop_all(procs) == [], "every service stops cleanly on SIGTERM"


@dataclass
class App:
    """A scripted app at the table: its session (`Player`) and its signs of life (M11.1)."""
    player: Player
    beating: asyncio.Task[None] = field(init=False)

    def __post_init__(self) -> None:
        self.beating = asyncio.create_task(self._beat())

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.player.client.send_raw(gateway_pb2.PlayRequest(heartbeat=gateway_pb2.Heartbeat()))

    @property
    def seat(self) -> rules.Seat:
        return self.player.seat

    async def answer(self, action: rules.Action) -> common_pb2.Ack:
        """`action` acked, and the events of its step read (they follow the ack)."""
        response = await self.player.act(action)
        assert response.WhichOneof("kind") == "ack", (action, response)
        ack: common_pb2.Ack = response.ack
        for _ in range(1_000):
            if any(e.arrival_index == ack.arrival_index for e in self.player.events):
                return ack
            await self.player.next()
        raise AssertionError(f"no event of {action}")

    def event_of(self, ack: common_pb2.Ack, kind: str) -> common_pb2.Event:
        return next(e for e in self.player.events
                    if e.arrival_index == ack.arrival_index and e.kind == kind)

    async def close(self) -> None:
        self.beating.cancel()
        await self.player.close()


async def scatter(app: App, card: rules.Card, meld: rules.MeldView) -> list[int]:
    """Declare `card`, then move every card of `meld` into a new meld (M5.3): the meld's id
    is gone. The arrival indexes of the acks, in order."""
    arrivals = [(await app.answer(rules.Declare(app.seat, (card,)))).arrival_index]
    left = [tc.card for tc in meld.cards]
    dst: int | None = None
    for _ in range(len(meld.cards)):
        # an end of the run first (an interior card would split it, with a new id for a half)
        moving = next(c for c in left if rules.split_on_removal(left, c) is None)
        ack = await app.answer(rules.Move(app.seat, moving, meld.id, dst))
        arrivals.append(ack.arrival_index)
        dst = app.event_of(ack, "moved").to_meld
        left.remove(moving)
    return arrivals


async def until(check: Callable[[], bool], what: str, limit_s: float = STEP_S) -> None:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not in {limit_s} s: {what}")


@dataclass
class Race:
    """The forced race: ana's card to declare, the bot's action she beat, her arrivals, and
    every decision of the bot's (with the view it was made on)."""
    card: rules.Card | None = None  # (drawn before the hook is set)
    action: rules.Attach | rules.Place | None = None
    arrivals: list[int] = field(default_factory=list)
    decisions: list[tuple[rules.Action, rules.PlayerView]] = field(default_factory=list)

    @staticmethod
    def refusal(record: list[gateway_pb2.PlayResponse]) -> int | None:
        """Where the bot's first refused action is in its record."""
        return next((i for i, r in enumerate(record) if r.WhichOneof("kind") == "refused"
                     and r.refused.client_action_id), None)

    def replayed(self, record: list[gateway_pb2.PlayResponse], seat: rules.Seat) -> bool:
        """The card the bot was refused, put on the table by the bot (accepted)."""
        assert self.action is not None
        card = codec.card_to_pb(self.action.card)
        return any(r.WhichOneof("kind") == "event" and card in r.event.cards
                   and r.event.kind in ("attached", "placed", "direct")
                   and codec.seat_from_pb(r.event.player) == seat for r in record)


@pytest.fixture
async def gateway(cluster: dict[str, Proc]) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(cluster["gateway"].address,
                                         options=keepalive.CLIENT) as channel:
        yield channel


async def seat_apps(channel: grpc.aio.Channel, code: str, toks: dict[str, str],
                    start: Callable[[], object]) -> tuple[str, list[str]]:
    """The apps join the lobby by code, then the bot does (seats in joining order: the bot is
    p3); the table and its seats."""
    stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
    calls = []
    for tok in toks.values():
        calls.append(stub.JoinFriendlyTable(
            matchmaking_pb2.JoinFriendlyTableRequest(invite_code=code), metadata=bearer(tok)))
        assert (await next_update(calls[-1])).WhichOneof("kind") == "waiting"
    start()
    assignment = None
    for call in calls:
        for _ in range(100):
            update = await next_update(call)
            if update.WhichOneof("kind") == "assignment":
                assignment = update.assignment
                break
        call.cancel()
    assert assignment is not None
    return assignment.table_id, list(assignment.player_ids)


async def test_an_easy_bot_loses_a_race_and_recomputes(
        cluster: dict[str, Proc], gateway: grpc.aio.Channel) -> None:
    toks = await tokens(cluster["gateway"], "ana", "ben")
    created = await matchmaking_pb2_grpc.MatchmakingServiceStub(gateway).CreateFriendlyTable(
        matchmaking_pb2.CreateFriendlyTableRequest(kind=table_pb2.MATCH_KIND_SINGLE),
        metadata=bearer(toks["ana"]), timeout=STEP_S)
    bot = InviteBot("easybot", gateway, created.invite_code, level="easy", time_scale=SCALE,
                    max_game_s=60)
    record: list[gateway_pb2.PlayResponse] = []
    bot.record = record
    runs: list[asyncio.Task[BotOutcome]] = []
    table_id, players = await asyncio.wait_for(seat_apps(
        gateway, created.invite_code, toks, lambda: runs.append(asyncio.create_task(bot.run()))),
        STEP_S)
    [bot_run] = runs
    assert players[2] == "easybot", players
    apps: dict[str, App] = {}
    for name in ("ana", "ben"):
        client = PlayClient(gateway, toks[name])
        client.open(table_id, batched=True)
        apps[name] = App(Player(client, table_id, rules.Seat(players.index(name))))
    ana, ben = apps["ana"], apps["ben"]
    me = rules.Seat(players.index("easybot"))
    race = Race()

    async def on_decided(action: rules.Action, view: rules.PlayerView) -> None:
        """Every decision seen; the first card the bot aims at a table meld: ana is faster."""
        race.decisions.append((action, view))
        if race.action is None and isinstance(action, rules.Attach | rules.Place):
            assert race.card is not None
            race.action = action
            target = next(m for m in view.table if m.id == action.meld)
            race.arrivals = await scatter(ana, race.card, target)

    try:
        for app in apps.values():  # the Join's snapshot
            await app.player.next()
        drew = await ana.answer(rules.Draw(ana.seat))  # a card to declare (M5.3.1)
        race.card = codec.card_from_pb(ana.event_of(drew, "drew").cards[0])
        bot.on_decided = on_decided
        await until(lambda: race.refusal(record) is not None, "the bot's action refused")
        at = race.refusal(record)
        lost, action = record[at or 0].refused.refusal, race.action
        assert isinstance(action, rules.Attach | rules.Place), "the forced race's refusal"
        assert lost.code == LOST_CODE, lost
        decided = len(race.decisions)
        # ana's winning events carry her acks' arrival indexes, as the bot saw them
        seen = {r.event.arrival_index for r in record[:at]
                if r.WhichOneof("kind") == "event" and r.event.kind in ("declared", "moved")
                and codec.seat_from_pb(r.event.player) == ana.seat}
        assert set(race.arrivals) <= seen, (race.arrivals, seen)

        # the bot plans again at once, on its kept view: the meld is gone, another action
        await until(lambda: len(race.decisions) > decided, "a decision after the refusal")
        again, view = race.decisions[decided]
        assert action.meld not in {m.id for m in view.table}, "the table as ana left it"
        assert again != action

        await ana.answer(rules.Cancel(ana.seat))  # ANNULLA (M5.5.6): the table as it was
        await until(lambda: race.replayed(record[at:], me), "the bot's card on the table")
        later = [r.ack.arrival_index for r in record[at:] if r.WhichOneof("kind") == "ack"]
        assert later and min(later) > max(race.arrivals), (later, race.arrivals)
        for app in (ana, ben):  # M11.6, M11.3: the bot, the last one in, wins
            await acked(app.player, rules.Abandon(app.seat))
        outcome = await asyncio.wait_for(bot_run, STEP_S)
    finally:
        for app in apps.values():
            await app.close()
        bot_run.cancel()
        await asyncio.wait({bot_run}, timeout=STEP_S)
    assert outcome.result is not None and outcome.result.ending == "survivor", outcome
    assert outcome.result.winner == codec.seat_to_pb(me)
    # the forced refusal is not a gateway's: counted as a race, and none was predictable
    assert outcome.races >= 1, outcome
    assert outcome.predictable == [], outcome.predictable
    for proc in cluster.values():
        errors = [r for r in proc.logs() if r.get("level") in ("ERROR", "CRITICAL")]
        assert not errors, f"{proc.name} logged errors: {errors}"
    print(f"lost race: {action} refused {lost.code}; ana's arrivals {race.arrivals}, the "
          f"bot's later ones {later}; then {again}; {outcome.actions} actions, "
          f"{outcome.races} races, refusals "
          f"{[r.refused.refusal.code for r in record if r.WhichOneof('kind') == 'refused']}")
