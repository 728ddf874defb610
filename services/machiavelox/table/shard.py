"""A shard: many tables on one asyncio loop, the sequencer of each, and its gateways' streams
(`gateway_link.py`), timers (`deadlines.py`) and the delivery of each step (`fanout.py`).

The event loop is the only writer of every table, so each table's actions are applied one at
a time in arrival order: one table, one sequencer. Outgoing items for a gateway go into that
gateway's outbox; its stream sends everything pending as one frame (batching many tables'
events in one message), no frame larger than the outbox's bound.

Hostile input (docs/security.md): a resume is answered one page at a time (`PAGE_BYTES` at most;
the gateway asks for the next page when it has delivered one) or with a snapshot when the
session is more than `MAX_REPLAY_EVENTS` behind, so no resume makes a large message nor holds
back the other tables of the stream; every player's actions at a table are capped
(`action_rate`: a second line behind the gateway's own limit) before they reach the sequencer,
so a refused one takes no arrival index.

Journaled (`journal.py`): what a step sends waits in the gated outboxes for the journal write
that covers its records; a write that fails undoes the tables it touched (`_undo`: rebuilt
from the store, their actions refused `table/journal`). An ended table whose results are
stored leaves memory after its resume grace (`sweep`, `retention.py`); a late resume then
gets its final snapshot.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from machiavelox import codec, rules
from machiavelox._gen.v1 import common_pb2, table_pb2
from machiavelox.classic import Variants, shuffled_deal
from machiavelox.platform.errors import (
    ServiceError,
    failed_precondition,
    invalid_argument,
    not_found,
    permission_denied,
    resource_exhausted,
    shown,
    unavailable,
)
from machiavelox.platform.ratelimit import Rate, RateLimits

from .answers import Answer
from .classic_table import ClassicHost
from .deadlines import Clock, Deadlines
from .fanout import Outcome, fan_out
from .gateway_link import GatewayLink
from .host import TableHost
from .journal import Journal, Watcher
from .journal_store import JournalStore
from .ledger import Ledger
from .liveness import Evidence, Heard
from .observe import ShardObserver
from .records import JournalCorruptError, NoRecorder, Recorder
from .reporting import ResultReports, Send
from .retention import Retention
from .rulesets import Host
from .rulesets import restore as restore_table
from .settings import DEFAULT_ACTION_RATE

log = logging.getLogger(__name__)
LIVENESS_TICK_S = 0.1  # presence changes reach the tables in ticks (see `presence`)

PAGE_BYTES = 64 * 1024  # the most events (encoded) one answer to a resume carries
MAX_REPLAY_EVENTS = 5_000  # further behind than this, a resuming session gets a snapshot
RESUME_GRACE_S = 120.0  # an ended, reported table stays in memory this long for late resumes
H = TypeVar("H", TableHost, ClassicHost)


class Shard:
    def __init__(self, shard_id: str, capacity: int, clock: Clock,
                 report: Send | None = None, time_scale: float = 1.0,
                 observer: ShardObserver | None = None, deal_seed: int | None = None,
                 action_rate: Rate = DEFAULT_ACTION_RATE,
                 resume_grace_s: float = RESUME_GRACE_S) -> None:
        self.shard_id = shard_id
        self.limits = RateLimits(action_rate)  # by (table, player)
        self.deal_seed = deal_seed  # tests only (TableSettings.deal_seed)
        self.observer = observer or ShardObserver()
        self.capacity = capacity
        self.clock = clock
        self.reports = ResultReports(report)
        self.time_scale = time_scale
        self.tables: dict[str, Host] = {}
        self.subs: dict[str, dict[str, GatewayLink]] = {}
        self.links: set[GatewayLink] = set()
        self.journal: Journal | None = None  # `attach_journal`; None: the journal is off
        self.ledger = Ledger()
        self.retention = Retention(resume_grace_s)
        self.evidence = Evidence()  # who shows signs of life (liveness.py)
        self._heard: set[str] = set()  # players presence spoke of since the last tick
        self._tick: asyncio.TimerHandle | None = None
        self._draining = False
        self.deadlines = Deadlines(clock)
        self._later: list[Callable[[], None]] | None = None  # see handle_frame
        self.players_changed = asyncio.Event()  # a table was added: presence watches anew

    # ------------------------------------------------------------------ journal
    def attach_journal(self, store: JournalStore, first_frame: int) -> Journal:
        """Journal every table from now on (before any table is created or restored)."""
        self.journal = Journal(store, self.tables, self._watchers, self._undo, self._stored,
                               first_frame)
        return self.journal

    def _stored(self, table_ids: set[str]) -> None:
        """A journal write is stored: what its tables ended is reported (a result leaves the
        shard only once it is in the journal, and never one that a failed write undid)."""
        for table_id in table_ids:
            host = self.tables.get(table_id)
            if host is not None:
                self.reports.due(host)

    def _watchers(self) -> Iterator[Watcher]:
        yield from self.links
        yield self.ledger

    @property
    def journal_down(self) -> bool:
        """Journaled, and the journal cannot be written now: nothing may change a table."""
        return self.journal is not None and not self.journal.healthy

    async def durable(self) -> None:
        """Once what the tables recorded so far is stored, or undone (`journal.durable`)."""
        if self.journal is not None:
            await self.journal.durable()

    def restore(self, table_id: str, data: bytes) -> Host:
        """A table rebuilt from its journal (`rulesets.restore`), journaled from now on."""
        assert self.journal is not None
        host = restore_table(table_id, data, self.journal.recorder(table_id))
        self._place(host)
        return host

    def _place(self, host: Host) -> None:
        self.tables[host.table_id] = host
        self.subs.setdefault(host.table_id, {})
        self._schedule(host)
        self.reports.due(host)

    def _undo(self, table_ids: set[str]) -> None:
        """A journal write failed: every table it touched goes back to what is stored, and
        what the dropped answers said is said again (`ledger.Ledger`)."""
        for table_id in table_ids:
            host = self.tables.get(table_id)
            if host is None:
                continue
            host.journal.truncate()
            if not host.journal.durable:  # created in the failed write: it never existed
                del self.tables[table_id]
                self.subs.pop(table_id, None)
                continue
            try:
                self.restore(table_id, bytes(host.journal.data))
            except JournalCorruptError:  # (cannot happen: it is what this shard wrote)
                log.exception("table %s does not replay", table_id)
        for entry in self.ledger.undone():
            item = entry.item
            if entry.link not in self.links:
                continue
            if item.HasField("action"):
                refusal = unavailable("table/journal", "the table's journal cannot be written "
                                      "now: the action was not applied, try again")
                entry.link.item(item.table_id, item.player_id,
                                refused=common_pb2.ActionRefused(
                                    client_action_id=item.action.client_action_id,
                                    refusal=codec.refusal_to_pb(refusal)))
            elif item.HasField("subscribe") and item.table_id in self.tables:
                self.handle(entry.link, item)

    # ------------------------------------------------------------------ load
    @property
    def draining(self) -> bool:
        """No new table is placed here (a scale-down, or a shutdown in progress)."""
        return self._draining

    @draining.setter
    def draining(self, value: bool) -> None:
        self._draining = value
        self.observer.draining(value)

    @property
    def players(self) -> int:
        return sum(len(t.players) for t in self.tables.values() if not t.finished)

    @property
    def tables_in_play(self) -> int:
        return sum(1 for t in self.tables.values() if not t.finished)

    @property
    def full(self) -> bool:
        """As many tables in play as the capacity. Counted only when the tables in memory
        (in play, or ended and not yet swept) reach it: a count on every creation made a
        burst of placements quadratic (a shard of 1,700 tables spent 70% of CreateTable's
        Python counting them)."""
        return len(self.tables) >= self.capacity and self.tables_in_play >= self.capacity

    # ------------------------------------------------------------------ tables
    def knows(self, table_id: str) -> bool:
        """The table is here: in play, ended and still in memory, or a final snapshot."""
        return table_id in self.tables or table_id in self.retention.final

    def create_table(self, table_id: str, players: list[str], kind: rules.MatchKind,
                     competitive: bool) -> TableHost:
        deal = None if self.deal_seed is None else rules.shuffled_deal(self.deal_seed)
        return self._create(table_id, players, TableHost, lambda recorder: TableHost(
            table_id, players, kind, competitive, self.clock(), deal,
            time_scale=self.time_scale, journal=recorder))

    def create_classic(self, table_id: str, players: list[str], variants: Variants,
                       competitive: bool) -> ClassicHost:  # (issue 16)
        deal = None if self.deal_seed is None else shuffled_deal(variants, self.deal_seed)
        return self._create(table_id, players, ClassicHost, lambda recorder: ClassicHost(
            table_id, players, variants, competitive, self.clock(), deal,
            time_scale=self.time_scale, journal=recorder))

    def _create(self, table_id: str, players: list[str], cls: type[H],
                make: Callable[[Recorder], H]) -> H:
        existing = self.tables.get(table_id)
        if existing is not None:
            if existing.players != players or not isinstance(existing, cls):
                raise failed_precondition("table/exists", f"table {shown(table_id)} exists "
                                          "with other players or rules")
            return existing
        if self.draining:
            raise failed_precondition("shard/draining", f"{self.shard_id} is draining")
        if self.full:
            raise failed_precondition("shard/full", f"{self.shard_id} is full")
        if self.journal_down:
            raise unavailable("table/journal", f"{self.shard_id} cannot write its journal now")
        try:
            host = make(NoRecorder() if self.journal is None else self.journal.recorder(table_id))
        except ValueError as err:
            raise invalid_argument("table/bad-players", str(err)) from None
        self._place(host)
        self.players_changed.set()
        log.info("table created", extra={"table_id": table_id, "shard_id": self.shard_id})
        return host

    async def cancel_table(self, table_id: str) -> bool:
        """Cancel a table nobody has played at (issue 13 item 3: matchmaking gave up its
        placement): it ends with no result and no points, its journal closed ("cancelled": a
        restart does not bring it back) and stored before this returns, and it leaves memory
        (a session asking for it then gets `table/unknown`). True if it was here (False: not
        here, nothing to do). Refused FAILED_PRECONDITION `table/in-play` once a player has
        acted (an accepted action: presence changes are not the players' acts) or has a
        session on it, `table/ended` once it has ended (its result counts); UNAVAILABLE
        `table/journal` if its cancellation cannot be stored now (nothing changed: ask again).
        """
        host = self.tables.get(table_id)
        if host is None:
            if table_id in self.retention.final:
                raise failed_precondition("table/ended", f"table {shown(table_id)} has ended")
            return False
        if host.closed != "cancelled":  # (else: a cancellation already under way)
            if host.finished:
                raise failed_precondition("table/ended", f"table {shown(table_id)} has ended")
            if self.subs.get(table_id) or host.played_at:
                raise failed_precondition("table/in-play", f"table {shown(table_id)} has been "
                                          "played at: it can only end by its rules")
            if self.journal_down:
                raise unavailable("table/journal",
                                  f"{self.shard_id} cannot write its journal now")
            host.close("cancelled")
        await self.durable()
        now = self.tables.get(table_id)
        if host.journal.unwritten or now not in (host, None):
            # its write failed: the table was rebuilt from the store, not cancelled
            raise unavailable("table/journal", f"{self.shard_id} cannot write its journal now")
        if now is host:  # (None: a concurrent cancellation took it out already)
            del self.tables[table_id]
            self.subs.pop(table_id, None)
            for player in host.seats:
                self.limits.discard((table_id, player))
            self.players_changed.set()  # (presence stops watching its players)
            log.info("table cancelled", extra={"table_id": table_id,
                                               "shard_id": self.shard_id})
        return True

    def _schedule(self, host: Host) -> None:
        self.deadlines.arm(host.table_id, host.next_wall_deadline())

    async def run_timers(self) -> None:
        """Fire every table's timers at their deadlines (the shard's clock drives them)."""
        await self.deadlines.run(self._due)

    def _due(self, table_id: str, now: int) -> None:
        """`table_id`'s armed deadline has come: advance it if it is still due."""
        host = self.tables.get(table_id)
        if host is None:
            return
        if self.journal is not None and not self.journal.healthy:  # nothing can be stored
            self.deadlines.arm(table_id, now + int(self.journal.retry_s * 1000))
            return
        due = host.next_wall_deadline()
        if due is None or due > now:
            if due is not None:
                self._schedule(host)
            return
        self._after(host, host.advance(now))

    def _after(self, host: Host, events: list[tuple[int, Any]],
               actor: str = "", outcome: Outcome | None = None, traceparent: str = "") -> None:
        """Deliver one step of a table to every subscribed session (`fanout.py`: the actor's
        outcome with the events, each seat's view), then report results, re-arm timers."""
        self._defer(lambda: self.observer.events(events))
        fan_out(host.table_id, host.seats, self.subs.get(host.table_id, {}), events, actor,
                outcome, traceparent, host.arrival_of, host.fill_event)
        if events and self.journal is None:  # (journaled: once stored, `_stored`)
            self._defer(lambda: self.reports.due(host))
        self._defer(lambda: self._schedule(host))

    # ------------------------------------------------------------------ liveness (M11)
    def presence(self, player_id: str, heard: Heard) -> None:
        """What the presence service says of a player (alive, silent since, unknown). The
        tables hear it at the next liveness tick (`LIVENESS_TICK_S`), every change of one
        tick at one instant: silences that presence makes known together (a resync after an
        outage) mature together and are judged together (M11.3)."""
        self.evidence.presence(player_id, heard)
        self._heard.add(player_id)
        if self._tick is None:
            self._tick = asyncio.get_running_loop().call_later(LIVENESS_TICK_S,
                                                               self.liveness_tick)

    def presence_unknown(self) -> None:
        """The stream from presence is down: what it said no longer holds."""
        self.evidence.presence_unknown({p for host in self.tables.values()
                                        if not host.finished for p in host.players})
        self.reassess_all()

    def liveness_tick(self) -> None:
        """The presence changes since the last tick reach the tables, at one instant."""
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None
        heard, self._heard = self._heard, set()
        self.reassess_all(heard)

    def reassess_all(self, only: set[str] | None = None) -> None:
        """Tell every table in play what is known now of its players (`only`: of these), at
        one instant."""
        now = self.clock()
        for host in list(self.tables.values()):
            if not host.finished:
                for player in host.players:
                    if only is None or player in only:
                        self._reassess(host, player, now)

    async def run_liveness(self, every_s: float = 1.0) -> None:
        """Until cancelled: every second, the players whose first-hand lease ran out are told
        what presence says (all of them once the journal is writable again after an outage:
        nothing was applied meanwhile)."""
        was_down = False
        while True:
            await asyncio.sleep(every_s)
            down = self.journal_down
            if was_down and not down:
                self.reassess_all()
            elif not down:
                now = self.clock()
                for table_id, player in self.evidence.lapsed(now):
                    host = self.tables.get(table_id)
                    if host is not None and not host.finished:
                        self._reassess(host, player, now)
            was_down = down

    def _sign(self, host: Host, player_id: str, now: int | None = None) -> None:
        """A first-hand sign of life (the player's gateway: subscription, action, heartbeat)."""
        key = (host.table_id, player_id)
        self.evidence.sign(key, self.clock() if now is None else now)
        if not self.evidence.told_alive(key):
            self._reassess(host, player_id)

    def _reassess(self, host: Host, player_id: str, now: int | None = None) -> None:
        if self.journal_down:  # (not stored: told again once it can be)
            return
        now = self.clock() if now is None else now
        heard = self.evidence.change((host.table_id, player_id), now)
        if heard is None:
            return
        self._after(host, host.liveness(player_id, heard.kind, heard.since_ms, now).events)

    # ------------------------------------------------------------------ gateway items
    def drop_link(self, link: GatewayLink) -> None:
        self.links.discard(link)
        self.ledger.forget(link)
        for subs in self.subs.values():
            for player in [p for p, lk in subs.items() if lk is link]:
                del subs[player]

    def handle_frame(self, link: GatewayLink, items: Sequence[table_pb2.GatewayItem],
                     arrived_ns: int = 0) -> list[Callable[[], None]]:
        """The items of one frame from a gateway (arrived at `arrived_ns`, wall clock), in
        order. What need not happen before the answers leave (metrics, re-arming timers,
        reporting results) is returned to be done by `settle` once they are sent: it is off
        the path of every action."""
        later: list[Callable[[], None]] = []
        self._later = later
        try:
            for item in items:
                self.handle(link, item, arrived_ns)
        finally:
            self._later = None
        return later

    @staticmethod
    def settle(later: list[Callable[[], None]]) -> None:
        for work in later:
            work()

    def _defer(self, work: Callable[[], None]) -> None:
        if self._later is None:
            work()
        else:
            self._later.append(work)

    def handle(self, link: GatewayLink, item: table_pb2.GatewayItem, arrived_ns: int = 0) -> None:
        """One item from a gateway (its frame arrived at `arrived_ns`, wall clock); refusals go
        back in-band, never as a stream error."""
        try:
            kind = item.WhichOneof("kind")
            if kind == "subscribe" and item.table_id in self.retention.final:
                self._final(link, item)
                return
            host = self._seated(item.table_id, item.player_id)
            if kind == "subscribe":
                if self.journal is not None:
                    self.ledger.add(link, item)
                self._subscribe(link, host, item.player_id, item.subscribe.from_seq)
            elif kind == "unsubscribe":
                if self.subs[host.table_id].get(item.player_id) is link:
                    del self.subs[host.table_id][item.player_id]
            elif kind == "action":
                self._act(link, host, item, arrived_ns)
            elif kind == "liveness":  # first-hand, from the session's own gateway
                if item.liveness.alive and self.subs[host.table_id].get(item.player_id) is link:
                    self._sign(host, item.player_id)
            else:
                raise invalid_argument("request/empty-item", "the item has no kind")
        except ServiceError as err:
            action_id = item.action.client_action_id if item.HasField("action") else ""
            link.item(item.table_id, item.player_id,
                      refused=common_pb2.ActionRefused(client_action_id=action_id,
                                                       refusal=codec.refusal_to_pb(err)))

    def _seated(self, table_id: str, player_id: str) -> Host:
        host = self.tables.get(table_id)
        if host is None:
            raise not_found("table/unknown", f"no table {shown(table_id)} here")
        if player_id not in host.seats:
            raise permission_denied("table/not-seated",
                                    f"{shown(player_id)} is not seated at {shown(table_id)}")
        return host

    def _subscribe(self, link: GatewayLink, host: Host, player: str, from_seq: int) -> None:
        self.subs[host.table_id][player] = link
        if not host.finished:
            self._sign(host, player)
        if from_seq <= 0 or from_seq > host.seq:
            link.item(host.table_id, player, **host.snapshot_fields(player))
            return
        if host.seq - from_seq > MAX_REPLAY_EVENTS:  # too far behind: start afresh
            self._subscribe(link, host, player, 0)
            return
        link.item(host.table_id, player, events=self.page(host, player, from_seq))

    @staticmethod
    def page(host: Host, player: str, from_seq: int) -> table_pb2.EventList:
        """The events after `from_seq` for `player`, as many as fit in PAGE_BYTES (at least
        one); `more` when the table has further ones."""
        page = table_pb2.EventList()
        size = 0
        for seq, ev in host.events_for(player, from_seq, limit=MAX_REPLAY_EVENTS):
            encoded = host.fill_event(common_pb2.Event(), ev, seq, host.arrival_of(seq))
            size += encoded.ByteSize() + 4
            if size > PAGE_BYTES and page.events:
                break
            page.events.append(encoded)
        page.more = bool(page.events) and page.events[-1].seq < host.seq
        return page

    def _act(self, link: GatewayLink, host: Host, item: table_pb2.GatewayItem,
             arrived_ns: int) -> None:
        player, req = item.player_id, item.action
        decoded = host.decode(player, req)
        action = decoded.action
        if req.client_action_id:  # a resend is answered as the first time, whatever now is
            earlier = host.answered(player, req.client_action_id)
            if earlier is not None:
                self._answer_again(link, host, item, action, earlier)
                return
        if not self.limits.allow((host.table_id, player), time.monotonic()):
            raise resource_exhausted("rate/limited", "too many actions: slow down")
        if self.journal_down:
            raise unavailable("table/journal", "the table's journal cannot be written now: "
                              "try again shortly")
        if self.journal is not None:
            self.ledger.add(link, item)
        now = self.clock()
        self._sign(host, player, now)  # (an action is a sign of life, M11.1 decision)
        seen = self.observer.begin(host.table_id, player, decoded.verb, item.traceparent,
                                   arrived_ns)
        applied = host.apply(player, action, now, decoded.wire, req.client_action_id)
        traceparent = self.observer.end(seen, host.table_id, action, applied)
        self._defer(lambda: self.observer.count(seen))
        action_id = req.client_action_id

        def outcome(batch: common_pb2.Batch) -> None:
            """Puts the action's ack or refusal in `batch` (the actor's item of the step)."""
            _outcome(batch, action_id, applied.error, applied.first_seq, applied.arrival)

        if self.subs[host.table_id].get(player) is not link:  # acting without a subscription
            outcome(link.step_item(host.table_id, player, traceparent).batch)
            self._after(host, applied.events, traceparent=traceparent)
            return
        self._after(host, applied.events, player, outcome, traceparent)

    def _answer_again(self, link: GatewayLink, host: Host, item: table_pb2.GatewayItem,
                      action: object, earlier: Answer) -> None:
        """A resent action (its client_action_id already answered): the original outcome,
        nothing applied (issue 13). It leaves after what the original's answer waits for
        (the gated outbox keeps its order), or is refused with it if that write fails."""
        if earlier.action != action:
            raise invalid_argument("request/reused-id", "this client_action_id was used for "
                                   "another action at this table: use a new one per action")
        self.observer.resent()
        if self.journal is not None:
            self.ledger.add(link, item)
        batch = link.step_item(host.table_id, item.player_id, item.traceparent).batch
        _outcome(batch, item.action.client_action_id, earlier.error, earlier.first_seq,
                 earlier.arrival)

    async def drain_for_shutdown(self, limit_s: float) -> int:
        """On SIGTERM: place no new table, keep serving the tables in play until they have all
        ended or `limit_s` has passed; the number still in play then (a scale-down drains a
        shard before it stops it, so normally none)."""
        self.draining = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit_s
        in_play = self.tables_in_play
        if in_play and limit_s > 0:
            log.warning("shutting down with %d tables in play: serving them until they end, "
                        "at most %.0f s", in_play, limit_s,
                        extra={"shard_id": self.shard_id, "tables": in_play})
        while self.tables_in_play and loop.time() < deadline:
            await asyncio.sleep(min(0.2, max(0.0, deadline - loop.time())))
        left = self.tables_in_play
        if left:  # (MACHIAVELOX_TABLE_DRAIN_S is 0 locally: stopping is immediate)
            log.warning("stopping with %d tables still in play after %.0f s", left, limit_s,
                        extra={"shard_id": self.shard_id, "tables": left})
            self.observer.stopped_in_play(left)
        elif in_play:
            log.info("every table in play has ended: stopping", extra={"shard_id": self.shard_id})
        return left

    # ------------------------------------------------------------------ memory
    async def run_sweeper(self, every_s: float = 5.0) -> None:
        """Take ended tables out of memory, until cancelled (`sweep`)."""
        while True:
            await asyncio.sleep(every_s)
            self.sweep(time.monotonic())

    def sweep(self, now: float) -> int:
        """Ended tables leave memory (`retention.py`); the number that left."""
        gone = self.retention.leaving(list(self.tables.values()), now)
        for host in gone:
            self.retention.left(host)
            del self.tables[host.table_id]
            self.subs.pop(host.table_id, None)
            for player in host.seats:
                self.limits.discard((host.table_id, player))
            self.evidence.forget(host.table_id, host.players)
        if gone:
            seated = {p for host in self.tables.values() for p in host.players}
            for player in {p for host in gone for p in host.players} - seated:
                self.evidence.forget_player(player)
        return len(gone)

    def _final(self, link: GatewayLink, item: table_pb2.GatewayItem) -> None:
        """A resume of a table that has left memory: its final snapshot."""
        final = self.retention.final[item.table_id].get(item.player_id)
        if final is None:
            raise permission_denied("table/not-seated", f"{shown(item.player_id)} is not "
                                    f"seated at {shown(item.table_id)}")
        link.item(item.table_id, item.player_id, **final)

    async def close(self, report_wait_s: float = 5.0) -> int:
        """Wait (bounded) for the reports in flight and write what is recorded; the number of
        results left for the next start."""
        left = await self.reports.drain(report_wait_s, self.shard_id)
        if self.journal is not None:
            await self.journal.close()
        return left


def _outcome(batch: common_pb2.Batch, action_id: str, error: rules.RulesError | None,
             first_seq: int, arrival: int) -> None:
    """Puts an action's ack or refusal in `batch` (the actor's item of the step)."""
    if error is not None:
        batch.refused.client_action_id = action_id
        batch.refused.refusal.CopyFrom(codec.refusal_to_pb(error))
    else:
        ack = batch.ack
        ack.client_action_id = action_id
        ack.seq = first_seq
        ack.arrival_index = arrival
