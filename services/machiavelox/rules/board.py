"""The table's melds and the operations that change them.

Every change of the table is an `Op`: one gesture of one player in one calata that moves cards
onto the table (from hand or pozzetto) or from one meld to another. The table is always
``replay(base, live ops)``: the consolidated board plus the ops that the chain (M5.5) may still
undo. Applying an op live and replaying it use the same code, so an undo is exactly "replay the
surviving ops".

Meld identity. Melds are named by integer ids. An op reserves three ids when it is created (a new
meld, the high side of an interior removal, the high half of a long-run split), and replays reuse
them, so ids are stable across undo. When a replay refers to a split half that the replay never
created (the removal that split it was undone), the id resolves to the meld it was split from:
the halves join again, as the cards would on a real table.

A run of 21 or more cards (M3.3, round the circle: only a direct meld can be that long) splits
into halves still longer than 10, which split again; their ids are derived from the op's split
id (`extra_split_id`), in a range the table's counter never reaches.

Cut boards. `Board.cut` makes a board holding only some melds of another (one meld's lineage:
the meld and the pieces split off it), and `apply(op, take=..., put=...)` applies one side of
an op that moves a card between that lineage and another. Every change an op makes stays in
the lineages of the melds it names (a removal splits its source, an add splits its
destination, and a split half's id resolves only to the meld it came from), so a replay of
the ops that name one lineage, on a cut board, is that lineage exactly as in a whole replay
(judge.py uses it: one meld judged without some ops costs the ops on that meld, not all).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from .cards import Card
from .melds import MAX_RUN_BEFORE_SPLIT, split_long_run, split_on_removal
from .seats import Seat

# Ids of the further halves of a run of 21+ cards (`extra_split_id`): the table's counter
# (three ids per op, from 1) would reach this only after some 700 million ops, and derived ids
# stay within the wire's uint32 for the first 350 million ops (docs/rules-decisions.md).
EXTRA_SPLIT_IDS = 1 << 31


def extra_split_id(split_id: int, which: int) -> int:
    """The id of a further half (`which` 0: of the low half, 1: of the high half) when a split
    by `split_id` leaves a half longer than 10 (M3.3). Stable across replays, like every id."""
    return EXTRA_SPLIT_IDS + 2 * split_id + which


class MeldIds(NamedTuple):
    """The meld ids an op reserves when it is made (module doc, "Meld identity")."""

    new: int  # a new meld (DIRECT, or a move to a new meld)
    removal_split: int  # the high side of an interior removal from the source
    long_split: int  # the high half of a run over 10 split (M3.3)


class OpKind(enum.Enum):
    DIRECT = "direct"  # M5.1: pozzetto cards -> a new meld
    ATTACH = "attach"  # M5.2: a hand card -> a meld
    PLACE = "place"  # M5.3 PLACE: a pozzetto card -> a meld
    MOVE = "move"  # M5.3 MOVE: a table card -> another meld or a new one


class Zone(enum.Enum):
    HAND = "hand"
    POZZETTO = "pozzetto"
    TABLE = "table"


@dataclass(eq=False)
class Op:
    seq: int
    player: Seat
    calata: int
    kind: OpKind
    cards: tuple[Card, ...]
    src_zone: Zone
    src_meld: int | None  # for MOVE: the meld the card left (its id on the live board)
    dst: int  # the destination meld id (for DIRECT and new melds: ids.new)
    ids: MeldIds
    at_ms: int
    prev: tuple[int | None, ...] = ()  # per card: the live op that last moved it (M5.5.1)
    # Meld ids this op touched on the live board: set when it is applied, refreshed when an
    # undo replays it (two halves joined again are one meld: `refresh_ids`).
    touched: tuple[int, ...] = ()
    needs: frozenset[int] = frozenset()  # other calate's ops this op needed (M5.4.4, M5.5.2)
    from_common: bool = False  # a card of the tiebreak's common pozzetto (M10.2)
    # M6.5 decision: the moves of a reserved card in its ping-pong are one unit of the reserved
    # player's work (they stand or fall together: deps.dependents); the unit's id (the seq of
    # the episode's first move), None for every other op.
    bundle: int | None = None

    def refresh_ids(self, touched: tuple[int, ...]) -> None:
        """The op was replayed on a new live board (an undo): record the melds it touched
        there. A card taken from a split half whose removal was undone was taken from the
        whole meld, which is the one it worked on now."""
        self.touched = touched
        if self.kind is OpKind.MOVE and touched:
            self.src_meld = touched[0]  # Board.apply: the source comes first

    @property
    def own_cards(self) -> bool:
        """True when the op brought the player's own cards to the table (M5.3.7, M7.2)."""
        return self.src_zone is not Zone.TABLE


