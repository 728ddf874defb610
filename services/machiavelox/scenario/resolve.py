"""Written cards and meld references to engine cards and meld ids, against the live table.

Cards: a bare card means a copy of it in the zone the statement reads from (the lowest copy
there); when no copy is there, copy 1 is passed anyway so that the engine gives the refusal.
Melds: a name bound in setup or by `as NAME`; `@CARD`, the meld holding that card; `[...]`, the
meld whose cards are exactly these. A reference that finds nothing, or is ambiguous, fails the
scenario (a ScenarioFailure) with a message saying why.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from machiavelox import rules

from .cardsets import same_cards, show_melds, show_specs
from .errors import ScenarioFailure
from .syntax import CardRef, CardSpec, ListRef, NameRef, Ref


def pick_cards(specs: Sequence[CardSpec], zone: Collection[rules.Card]) -> tuple[rules.Card, ...]:
    """Physical cards for `specs`, taken from `zone` (a hand, a pozzetto, a meld).

    Exact cards are taken as written. Each bare card takes the lowest copy in the zone that no
    other card of the statement took; failing that, the lowest copy not taken (the engine
    then refuses it as not being there).
    """
    taken: set[rules.Card] = {s.exact() for s in specs if s.copy is not None}
    out: list[rules.Card] = []
    for spec in specs:
        if spec.copy is not None:
            out.append(spec.exact())
            continue
        free = [c for c in spec.copies if c not in taken]
        present = [c for c in free if c in zone]
        chosen = (present or free or [spec.exact()])[0]
        taken.add(chosen)
        out.append(chosen)
    return tuple(out)


def pick_card(spec: CardSpec, zone: Collection[rules.Card]) -> rules.Card:
    return pick_cards((spec,), zone)[0]


def meld_id(table: rules.Table, ref: Ref, names: dict[str, int]) -> int:
    """The id of the table meld `ref` names now. Raises ScenarioFailure."""
    board = table.board
    if isinstance(ref, NameRef):
        mid = names.get(ref.name)
        if mid is None:
            raise ScenarioFailure(f"a meld named {ref.name}",
                                  f"no meld was bound to {ref.name} (was its action refused?)")
        live = board.resolve(mid)
        if live not in board.melds:
            raise ScenarioFailure(f"meld {ref.name} on the table",
                                  f"it is gone; table: {_table(table)}")
        return live
    if isinstance(ref, CardRef):
        return _holding_meld(table, ref.card)
    return _exact_meld(table, ref)


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


def _exact_meld(table: rules.Table, ref: ListRef) -> int:
    ids = [mid for mid, cards in table.board.melds.items() if same_cards(ref.cards, cards)]
    if not ids:
        raise ScenarioFailure(f"a meld [{show_specs(ref.cards)}]", f"none; table: "
                              f"{_table(table)}")
    if len(ids) > 1:
        raise ScenarioFailure(f"one meld [{show_specs(ref.cards)}]",
                              f"{len(ids)} identical melds (ambiguous, use @CARD#n)")
    return ids[0]


def _table(table: rules.Table) -> str:
    return show_melds(table.board.melds.values())
