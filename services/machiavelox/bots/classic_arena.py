"""Classic sessions between `ClassicBot`s in-process, on the engine directly (tests, figures).

Each bot (a `ClassicBot` of its seat's level, `classic_levels.py`) decides from its own view
(`classic.view_for`) only; its action is applied at once (a classic table has one player on
turn: no races), the table's clock advancing a second per action. A refusal is always
predictable here (nothing else happened between the view and the action): it is recorded,
and the bot then gives the turn up or draws. After every action the cards are counted: every
card of the deck in exactly one place (a hand, the stock, a meld, out of play). Bounded: at
most `max_actions` actions per session.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from machiavelox.classic import (
    ClassicAction,
    HandResult,
    Session,
    SessionResult,
    Variants,
    deck,
    shuffled_deal,
    view_for,
)
from machiavelox.rules import RulesError

from .classic_levels import HARD, ClassicLevel
from .classic_mind import ClassicBot, Decision

STEP_MS = 1_000  # table time per action
MAX_ACTIONS = 20_000


@dataclass
class ClassicOutcome:
    seed: int
    variants: Variants
    hands: list[HandResult] = field(default_factory=list)
    result: SessionResult | None = None
    actions: int = 0
    refused: list[str] = field(default_factory=list)  # every refusal (all predictable here)
    kinds: Counter[str] = field(default_factory=Counter)  # actions by verb
    decisions: list[Decision] = field(default_factory=list)


def conserved(session: Session) -> bool:
    """Every card of the table's deck in exactly one place."""
    hand = session.hand
    places: list[object] = [c for cards in hand.hands.values() for c in cards]
    places += hand.stock
    places += [c for cards in hand.melds.values() for c in cards]
    places += hand.out_of_play
    everything = deck(session.variants.decks, session.variants.jokers)
    return len(places) == len(everything) and set(places) == set(everything)


def play_session(variants: Variants, seed: int, max_actions: int = MAX_ACTIONS,
                 bots: list[ClassicBot] | None = None,
                 levels: Sequence[ClassicLevel] | None = None) -> ClassicOutcome:
    """One session from `shuffled_deal(variants, seed)` (the next hands: seed + hand number),
    played by `bots` to its end; by default a `ClassicBot` per seat, of `levels` (one per
    seat, in seat order; default: all `hard`)."""
    if levels is not None and len(levels) != len(variants.seats):
        raise ValueError(f"{len(levels)} levels for {len(variants.seats)} seats")
    players = bots if bots is not None else [
        ClassicBot(s, variants, HARD if levels is None else levels[i])
        for i, s in enumerate(variants.seats)]
    session = Session(variants, shuffled_deal(variants, seed))
    out = ClassicOutcome(seed, variants)
    now = 0
    while session.result is None and out.actions < max_actions:
        now += STEP_MS
        if session.phase == "between":
            out.hands.append(_last(session))
            session.deal_next(shuffled_deal(variants, seed + len(session.hands),
                                            playing=session.active), now)
            continue
        seat = session.hand.turn
        bot = players[seat]
        action: ClassicAction | None = bot.decide(view_for(session, seat))
        assert action is not None, "a bot on turn always acts"
        out.actions += 1
        out.kinds[type(action).__name__] += 1
        try:
            session.apply(action, now)
        except RulesError as err:
            out.refused.append(f"{seat} {action}: {err.code}")
            bot.refused(action)
        else:
            bot.accepted(action)
        assert conserved(session), (seed, out.actions)
    if session.result is not None:
        out.hands.append(_last(session))
        out.result = session.result
    for bot in players:
        out.decisions += bot.decisions
    return out


def _last(session: Session) -> HandResult:
    result = session.hand.result
    assert result is not None
    return result
