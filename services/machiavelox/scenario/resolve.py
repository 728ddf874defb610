"""Written cards and meld references to engine cards and meld ids, against the live table.

Cards: a bare card means a copy of it in the zone the statement reads from (the lowest copy
there); when no copy is there, copy 1 is passed anyway so that the engine gives the refusal.
Melds: a name bound in setup or by `as NAME`; `@CARD`, the meld holding that card; `[...]`, the
meld whose cards are exactly these. A reference that finds nothing, or is ambiguous, fails the
scenario (a ScenarioFailure) with a message saying why.

`pick` and `named_meld` / `exact_meld` serve both rulesets (classic's runner passes its cards'
copies and its table); `pick_cards` and `meld_id` are Machiavelox's.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TypeVar

from machiavelox import rules

from .cardsets import Physical, Written, same_cards, show_melds, show_specs
from .errors import ScenarioFailure
from .syntax import CardRef, CardSpec, ListRef, NameRef, Ref

K = TypeVar("K", bound=Physical)
W = TypeVar("W", bound=Written[Physical])


def pick(specs: Sequence[W], zone: Collection[K], copies: Callable[[W], Sequence[K]],
         exact: Callable[[W], K]) -> tuple[K, ...]:
    """Physical cards for `specs`, taken from `zone` (a hand, a pozzetto, a meld); `copies`
    are a written card's physical copies at the table, lowest first.

    Exact cards are taken as written. Each bare card takes the lowest copy in the zone that no
    other card of the statement took; failing that, the lowest copy not taken (the engine
    then refuses it as not being there).
    """
    taken: set[K] = {exact(s) for s in specs if s.copy is not None}
    out: list[K] = []
    for spec in specs:
        if spec.copy is not None:
            out.append(exact(spec))
            continue
        free = [c for c in copies(spec) if c not in taken]
        present = [c for c in free if c in zone]
        chosen = (present or free or [exact(spec)])[0]
        taken.add(chosen)
        out.append(chosen)
    return tuple(out)


def pick_cards(specs: Sequence[CardSpec], zone: Collection[rules.Card]) -> tuple[rules.Card, ...]:
    """`pick` with Machiavelox's two copies of every card."""
    return pick(specs, zone, lambda s: s.copies, lambda s: s.exact())


def pick_card(spec: CardSpec, zone: Collection[rules.Card]) -> rules.Card:
    return pick_cards((spec,), zone)[0]


def meld_id(table: rules.Table, ref: Ref, names: dict[str, int]) -> int:
    """The id of the table meld `ref` names now. Raises ScenarioFailure."""
    board = table.board
    if isinstance(ref, NameRef):
        return named_meld(ref, names, board.melds, lambda: _table(table), board.resolve)
    if isinstance(ref, CardRef):
        return _holding_meld(table, ref.card)
    return exact_meld(ref, board.melds, lambda: _table(table))


def named_meld(ref: NameRef, names: dict[str, int], melds: Collection[int],
               table: Callable[[], str], live: Callable[[int], int] = lambda mid: mid) -> int:
    """The meld bound to a name, now `live(id)` (a Machiavelox meld may have a new id)."""
    mid = names.get(ref.name)
    if mid is None:
        raise ScenarioFailure(f"a meld named {ref.name}",
                              f"no meld was bound to {ref.name} (was its action refused?)")
    now = live(mid)
    if now not in melds:
        raise ScenarioFailure(f"meld {ref.name} on the table", f"it is gone; table: {table()}")
    return now


def exact_meld(ref: ListRef[W], melds: Mapping[int, Collection[K]],
               table: Callable[[], str]) -> int:
    """The one meld whose cards are exactly the listed ones."""
    ids = [mid for mid, cards in melds.items() if same_cards(ref.cards, cards)]
    if not ids:
        raise ScenarioFailure(f"a meld [{show_specs(ref.cards)}]", f"none; table: {table()}")
    if len(ids) > 1:
        raise ScenarioFailure(f"one meld [{show_specs(ref.cards)}]",
                              f"{len(ids)} identical melds (ambiguous, use @CARD#n)")
    return ids[0]


def _holding_meld(table: rules.Table, spec: CardSpec) -> int:
    cards = (spec.exact(),) if spec.copy is not None else spec.copies
    ids = sorted({table.board.where[c] for c in cards if c in table.board.where})
    if not ids:
        raise ScenarioFailure(f"a meld holding {spec}", f"{spec} is in no meld; table: "
                              f"{_table(table)}")
    if len(ids) > 1:
        melds = [table.board.melds[i] for i in ids]
        raise ScenarioFailure(
            f"one meld holding {spec}",
            f"{len(ids)}: {show_melds(melds, {spec.face})} (ambiguous, use "
            f"@{spec.face}#1 or @{spec.face}#2)")
    return ids[0]


def _table(table: rules.Table) -> str:
    return show_melds(table.board.melds.values())
