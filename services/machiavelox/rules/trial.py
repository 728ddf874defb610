"""Which trial work of others counts for a judged meld (M5.4.3-M5.4.4): the least that makes it
regular, found exactly, with the structure of runs and sets cutting every way that cannot work.

The question. A meld the calata touched is irregular without the other players' work on trial
(their calata still open). Which of that work counts for the player? The least that makes the
meld regular, "as if the other trial cards were not there" (M5.4.3): the smallest set of those
ops such that the meld, replayed with them and without the others (and without whatever stood
on the others), is regular; among sets of one size, the one whose work came first (decision in
docs/rules-decisions.md: where two trial cards could serve, two copies or either end of a run,
the one put on the table first counts). None: no set makes it regular, the work is irregular.

How. The lineage of the meld (the meld and the pieces split off it: the only melds the replay
needs, board.py "Cut boards") is replayed once, op by op, along every way of keeping or leaving
out each trial op at once: a branch per choice, and branches that reach the same table merge,
keeping the cheapest (`_key`). The structure of runs and sets ends every branch that can no
longer be regular (`viable`): a piece holding a card of the player's meld that no later op will
move is regular at the end only if the cards that stay in it can still make a run or a set with
the cards that may yet arrive. So a stray trial card (a J♠ on 4-5-6♣) that is kept ends its
branch where it lands; a trial 7♣ that fills the gap before the player's 8♣ is the only way on;
of two copies that could fill a gap, the branches are the same table but for one copy, and the
first to arrive wins the merge. When nothing on the lineage can ever split, strays are left out
before the replay starts (`Search._hopeless`). What is left at the end is judged exactly as the
judgement does (`judge.py`), so the answer is the one a search of every subset would give
(tests/rules/sim/oracle.py), without searching them. Small answers are looked for first: the
branches keeping at most 2 trial ops, then the choices put aside for keeping more, the fewest
first, each taken up where it was put aside (`Search.run`), until every meld has its answer or
nothing is left: each branch is replayed once, and none keeping more than the answer. Nothing
is capped: the work is linear in the ops on the lineage times the branches alive, and branches
alive are tables the cards can still make regular.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .board import Board, Op, OpKind
from .cards import Card
from .structure import bring, code, long_run_possible, viable_coded

Work = frozenset[int]  # seqs of trial ops


# --------------------------------------------------------------------------- the search
@dataclass(frozen=True)
class Step:
    """One op that changes the lineage, with the sides of it that are on the lineage."""

    op: Op
    take: bool  # its card leaves a meld of the lineage
    put: bool  # its card (or its new meld) arrives on the lineage


@dataclass(frozen=True)
class Judged:
    """One meld of the lineage to judge: its id, its cards on the table with the op that last
    moved each (their pieces are judged where those ops put them), and the judgement of a
    replayed lineage (the board, the ids the own ops touched there -> regular?)."""

    id: int
    cards: Mapping[Card, int | None]
    judge: Callable[[Board, frozenset[int]], bool]


@dataclass
class _Branch:
    """One way through the replay. Trial ops are bits (`Search.seq_of`: the k-th lowest seq
    of the search's trial ops is bit k, so the lowest bit in which two works differ is the op in
    which the one that came first differs: `_first`)."""

    board: Board  # shared with other branches until an op changes it (then copied)
    kept: int  # trial ops kept so far (with what they stand on)
    known: int  # the trial ops decided (kept or left out) that later steps still ask about
    own_ids: frozenset[int]  # melds of the lineage the own ops touched so far
    alive: int  # the judged melds (bits) this branch may still make regular
    # the board is this branch's alone (copied for it, shared with no other branch, no choice
    # put aside): a step that decides nothing may change it in place
    owned: bool = False


@dataclass(frozen=True)
class _Aside:
    """A choice put aside for keeping more trial ops than the replay's limit (`Search.run`):
    made at step `step` by `branch` (as it was before that step)."""

    step: int
    branch: _Branch
    known: int
    kept: int


class _Replays:
    """What the replays of one search share (`Search.run`): the first branch until it is
    replayed, the choices put aside, and, after each deciding step, the tables reached there
    (`Search._key` without the judged melds) with the judged melds a branch reaching them
    could still make regular (bits)."""

    def __init__(self, at: int, first: _Branch) -> None:
        self.first: _Branch | None = first
        self.first_at = at
        self.aside: list[_Aside] = []
        self.seen: dict[int, dict[object, int]] = {}


class Search:
    """The least trial work that makes each of some melds of one lineage regular (see the
    module doc); one replay serves them all (their own pieces are judged for every one).

    `free`: the trial ops that may be left out; `stands_on[seq]`: the ops of `free` that op
    `seq` stands on, itself included (card and meld dependencies, transitively), for every
    op of `steps` and of `free`; `own`: the judged calata's ops."""

    def __init__(self, steps: Sequence[Step], start: Board, free: Collection[int],
                 stands_on: Mapping[int, Work], own: Collection[int],
                 melds: Sequence[Judged]) -> None:
        self.steps = steps
        self.start = start
        self.free = free
        self.own = own
        self.melds = melds
        self.all = (1 << len(melds)) - 1
        self.judged_bits = max(1, len(melds))  # `_key`: a face above the judged melds' bits
        # card index -> (bit of a judged meld, the op that last moved the card on the table)
        self.judged_by: dict[int, list[tuple[int, int | None]]] = {}
        for bit, m in enumerate(melds):
            for c, last in m.cards.items():
                self.judged_by.setdefault(c.index, []).append((1 << bit, last))
        self.meld_bits: dict[int, int] = {}
        for bit, m in enumerate(melds):
            self.meld_bits[m.id] = self.meld_bits.get(m.id, 0) | 1 << bit
        # trial ops as bits (`_Branch`), and what each op stands on as a mask of them
        self.seq_of = sorted(set(free).union(*stands_on.values()))
        bit_of = {seq: 1 << k for k, seq in enumerate(self.seq_of)}
        self.under = {seq: _mask(bit_of, us) for seq, us in stands_on.items()}
        self.step_under = [self.under[st.op.seq] for st in steps]
        n = len(steps)
        # after step i-1 (before step i): the trial ops steps i.. ask about, the cards (by
        # index) they move and bring, the ids whose resolution they (and the judgement at
        # the end) use
        self.asks: list[int] = [0] * (n + 1)  # a mask of trial ops
        self.moved: list[frozenset[int]] = [frozenset()] * (n + 1)
        self.brought: list[int] = [0] * (n + 1)  # a `code`, counts clamped at 2
        self.ids: list[frozenset[int]] = [frozenset()] * (n + 1)
        self.step_cards = [tuple(c.index for c in st.op.cards) for st in steps]
        asks = 0
        moved: set[int] = set()
        brought = 0
        ids: set[int] = {x for m in melds for x in start.lineage(m.id)}
        for i in range(n, -1, -1):
            self.asks[i] = asks
            self.moved[i] = frozenset(moved)
            self.brought[i] = brought
            self.ids[i] = frozenset(ids)
            if i == 0:
                break
            st = steps[i - 1]
            asks |= self.step_under[i - 1]
            moved.update(self.step_cards[i - 1])
            if st.put:
                brought = bring(brought, st.op.cards)
                ids.update(start.lineage(st.op.dst))
        self.later_cache: dict[tuple[int, int], tuple[frozenset[int], int]] = {}
        self.prefix: tuple[_Branch | None, int] | None = None
        self.hopeless = _mask(bit_of, self._hopeless())  # decided from the start: left out
        # step i decides a trial op no earlier step stood on (every branch has decided those)
        self.decides: list[bool] = []
        seen = self.hopeless
        for under in self.step_under:
            self.decides.append(bool(under & ~seen))
            seen |= under

    def _hopeless(self) -> set[int]:
        """Trial ops that no way can keep, left out from the start (M5.4.3: a stray): the op
        puts a card on the lineage that no later op moves, the card of every judged meld as
        on the table (so where it lands is judged), and no regular meld can hold that card
        with the cards certainly beside it there and any others the lineage could ever hold.
        Kept, such an op ends every branch. Beside it for certain: nothing in general (a
        split may part any two cards), but when no op takes a card off the lineage and its
        cards can make no run over 10, nothing on it ever splits: a card put into a meld of the
        consolidated board lands there, and that meld's cards never leave it."""
        pool = [c for cs in self.start.melds.values() for c in cs]
        pool += [c for st in self.steps for c in st.op.cards]
        everything = bring(0, pool)
        still = not any(st.take for st in self.steps) and not long_run_possible(pool)
        out: set[int] = set()
        for i, st in enumerate(self.steps):
            seq = st.op.seq
            if not st.put or seq not in self.free or seq in out:
                continue
            beside: list[Card] = []
            if still:  # a meld of the consolidated board that never loses a card
                beside = list(self.start.melds.get(st.op.dst, ()))
            for c in st.op.cards:
                marks = self.judged_by.get(c.index, [])
                if (c.index not in self.moved[i + 1] and len(marks) == len(self.melds)
                        and all(last == seq for _, last in marks)
                        and not viable_coded(code((*beside, c)), 0, everything)):
                    out.add(seq)
                    break
        return out

    def run(self) -> list[Work | None]:
        """Per judged meld, the least work, or None. The replay goes with a limit on the trial
        ops a branch keeps, 2 at first: a choice that would keep more is put aside where it
        was made (`_Aside`), not dropped. When the replay ends, the melds still without an
        answer are looked for again, by taking up the put-aside choices that keep the fewest
        ops (the limit becomes their size), each from the step where it was put aside; and so
        on, while any is left. So every branch is replayed once, and in order of the size of
        the work it keeps: the first answer found for a meld is its least (an answer is the
        smallest work first, `_first`, and within one replay the merge keeps the first).
        A branch taken up again that reaches, at a deciding step, a table that a branch
        keeping less reached there in an earlier replay, with no judged meld that one could
        not still make regular, is dropped (`_Replays.seen`): the same table and choices
        ahead, so whatever it can find, the other finds with less work."""
        best: list[Work | None] = [None] * len(self.melds)
        start, at = self._prefix()
        if start is None:
            return best
        first = _Branch(start.board, 0, self.hopeless, start.own_ids, self.all)
        first.alive = self._alive(first, at)
        if not first.alive:
            return best
        replays = _Replays(at, first)
        wanted = self.all
        limit = 2
        while True:
            for bit, work in enumerate(self._run(limit, wanted, replays)):
                if work is not None:
                    best[bit] = frozenset(self.seq_of[k] for k in range(work.bit_length())
                                          if work >> k & 1)
                    wanted &= ~(1 << bit)
            if not wanted or not replays.aside:
                return best
            limit = min(choice.kept.bit_count() for choice in replays.aside)

    def _run(self, limit: int, wanted: int, replays: _Replays) -> list[int | None]:
        """One replay of the branches that keep at most `limit` trial ops, for the judged
        melds `wanted` (bits): the first branch (on the first replay), then the choices put
        aside that fit the limit, each joining at the step it was put aside at; the least
        work found for each meld."""
        resumed: dict[int, list[_Aside]] = {}
        kept_aside: list[_Aside] = []
        for choice in replays.aside:
            if choice.kept.bit_count() <= limit:
                resumed.setdefault(choice.step, []).append(choice)
            else:
                kept_aside.append(choice)
        replays.aside = kept_aside
        branches: list[_Branch] = []
        begin = min(resumed, default=len(self.steps))
        if replays.first is not None:  # the first replay (nothing put aside yet)
            branches, begin = [replays.first], replays.first_at
            replays.first = None
        for i in range(begin, len(self.steps)):
            taken = resumed.pop(i, ())
            if not branches and not taken:
                if not resumed:
                    break
                continue
            st = self.steps[i]
            # a step that decides nothing new (its trial ops were decided at earlier steps in
            # every branch) makes no new branch: no choices, no merging, pruning waits
            merge = self.decides[i]
            if not merge:
                if i + 1 < len(self.steps):
                    branches = [br for br in branches if self._plain_step(br, st)]
                else:
                    branches = [nb for br in branches
                                if (nb := self._step(br, st, br.known, br.kept, i + 1))
                                is not None]
                continue
            seen = replays.seen.setdefault(i + 1, {})
            grown: dict[tuple[object, int], _Branch] = {}
            ways = [(br, known, kept) for br in branches
                    for known, kept in self._choices(br, self.step_under[i])]
            ways += [(choice.branch, choice.known, choice.kept) for choice in taken]
            for br, known, kept in ways:
                if kept.bit_count() > limit:
                    replays.aside.append(_Aside(i, br, known, kept))
                    continue
                if br.alive & ~wanted:  # melds answered since it was put aside
                    br = _Branch(br.board, br.kept, br.known, br.own_ids, br.alive & wanted)
                    if not br.alive:
                        continue
                nb = self._step(br, st, known, kept, i + 1)
                if nb is None:
                    continue
                table = self._key(nb, i + 1)
                if nb.alive & ~seen.get(table, 0) == 0:
                    continue  # reached keeping less in an earlier replay
                old = grown.get((table, nb.alive))
                if old is None or _first(nb.kept, old.kept):
                    grown[(table, nb.alive)] = nb
            for (table, alive) in grown:
                seen[table] = seen.get(table, 0) | alive
            branches = list(grown.values())
        found: list[int | None] = [None] * len(self.melds)
        for br in branches:
            for bit, m in enumerate(self.melds):
                if not (br.alive & wanted) >> bit & 1:
                    continue
                now = found[bit]
                if (now is None or _first(br.kept, now)) and m.judge(
                        br.board, br.own_ids):
                    found[bit] = br.kept
        return found

    def _prefix(self) -> tuple[_Branch | None, int]:
        """The steps before the first that stands on a trial op of `free` are the same in
        every branch: replayed once (None: an own op cannot stand there), with the index of
        the first step left."""
        if self.prefix is None:
            board = self.start.copy()
            own_ids: frozenset[int] = frozenset()
            at = 0
            made: _Branch | None = None
            while at < len(self.steps) and not self.step_under[at]:
                st = self.steps[at]
                op = st.op
                if (st.take or op.kind is not OpKind.MOVE) and not board.can_apply(op):
                    if op.seq in self.own:
                        break
                else:
                    ids = board.apply(op, st.take, st.put)
                    if op.seq in self.own:
                        own_ids = own_ids | frozenset(ids)
                at += 1
            else:
                made = _Branch(board, 0, 0, own_ids, self.all)
            self.prefix = (made, at)
        return self.prefix

    def _choices(self, br: _Branch, ask: int) -> list[tuple[int, int]]:
        """Every way (known, kept) of deciding the trial ops of `ask` (what a step stands
        on) that are not decided yet, the first op first; an op is kept only with all it
        stands on (the others would leave it out anyway)."""
        out = [(br.known, br.kept)]
        todo = ask & ~br.known
        while todo:
            v = todo & -todo
            todo ^= v
            under = self.under[self.seq_of[v.bit_length() - 1]]
            grown: list[tuple[int, int]] = []
            for known, kept in out:
                if known & v:
                    grown.append((known, kept))
                    continue
                if not under & known & ~kept:  # nothing it stands on is left out
                    grown.append((known | under, kept | under))
                grown.append((known | v, kept))
            out = grown
        return out

    def _step(self, br: _Branch, st: Step, known: int, kept: int,
              after: int) -> _Branch | None:
        """The branch after step `st` with these decisions, pruned (None: it is over). A new
        branch: `br` may be shared (other choices made from it, a choice put aside)."""
        made = self._apply(br.board, br.own_ids, st, kept, owned=False)
        if made is None:
            return None
        board, own_ids, owned = made
        nb = _Branch(board, kept, known & self.asks[after], own_ids, br.alive, owned=owned)
        nb.alive = self._alive(nb, after)
        return nb if nb.alive else None

    def _plain_step(self, br: _Branch, st: Step) -> bool:
        """Step `st`, which decides nothing and is not the last, for branch `br` itself (no
        other branch or put-aside choice holds it: those are made at deciding steps, with the
        branch as it was before one); decisions, merging and pruning wait for the next step
        that asks. False if it is over (an own op cannot stand)."""
        made = self._apply(br.board, br.own_ids, st, br.kept, br.owned)
        if made is None:
            return False
        br.board, br.own_ids, br.owned = made
        return True

    def _apply(self, board: Board, own_ids: frozenset[int], st: Step, kept: int, owned: bool
               ) -> tuple[Board, frozenset[int], bool] | None:
        """A branch's board and own ids after step `st` (the board copied first unless
        `owned`), and whether the board is owned then; None if an own op cannot stand. The op
        does not apply if it stands on trial work left out."""
        op = st.op
        if self.under[op.seq] & ~kept:
            return board, own_ids, owned
        if (st.take or op.kind is not OpKind.MOVE) and not board.can_apply(op):
            return None if op.seq in self.own else (board, own_ids, owned)
        if not owned:
            board = board.copy()
        ids = board.apply(op, st.take, st.put)
        if op.seq in self.own:
            own_ids = own_ids | frozenset(ids)
        return board, own_ids, True

    def _later(self, br: _Branch, i: int) -> tuple[frozenset[int], int]:
        """The cards (indices) that steps i.. of this branch can still move, and (interned)
        the faces of those they can bring: a step cannot apply if a trial op it stands on
        has been left out."""
        out = br.known & ~br.kept
        if not out:
            return self.moved[i], self.brought[i]
        got = self.later_cache.get((i, out))
        if got is None:
            moving: set[int] = set()
            brought = 0
            for j in range(i, len(self.steps)):
                if not self.step_under[j] & out:  # (it stands on nothing left out)
                    moving.update(self.step_cards[j])
                    st = self.steps[j]
                    if st.put:
                        brought = bring(brought, st.op.cards)
            got = self.later_cache[(i, out)] = (frozenset(moving), brought)
        return got

    def _viable(self, stay: Sequence[Card], cards: Sequence[Card], brought: int) -> bool:
        """`viable(stay, cards + the cards brought)` (faces are all it uses)."""
        return viable_coded(code(stay), code(cards), brought)

    def _judged(self, board: Board, c: Card) -> int:
        """The judged melds (bits) for which card `c` stands here as on the table."""
        marks = self.judged_by.get(c.index)
        if marks is None:
            return 0
        bits = 0
        now = board.last_op.get(c)
        for bit, last in marks:
            if now == last:
                bits |= bit
        return bits

    def _alive(self, br: _Branch, i: int) -> int:
        """The judged melds this branch can still make regular. Cards that no later step of
        the branch can move stay where they are, and only cards later steps can bring may
        join them. A piece holding such cards is judged at the end, for every judged meld if
        the own ops touched it (their pieces are judged with every meld of the lineage), for
        a judged meld if one of them is its card (there as on the table) or if the piece is
        that meld under its own id. A piece that cannot become regular never splits (only a
        regular run does), so it is judged as it stands: those melds cannot be regular."""
        alive = br.alive
        board = br.board
        moving, brought = self._later(br, i)
        for mid, cards in board.melds.items():
            stay = tuple(c for c in cards if c.index not in moving)
            if stay and not self._viable(stay, cards, brought):
                hit = self._hit(br, mid, stay) & alive
                if hit:
                    alive &= ~hit
                    if not alive:
                        return 0
        return alive

    def _hit(self, br: _Branch, mid: int, stay: Sequence[Card]) -> int:
        """The judged melds for which meld `mid` is judged at the end, holding the cards
        `stay`: all if the own ops touched it, else those it is (by id) and those whose
        cards stand in it as on the table."""
        if mid in br.own_ids:
            return self.all
        hit = self.meld_bits.get(mid, 0)
        for c in stay:
            hit |= self._judged(br.board, c)
        return hit

    def _key(self, br: _Branch, i: int) -> object:
        """What the rest of the replay and the judgement at its end see of a branch: the
        melds (cards later steps may move by identity, the others by face and by the judged
        melds they count for), leaving out melds nothing can reach any more that are judged
        for none; the ids born and the ops applied that later ids resolve through; where the
        cards later steps may move stand; the own ids still there or reachable; the decisions
        still asked; the judged melds still possible."""
        board = br.board
        moving, _ = self._later(br, i)
        ids = self.ids[i]
        own_ids = br.own_ids
        melds = []
        last = []
        for mid, cards in board.melds.items():
            sig = []
            reach = mid in ids or mid in own_ids
            for c in cards:
                x = c.index
                if x in moving:
                    sig.append(x)
                    last.append((x, board.last_op.get(c) or 0))
                    reach = True
                else:
                    judged = self._judged(board, c)
                    if judged:
                        reach = True
                    sig.append(1000 + ((c.rank * 4 + c.suit) << self.judged_bits) + judged)
            if reach:
                sig.sort()
                melds.append((mid, tuple(sig)))
        melds.sort()
        last.sort()
        applied = board.applied
        born = board.born
        creators = board.creators
        resolving = tuple(sorted(x for x in ids if x in born or creators.get(x, -1) in applied))
        own = tuple(sorted(x for x in own_ids if x in board.melds or x in ids))
        return (tuple(melds), resolving, tuple(last), own, br.known, br.kept & br.known)


def _mask(bit: Mapping[int, int], seqs: Iterable[int]) -> int:
    out = 0
    for seq in seqs:
        out |= bit[seq]
    return out


def _first(a: int, b: int) -> bool:
    """Does work `a` come before work `b` (as bits, `_Branch`) in the order of a search over
    subsets (tests/rules/sim/oracle.py): fewer ops, or as many and the lowest op in which they
    differ is in `a` (the one whose work came first)?"""
    na, nb = a.bit_count(), b.bit_count()
    if na != nb:
        return na < nb
    diff = a ^ b
    return bool(a & diff & -diff)