@dataclass
class Board:
    """Melds by id and, for every table card, the id of its meld."""

    melds: dict[int, list[Card]] = field(default_factory=dict)
    where: dict[Card, int] = field(default_factory=dict)
    # split half -> the meld it comes from; one registry shared by a table's boards, written
    # when an op reserves its ids, so a replay can resolve halves it never created.
    parents: dict[int, int] = field(default_factory=dict)
    creators: dict[int, int] = field(default_factory=dict)  # split half -> the op that splits
    applied: set[int] = field(default_factory=set)  # seqs of the ops applied on this board
    born: set[int] = field(default_factory=set)  # every id that existed on this board
    last_op: dict[Card, int] = field(default_factory=dict)  # card -> seq of its last live op
    halves: dict[int, list[int]] = field(default_factory=dict)  # meld -> halves split off it
    # A cut board (`cut`): the board it was cut from, whose born ids and applied ops count
    # here too (`resolve`). None for a whole board.
    outer: Board | None = None

    def __post_init__(self) -> None:
        # Judgements already made on this (consolidated) board, by everything they depend on
        # (judge.py): a pure cache, not state, so not a field (two boards equal as fields may
        # hold different memos; copies start empty). Emptied when the board changes.
        self.memo: dict[object, object] = {}
        self.memo_version = 0

    def __getstate__(self) -> dict[str, object]:
        """Copies and pickles leave the judgement cache behind (they start empty)."""
        state = dict(self.__dict__)
        state["memo"] = {}
        return state

    def copy(self) -> Board:
        return Board(
            melds={k: list(v) for k, v in self.melds.items()},
            where=dict(self.where),
            parents=self.parents,
            creators=self.creators,
            applied=set(self.applied),
            born=set(self.born),
            last_op=dict(self.last_op),
            halves={k: list(v) for k, v in self.halves.items()},
            outer=self.outer,
        )

    # -- queries -------------------------------------------------------------------------
    def resolve(self, meld_id: int) -> int:
        """The id under which `meld_id` lives on this board (see module doc).

        A split half this board never made resolves to the meld it comes from when the op that
        split it is not on this board (the cards never parted); when that op is here but did not
        split (the half had no cards this time), the half is a meld of its own, empty so far."""
        outer = self.outer
        while meld_id not in self.melds and meld_id not in self.born and meld_id in self.parents:
            if outer is not None and meld_id in outer.born:
                break
            creator = self.creators.get(meld_id)
            if creator in self.applied or (outer is not None and creator in outer.applied):
                break
            meld_id = self.parents[meld_id]
        return meld_id

    def lineage(self, meld_id: int) -> list[int]:
        """The meld and the melds it was split from, nearest first."""
        out = [meld_id]
        while meld_id in self.parents:
            meld_id = self.parents[meld_id]
            out.append(meld_id)
        return out

    def touches(self, op: Op, meld_id: int) -> bool:
        """Did `op` work on meld `meld_id` as it is now on this board? See `melds_touched`."""
        return meld_id in self.melds_touched((op,))

    def melds_touched(self, ops: Iterable[Op],
                      reach: dict[int, frozenset[int]] | None = None) -> set[int]:
        """The current melds that `ops` worked on: a meld they touched or one split from it,
        a meld their touched ids live on as (halves joined again), a meld holding their cards.

        `reach`: a cache of `reached` by id, for many calls on this board while it does not
        change (a judgement asks for every live op)."""
        out: set[int] = set()
        where = self.where
        for op in ops:
            for c in op.cards:
                mid = where.get(c)
                if mid is not None:
                    out.add(mid)
            for x in op.touched:
                got = None if reach is None else reach.get(x)
                if got is None:
                    got = self.reached(x)
                    if reach is not None:
                        reach[x] = got
                out |= got
        return out

    def reached(self, meld_id: int) -> frozenset[int]:
        """The current melds an op that touched `meld_id` worked on: the meld it lives on as,
        and the halves split off either of them, and theirs."""
        r = self.resolve(meld_id)
        out: set[int] = set()
        if r in self.melds:
            out.add(r)
        stack = [x for x in {meld_id, r} if x in self.halves]
        while stack:  # halves split off a touched meld, and theirs
            for half in self.halves[stack.pop()]:
                if half in self.melds:
                    out.add(half)
                if half in self.halves:
                    stack.append(half)
        return frozenset(out)

    def cut(self, ids: Iterable[int]) -> Board:
        """A board holding only the melds `ids` of this one (see the module doc), sharing its
        id registries; ids born and ops applied on this board still count on the cut one."""
        melds = {k: list(self.melds[k]) for k in ids}
        where = {c: k for k, cs in melds.items() for c in cs}
        last = self.last_op
        return Board(melds=melds, where=where, parents=self.parents, creators=self.creators,
                     last_op={c: last[c] for c in where if c in last}, outer=self)

    # -- changes -------------------------------------------------------------------------
    def new_meld(self, meld_id: int, cards: Iterable[Card]) -> None:
        self.melds[meld_id] = []
        self.born.add(meld_id)
        for c in cards:
            self.melds[meld_id].append(c)
            self.where[c] = meld_id

    def remove(self, card: Card, split_id: int) -> list[int]:
        """Take `card` off its meld; returns the meld ids touched (the source, a split half)."""
        mid = self.where.pop(card)
        cards = self.melds[mid]
        halves = split_on_removal(cards, card)
        if halves is None:
            cards.remove(card)
            if not cards:
                del self.melds[mid]
                return [mid]
            # M3.3: taking a stray card out of an irregular meld may leave a regular run of
            # more than 10 (attaching to it did not split it, being irregular): split it now.
            return [mid, *self._split_if_long(mid, split_id)]
        low, high = halves
        self.melds[mid] = low
        self.new_meld(split_id, high)
        self.halves.setdefault(mid, []).append(split_id)
        return [mid, split_id]

    def add(self, card: Card, meld_id: int, split_id: int) -> list[int]:
        """Put `card` into meld `meld_id` (created if absent); splits a run over 10 (M3.3)."""
        mid = self.resolve(meld_id)
        if mid not in self.melds:
            self.new_meld(mid, ())
        cards = self.melds[mid]
        cards.append(card)
        self.where[card] = mid
        return [mid, *self._split_if_long(mid, split_id)]

    def _split_if_long(self, mid: int, split_id: int, again: bool = True) -> list[int]:
        """M3.3: a regular run of more than 10 in meld `mid` splits in two, the high half
        becoming meld `split_id`; a half still longer than 10 (a run of 21 or more) splits
        again (the low half of it keeps its id, the high half gets an `extra_split_id`)."""
        halves = split_long_run(self.melds[mid])
        if halves is None:
            return []
        low, high = halves
        self.melds[mid] = low
        self.new_meld(split_id, high)
        self.halves.setdefault(mid, []).append(split_id)
        out = [split_id]
        if again:
            for which, piece in enumerate((mid, split_id)):
                if len(self.melds[piece]) > MAX_RUN_BEFORE_SPLIT:
                    extra = extra_split_id(split_id, which)
                    self.parents[extra] = piece
                    if split_id in self.creators:
                        self.creators[extra] = self.creators[split_id]
                    out += self._split_if_long(piece, extra, again=False)
        return out

    def apply(self, op: Op, take: bool = True, put: bool = True) -> list[int]:
        """Apply one op; returns the meld ids it touched. Used live and by replay.

        On a cut board, `take` / `put` False leave out the side of the op that is not on it:
        taking a moved card from its source, putting it (or a new meld) on its destination."""
        touched: list[int] = []
        if op.kind is OpKind.DIRECT:
            if put:
                self.new_meld(op.dst, op.cards)
                touched.append(op.dst)
                touched += self._split_if_long(op.dst, op.ids.long_split)
        else:
            card = op.cards[0]
            if op.kind is OpKind.MOVE and take:
                touched += self.remove(card, op.ids.removal_split)
            if put:
                touched += self.add(card, op.dst, op.ids.long_split)
        for c in op.cards:
            self.last_op[c] = op.seq
        self.applied.add(op.seq)
        return touched

    def can_apply(self, op: Op) -> bool:
        """In a replay an op applies only if its cards are where it expects them (M5.5.1)."""
        if op.kind is OpKind.MOVE:
            return all(c in self.where and self.last_op.get(c) == p
                       for c, p in zip(op.cards, op.prev, strict=True))
        return all(c not in self.where for c in op.cards)


def replay(base: Board, ops: Iterable[Op],
           touched: dict[int, tuple[int, ...]] | None = None) -> tuple[Board, list[Op]]:
    """The board that results from `ops` applied in order on a copy of `base`.

    Returns the board and the ops that could not apply (their cards are not where they were
    when the op was made: they depend on an op that is not in `ops`). `touched`, if given,
    receives for each op applied the meld ids it touched in this replay.
    """
    board = base.copy()
    stuck: list[Op] = []
    for op in ops:
        if board.can_apply(op):
            ids = board.apply(op)
            if touched is not None:
                touched[op.seq] = tuple(ids)
        else:
            stuck.append(op)
    return board, stuck
