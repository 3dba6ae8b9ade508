"""The rules of RULES.md, move for move: a hand-built layout, one tick of actions (the other seats wait), then
the exact table, rewards, infos and masks after it; lake races; a uniformity test for every random draw."""

from __future__ import annotations

import math
import re
import runpy
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

import nertz_env
from nertz_env.cards import RANKS, SUITS
from nertz_env.engine.rules import sample_block
from nertz_env.infos import round_end_name, score_of
from nertz_env.observation import decode
from nertz_env.snapshot import SnapshotError

DECK = [r + s for s in SUITS for r in RANKS]  # AC 2C ... KS, in card-code order
IDLE_NERTZ = ["KS", "QD"]  # the Nertz pile of a seat the test does not use: two cards that stay put
PILE_KEYS = ("nertz", "work", "stock", "waste", "redeals", "false_calls", "match_score")
# A seat's Nertz and work piles when its clubs, diamonds and hearts lie complete in the lake (spades only)
SPADES_ONLY = (["KS", "QS"], [["JS"], ["TS"], ["9S"], ["8S"]])


# ---------------------------------------------------------------------------------------------- helpers
def agent(p: int) -> str:
    return f"player_{p}"


def suit(s: str, seat: int, upto: int = 13) -> list[list[Any]]:
    """A foundation of suit ``s`` from the ace up to rank ``upto`` (13: complete), every card from ``seat``."""
    return [[r + s, seat] for r in RANKS[:upto]]


def _deck_card(text: str) -> str:
    """The deck card a pile or lake text stands for: a fixed or declared joker is one of the deck's jokers."""
    return "**" if text.startswith("*") else text


def build(
    rules: dict[str, Any],
    seats: dict[int, dict[str, Any]] | None = None,
    lake: list[list[list[Any]]] | tuple = (),
    seed: int = 0,
    **fields: Any,
) -> nertz_env.NertzParallelEnv:
    """A ``parallel_env(**rules)`` restored to a hand-built layout (piles bottom to top, as in snapshots).

    ``seats[p]``: ``PILE_KEYS`` (``work``: the first piles) and ``filler``, the pile whose bottom takes the
    rest of the deck (``"stock"``, ``"waste"`` or ``None``); an unnamed seat has ``IDLE_NERTZ``, the rest as
    stock. ``lake``: foundations of ``[card, seat]``; ``fields``: snapshot fields; ``seed``: the seat orders.
    """
    env = nertz_env.parallel_env(**rules)
    env.reset(seed=seed)
    snap = env.snapshot()
    cfg = env.config
    deck = DECK + ["**"] * cfg.jokers
    lake_cells = [[list(cell) for cell in fnd] for fnd in lake]
    for p, pl in enumerate(snap["players"]):
        spec = dict((seats or {}).get(p, {}))
        filler = spec.pop("filler", "stock")
        work = [list(pile) for pile in spec.pop("work", [])]
        pl["nertz"] = list(spec.pop("nertz", IDLE_NERTZ))
        pl["work"] = work + [[] for _ in range(cfg.work_piles - len(work))]
        pl["stock"] = list(spec.pop("stock", []))
        pl["waste"] = list(spec.pop("waste", []))
        pl.pop("memory", None)  # (the memory option: a seat remembers nothing of a hand-built layout)
        unknown = set(spec) - set(PILE_KEYS)
        assert not unknown, f"seat {p}: unknown layout keys {sorted(unknown)}"
        pl.update(spec)
        placed = pl["nertz"] + pl["stock"] + pl["waste"] + [c for pile in pl["work"] for c in pile]
        used = Counter(_deck_card(c) for c in placed)
        used.update(_deck_card(c) for fnd in lake_cells for c, owner in fnd if owner == p)
        rest = list((Counter(deck) - used).elements())  # deck order
        if filler is not None:  # (with None, the snapshot check refuses a deck left incomplete)
            pl[filler] = rest + pl[filler]
    snap["lake"] = lake_cells
    snap.update(fields)
    env.reset(options={"snapshot": snap})
    return env


class Tick(NamedTuple):
    """One step's outputs as lists indexed by seat."""

    rewards: list[float]
    terminations: list[bool]
    truncations: list[bool]
    infos: list[dict[str, Any]]
    obs: dict[str, Any]


def play(
    env: nertz_env.NertzParallelEnv,
    moves: dict[int, str] | None = None,
    expect: dict[int, dict[str, Any]] | None = None,
    lake: list[list[list[Any]]] | None = None,
) -> Tick:
    """One tick: seat p plays the action named ``moves[p]`` (``env.actions`` names), every other seat waits.
    With ``expect`` (``{}``: nothing changes), the table after it is checked by ``assert_table``."""
    before = None if expect is None else env.snapshot()
    acts = {a: 0 for a in env.agents}
    for p, name in (moves or {}).items():
        acts[agent(p)] = env.actions.lookup(name)
    obs, rew, term, trunc, infos = env.step(acts)
    if before is not None:
        assert_table(env, before, expect, lake)
    seats = range(env.config.num_players)
    return Tick(
        [rew[agent(p)] for p in seats],
        [term[agent(p)] for p in seats],
        [trunc[agent(p)] for p in seats],
        [infos[agent(p)] for p in seats],
        obs,
    )


def legal(env: nertz_env.NertzParallelEnv, p: int) -> set[str]:
    """Names of seat p's legal actions now."""
    return {env.actions.name(int(i)) for i in np.flatnonzero(env.action_mask(agent(p)))}


def assert_table(
    env: nertz_env.NertzParallelEnv,
    before: dict[str, Any],
    changes: dict[int, dict[str, Any]] | None = None,
    lake: list[list[list[Any]]] | None = None,
) -> None:
    """The table now equals ``before`` with ``changes`` applied to those seats (every other seat unchanged) and
    the lake equal to ``lake`` (unchanged when None)."""
    after = env.snapshot()
    for p, (g, w) in enumerate(zip(after["players"], before["players"], strict=True)):
        w = {**w, **(changes or {}).get(p, {})}
        diff = {k: (g[k], w[k]) for k in PILE_KEYS if g[k] != w[k]}
        assert not diff, f"seat {p}: (got, expected) per field: {diff}"
    want_lake = before["lake"] if lake is None else lake
    assert after["lake"] == want_lake, f"lake: got {after['lake']}, expected {want_lake}"


# ---------------------------------------------------------------------------------------------- the deal
@pytest.mark.parametrize(
    ("rules", "nertz", "work", "stock"),
    [
        ({}, 13, 4, 35),
        ({"nertz_size": 8, "work_piles": 6, "jokers": 2}, 8, 6, 40),
        ({"work_piles": 5}, 13, 5, 34),
    ],
)
def test_deal__nertz_pile_work_piles_of_one_card_and_the_rest_as_stock(
    rules: dict, nertz: int, work: int, stock: int
) -> None:
    env = nertz_env.parallel_env(num_players=3, **rules)
    env.reset(seed=7)
    snap = env.snapshot()
    deck = Counter(DECK + ["**"] * env.config.jokers)
    for p, pl in enumerate(snap["players"]):
        assert len(pl["nertz"]) == nertz and len(pl["stock"]) == stock and pl["waste"] == [], f"seat {p}"
        assert [len(pile) for pile in pl["work"]] == [1] * work, f"seat {p}: {pl['work']}"
        cards = pl["nertz"] + pl["stock"] + [c for pile in pl["work"] for c in pile]
        assert Counter(cards) == deck, f"seat {p}: the deal is not one whole deck"
    assert snap["lake"] == [] and snap["tick"] == 0


# ---------------------------------------------------------------------------------------------- flip
@pytest.mark.parametrize(
    ("draw", "stock", "stock_after", "turned"),
    [
        # draw 3: the packet KD 2S 9C is turned over as one, so 9C (the deepest of the three) is the new top
        (3, ["5C", "4H", "9C", "2S", "KD"], ["5C", "4H"], ["KD", "2S", "9C"]),
        (1, ["5C", "4H", "9C", "2S", "KD"], ["5C", "4H", "9C", "2S"], ["KD"]),
        (2, ["5C", "4H", "9C", "2S", "KD"], ["5C", "4H", "9C"], ["KD", "2S"]),
        # fewer than `draw` left: what is left is turned
        (3, ["2S", "KD"], [], ["KD", "2S"]),
        (3, ["KD"], [], ["KD"]),
    ],
    ids=["draw3", "draw1", "draw2", "draw3-two-left", "draw3-one-left"],
)
def test_flip__turns_the_top_draw_cards_as_one_packet(
    draw: int, stock: list[str], stock_after: list[str], turned: list[str]
) -> None:
    env = build({"num_players": 2, "draw": draw}, {0: {"stock": stock, "waste": ["7D"], "filler": "waste"}})
    waste = env.snapshot()["players"][0]["waste"]
    t = play(env, {0: "flip"}, {0: {"stock": stock_after, "waste": waste + turned}})
    assert t.rewards == [0.0, 0.0] and not t.infos[0]["illegal"]
    seen = decode(t.obs[agent(0)]["observation"], env.config)
    assert seen["waste_top"] == turned[-1] and seen["stock_count"] == len(stock_after)
    assert ("flip" in legal(env, 0)) is True  # the waste can always be turned back over


WASTE7 = ["AS", "2S", "3S", "4S", "5S", "6S", "7S"]


def spades_only(rules: dict[str, Any], seed: int = 0, **seat0: Any) -> nertz_env.NertzParallelEnv:
    """Two seats; seat 0's clubs, diamonds and hearts lie complete in the lake, its spades in ``SPADES_ONLY``'s
    Nertz and work piles and in ``seat0``'s stock and waste: the layout is seat 0's whole deck."""
    nertz, work = SPADES_ONLY
    seat = {"nertz": nertz, "work": work, "filler": None, **seat0}
    return build(
        {"num_players": 2, **rules}, {0: seat}, [suit("C", 0), suit("D", 0), suit("H", 0)], seed=seed
    )


def test_flip__empty_stock_turns_the_waste_over_unshuffled() -> None:
    env = spades_only({}, waste=WASTE7)
    assert "flip" in legal(env, 0)
    stock = ["7S", "6S", "5S", "4S", "3S", "2S", "AS"]  # the waste face down: its bottom card AS is on top
    play(env, {0: "flip"}, {0: {"stock": stock, "waste": [], "redeals": 1}})
    # the cards come round in the order they were turned the first time
    play(env, {0: "flip"}, {0: {"stock": ["7S", "6S", "5S", "4S"], "waste": ["AS", "2S", "3S"]}})


def test_flip__recycle_shuffle_turns_the_same_cards_in_a_seeded_order() -> None:
    orders = []
    for seed in range(4):
        env = spades_only({"recycle": "shuffle"}, seed=seed, waste=WASTE7)
        before = env.snapshot()
        play(env, {0: "flip"})
        stock = env.snapshot()["players"][0]["stock"]
        assert sorted(stock) == sorted(WASTE7), f"seed {seed}: {stock} is not the waste's cards"
        assert_table(env, before, {0: {"stock": stock, "waste": [], "redeals": 1}})
        assert "flip" in legal(env, 0)
        orders.append(stock)
    assert len({tuple(o) for o in orders}) > 1, "the shuffle does not depend on the seed (or never shuffles)"
    again = spades_only({"recycle": "shuffle"}, seed=0, waste=WASTE7)
    play(again, {0: "flip"})
    assert again.snapshot()["players"][0]["stock"] == orders[0], "same seed, different shuffle"


def test_flip__max_redeals_masks_flip_once_the_redeals_are_used_up() -> None:
    env = spades_only({"max_redeals": 1}, waste=WASTE7)
    for _ in range(4):  # the one redeal, then 7 cards 3 at a time
        assert "flip" in legal(env, 0)
        play(env, {0: "flip"})
    pl = env.snapshot()["players"][0]
    assert pl["stock"] == [] and pl["waste"] == WASTE7 and pl["redeals"] == 1
    assert "flip" not in legal(env, 0), "flip stays legal with the stock empty and no redeal left"
    t = play(env, {0: "flip"}, {})
    assert t.infos[0]["illegal"] and t.infos[0]["action"] == 0
    # with unlimited redeals the same layout may turn the waste over again
    assert "flip" in legal(spades_only({}, waste=WASTE7, redeals=5), 0)
    zero = spades_only({"max_redeals": 0}, waste=WASTE7)
    assert "flip" not in legal(zero, 0), "max_redeals=0 still lets the waste be turned over"


def test_rotate__moves_the_stock_top_to_the_bottom_when_allowed() -> None:
    rules = {"num_players": 2, "allow_rotate": True}
    env = build(rules, {0: {"stock": ["AS", "2S", "3S"], "filler": "waste"}})
    assert "rotate" in legal(env, 0)
    play(env, {0: "rotate"}, {0: {"stock": ["3S", "AS", "2S"]}})
    one = build(rules, {0: {"stock": ["AS"], "filler": "waste"}})
    assert "rotate" not in legal(one, 0), "rotating a one-card stock is a no-op and should be masked"


# ---------------------------------------------------------------------------------------------- the lake
def test_lake__an_ace_starts_a_new_foundation_and_the_next_nertz_card_shows() -> None:
    env = build({"num_players": 3}, {0: {"nertz": ["KS", "9D", "AH"]}}, lake=[[["AC", 1]]])
    assert "lake:nertz" in legal(env, 0)
    t = play(env, {0: "lake:nertz"}, {0: {"nertz": ["KS", "9D"]}}, lake=[[["AC", 1]], [["AH", 0]]])
    assert t.rewards == [1.0, 0.0, 0.0]
    assert not any(i["illegal"] or i["lost_race"] for i in t.infos)
    assert decode(t.obs[agent(0)]["observation"], env.config)["nertz_top"] == "9D"
    # the other seats see the newly exposed card (opponents are listed from the seat after the observer)
    assert decode(t.obs[agent(1)]["observation"], env.config)["opponents"][1]["nertz_top"] == "9D"
    assert decode(t.obs[agent(2)]["observation"], env.config)["opponents"][0]["nertz_top"] == "9D"


@pytest.mark.parametrize(
    ("src", "layout", "after"),
    [
        ("nertz", {"nertz": ["KS", "3H"]}, {"nertz": ["KS"]}),
        ("waste", {"waste": ["JC", "3H"]}, {"waste": ["JC"]}),
        ("work2", {"work": [["KC"], [], ["4S", "3H"]]}, {"work": [["KC"], [], ["4S"], []]}),
    ],
)
def test_lake__builds_on_the_same_suit_one_rank_higher_from_every_source(
    src: str, layout: dict, after: dict
) -> None:
    lake = [[["AH", 1], ["2H", 2]], [["AC", 2]]]
    env = build({"num_players": 3}, {0: layout}, lake)
    assert f"lake:{src}" in legal(env, 0)
    t = play(env, {0: f"lake:{src}"}, {0: after}, lake=[[["AH", 1], ["2H", 2], ["3H", 0]], [["AC", 2]]])
    assert t.rewards == [1.0, 0.0, 0.0]


def test_lake__wrong_suit_or_rank_is_masked_and_applied_as_a_flagged_wait() -> None:
    lake = [[["AH", 1], ["2H", 1]]]
    layout = {"nertz": ["KS", "3D"], "waste": ["JC", "4H"], "work": [["2H"], ["KC"], ["3S"]]}
    env = build({"num_players": 3}, {0: layout}, lake)
    mask = legal(env, 0)
    assert not {n for n in mask if n.startswith("lake:")}, f"illegal lake plays in the mask: {mask}"
    t = play(env, {0: "lake:nertz"}, {})
    assert t.infos[0]["illegal"] and not t.infos[0]["lost_race"] and t.infos[0]["action"] == 0
    assert t.rewards == [0.0, 0.0, 0.0]


def test_lake__a_king_completes_a_foundation_and_nothing_goes_on_it() -> None:
    env = build({"num_players": 2}, {0: {"nertz": ["2D", "KC"], "waste": ["AD"]}}, [suit("C", 1, 12)])
    play(env, {0: "lake:nertz"}, {0: {"nertz": ["2D"]}}, lake=[[*suit("C", 1, 12), ["KC", 0]]])
    assert "lake:nertz" not in legal(env, 0)  # 2D: no AD foundation, and nothing follows the KC
    assert "lake:waste" in legal(env, 0)  # the AD starts its own


# ---------------------------------------------------------------------------------------------- work piles
def test_to_work__nertz_top_goes_on_one_rank_higher_of_the_other_colour_only() -> None:
    layout = {"nertz": ["KS", "8H"], "work": [["9C"], ["9H"], ["TS"], ["8C"]]}
    env = build({"num_players": 2}, {0: layout}, since_progress=5)
    assert legal(env, 0) == {
        "wait", "flip",
        "to_work:nertz>0",  # 8H on 9C; not on 9H (same colour), TS (two ranks), 8C (same rank)
        "run:work1>2x1",  # 9H on TS
        "run:work3>1x1",  # 8C on 9H
    }  # fmt: skip
    t = play(
        env, {0: "to_work:nertz>0"}, {0: {"nertz": ["KS"], "work": [["9C", "8H"], ["9H"], ["TS"], ["8C"]]}}
    )
    assert t.rewards == [0.0, 0.0]
    assert env.snapshot()["since_progress"] == 0, "a Nertz-pile play is progress"


def test_to_work__waste_top_onto_a_work_pile_is_not_progress() -> None:
    layout = {"nertz": ["KS", "2S"], "waste": ["JD", "8H"], "work": [["9C"], ["KC"]]}
    env = build({"num_players": 2}, {0: layout}, since_progress=5)
    assert {"to_work:waste>0", "to_work:waste>2", "to_work:waste>3"} <= legal(env, 0)
    assert "to_work:waste>1" not in legal(env, 0)
    play(env, {0: "to_work:waste>0"}, {0: {"waste": ["JD"], "work": [["9C", "8H"], ["KC"], [], []]}})
    assert env.snapshot()["since_progress"] == 6


def test_to_work__an_empty_pile_takes_any_card_or_run() -> None:
    layout = {"nertz": ["KS", "5S"], "waste": ["JH"], "work": [[], ["KC"], ["7D"], ["QH"]]}
    env = build({"num_players": 2}, {0: layout})
    assert legal(env, 0) == {
        "wait", "flip",
        "to_work:nertz>0", "to_work:waste>0",  # any card onto the empty pile
        "run:work1>0x1", "run:work2>0x1", "run:work3>0x1",  # any run onto the empty pile
        "run:work3>1x1",  # QH on KC
    }  # fmt: skip
    play(env, {0: "to_work:waste>0"}, {0: {"waste": [], "work": [["JH"], ["KC"], ["7D"], ["QH"]]}})


@pytest.mark.parametrize(
    ("move", "work_after"),
    [
        ("run:work0>1x3", [[], ["TD", "9C", "8H", "7S"], ["8D"], ["9S"]]),
        ("run:work0>3x2", [["9C"], ["TD"], ["8D"], ["9S", "8H", "7S"]]),
        ("run:work0>2x1", [["9C", "8H"], ["TD"], ["8D", "7S"], ["9S"]]),
    ],
)
def test_run__moves_whole_when_its_bottom_card_fits(move: str, work_after: list) -> None:
    layout = {"nertz": ["KS", "KH"], "work": [["9C", "8H", "7S"], ["TD"], ["8D"], ["9S"]]}
    env = build({"num_players": 2}, {0: layout})
    assert legal(env, 0) == {
        "wait", "flip",
        "run:work0>1x3",  # 9C-8H-7S onto TD (7S alone onto TD is not allowed)
        "run:work0>3x2",  # 8H-7S onto 9S
        "run:work0>2x1",  # 7S onto 8D
        "run:work2>3x1",  # 8D onto 9S
        "run:work3>1x1",  # 9S onto TD
    }  # fmt: skip
    t = play(env, {0: move}, {0: {"work": work_after}})
    assert t.rewards == [0.0, 0.0] and not t.infos[0]["illegal"]


RUN_TO_EMPTY = {"nertz": ["KS", "KH"], "work": [["9C", "8H", "7S"], [], ["KD"], ["4C"]]}


@pytest.mark.parametrize(
    ("move", "work_after"),
    [
        ("run:work0>1x3", [[], ["9C", "8H", "7S"], ["KD"], ["4C"]]),
        ("run:work0>1x2", [["9C"], ["8H", "7S"], ["KD"], ["4C"]]),
        ("run:work0>1x1", [["9C", "8H"], ["7S"], ["KD"], ["4C"]]),
    ],
)
def test_run__an_empty_pile_takes_a_run_of_any_length(move: str, work_after: list) -> None:
    env = build({"num_players": 2}, {0: RUN_TO_EMPTY})
    runs = {n for n in legal(env, 0) if n.startswith("run:")}
    assert runs == {
        "run:work0>1x1", "run:work0>1x2", "run:work0>1x3",  # every run of pile 0, the whole pile included
        "run:work2>1x1", "run:work3>1x1",  # the lone KD and 4C
    }, runs  # fmt: skip
    t = play(env, {0: move}, {0: {"work": work_after}})
    assert not t.infos[0]["illegal"]


def test_empty_pile_from_nertz_first__an_empty_pile_takes_only_the_nertz_top() -> None:
    layout = {"nertz": ["KS", "5D"], "waste": ["9S"], "work": [[], ["KC"], ["QH"], ["7C"]]}
    common = {
        "wait", "flip",
        "to_work:nertz>0",
        "run:work2>1x1",  # QH on KC
    }  # fmt: skip
    to_empty = {"to_work:waste>0", "run:work1>0x1", "run:work2>0x1", "run:work3>0x1"}
    off = build({"num_players": 2}, {0: layout})
    assert legal(off, 0) == common | to_empty
    rules = {"num_players": 2, "empty_pile_from_nertz_first": True}
    on = build(rules, {0: layout})
    assert legal(on, 0) == common
    assert play(on, {0: "to_work:waste>0"}, {}).infos[0]["illegal"]
    play(on, {0: "to_work:nertz>0"}, {0: {"nertz": ["KS"], "work": [["5D"], ["KC"], ["QH"], ["7C"]]}})
    # once the Nertz pile is empty (manual calls, so the round goes on) any card may go to an empty pile again
    empty = build({**rules, "call_mode": "manual"}, {0: {**layout, "nertz": []}})
    assert legal(empty, 0) == (common - {"to_work:nertz>0"}) | to_empty | {"call"}
    # and so may a run of several cards
    assert not {n for n in legal(build(rules, {0: RUN_TO_EMPTY}), 0) if n.startswith("run:")}
    empty = build({**rules, "call_mode": "manual"}, {0: {**RUN_TO_EMPTY, "nertz": []}})
    assert {"run:work0>1x2", "run:work0>1x3"} <= legal(empty, 0)


def test_tuck__slides_a_card_under_a_base_when_a_pile_is_empty() -> None:
    layout = {"nertz": ["KS", "9H"], "waste": ["9D"], "work": [["8S", "7H"], [], ["KC"], ["2D"]]}
    env = build({"num_players": 2, "allow_tuck": True}, {0: layout}, since_progress=3)
    assert legal(env, 0) == {
        "wait", "flip",
        "to_work:nertz>1", "to_work:waste>1",
        "run:work0>1x1", "run:work0>1x2", "run:work2>1x1", "run:work3>1x1",
        "tuck:nertz>0", "tuck:waste>0",  # 8S (pile 0's base) fits on 9H and on 9D
    }  # fmt: skip
    t = play(
        env, {0: "tuck:nertz>0"}, {0: {"nertz": ["KS"], "work": [["9H", "8S", "7H"], [], ["KC"], ["2D"]]}}
    )
    assert t.rewards == [0.0, 0.0] and env.snapshot()["since_progress"] == 0
    full = build(
        {"num_players": 2, "allow_tuck": True},
        {0: {**layout, "work": [["8S", "7H"], ["3C"], ["KC"], ["2D"]]}},
    )
    assert not {n for n in legal(full, 0) if n.startswith("tuck")}, "tuck legal without an empty work pile"


# ---------------------------------------------------------------------------------------------- end of round
@pytest.mark.parametrize("seed", range(6))
def test_round_end__after_the_tick_the_nertz_pile_empties_with_every_action_counted(seed: int) -> None:
    """Seat 0 plays its last Nertz card; seat 1's lake play and seat 2's flip of the same tick still count,
    whatever the tick's order (seat 0 acts last with seeds 0 and 2, first with seeds 1, 4 and 5)."""
    seats = {
        0: {"nertz": ["5H"]},
        1: {"nertz": ["KS", "2S"]},
        2: {"stock": ["3C", "4D", "9H"], "filler": "waste"},
    }
    env = build({"num_players": 3}, seats, [suit("H", 1, 4), [["AS", 2]]], seed=seed)
    waste2 = env.snapshot()["players"][2]["waste"]
    t = play(
        env,
        {0: "lake:nertz", 1: "lake:nertz", 2: "flip"},
        {
            0: {"nertz": [], "match_score": 1},
            1: {"nertz": ["KS"], "match_score": 3},
            2: {"stock": [], "waste": [*waste2, "9H", "4D", "3C"], "match_score": -3},
        },
        lake=[[*suit("H", 1, 4), ["5H", 0]], [["AS", 2], ["2S", 1]]],
    )
    assert t.terminations == [True] * 3 and t.truncations == [False] * 3 and env.agents == []
    assert [round_end_name(i) for i in t.infos] == ["nertz"] * 3
    assert [score_of(i) for i in t.infos] == [
        {"lake": 1, "nertz_penalty": 0, "bonus": 0, "false_calls": 0, "total": 1, "nertz_left": 0},
        {"lake": 5, "nertz_penalty": -2, "bonus": 0, "false_calls": 0, "total": 3, "nertz_left": 1},
        {"lake": 1, "nertz_penalty": -4, "bonus": 0, "false_calls": 0, "total": -3, "nertz_left": 2},
    ]
    assert t.rewards == [1.0, 1.0 - 2.0, -4.0]  # this tick's lake cards, then the penalties


@pytest.mark.parametrize("penalty", [2, 0], ids=["nertz_penalty=2", "nertz_penalty=0 (Pounce)"])
def test_scoring__lake_cards_penalty_and_call_bonus(penalty: int) -> None:
    seats = {
        0: {"nertz": ["2D"]},
        1: {"nertz": ["KS", "QD", "JC"]},
        2: {"nertz": ["KS", "QD", "JC", "TH", "9C"]},
    }
    lake = [[["AC", 1], ["2C", 1], ["3C", 2]], [["AD", 0]]]
    env = build({"num_players": 3, "call_bonus": 10, "nertz_penalty": penalty}, seats, lake)
    t = play(env, {0: "lake:nertz"})
    assert env.snapshot()["lake"] == [[["AC", 1], ["2C", 1], ["3C", 2]], [["AD", 0], ["2D", 0]]]
    assert [score_of(i) for i in t.infos] == [
        {"lake": 2, "nertz_penalty": 0, "bonus": 10, "false_calls": 0, "total": 12, "nertz_left": 0},
        {"lake": 2, "nertz_penalty": -3 * penalty, "bonus": 0, "false_calls": 0, "total": 2 - 3 * penalty,
         "nertz_left": 3},
        {"lake": 1, "nertz_penalty": -5 * penalty, "bonus": 0, "false_calls": 0, "total": 1 - 5 * penalty,
         "nertz_left": 5},
    ]  # fmt: skip
    assert t.rewards == [1.0 + 10.0, -3.0 * penalty, -5.0 * penalty]
    assert [i["match_score"] for i in t.infos] == [i["score"] for i in t.infos]


SEAT2_LAKE = [[["AD", 2]], [["AS", 2]], suit("C", 2, 5)]  # seat 2, which does not go out: 7 lake cards


@pytest.mark.parametrize(
    ("seats", "hearts", "bonus"),
    [
        # seat 0 alone empties its pile: the bonus is its own, though seat 2 has far more cards in the lake
        ({0: {"nertz": ["2D"]}}, [["AH", 2]], [10, 0, 0]),
        # seats 0 and 1 empty theirs with one lake card each: tied, both take it; seat 2 is no rival
        ({0: {"nertz": ["2D"]}, 1: {"nertz": ["2S"]}}, [["AH", 2]], [10, 10, 0]),
        # seat 1 has two lake cards (AH, 2H) to seat 0's one: seat 1 takes it, seat 2's count does not matter
        ({0: {"nertz": ["2D"]}, 1: {"nertz": ["2H"]}}, [["AH", 1]], [0, 10, 0]),
    ],
    ids=["one-emptier", "two-tied", "two-unequal"],
)
def test_call_bonus__most_lake_cards_is_decided_among_the_seats_that_emptied_their_piles_only(
    seats: dict, hearts: list, bonus: list
) -> None:
    """RULES.md: "Two players emptying their piles in the same tick: the one with more cards in the lake takes
    the bonus; still tied, both do." A seat that did not go out has no claim, however many lake cards it has."""
    env = build({"num_players": 3, "call_bonus": 10}, seats, [*SEAT2_LAKE, hearts])
    t = play(env, {p: "lake:nertz" for p in seats})
    assert t.terminations == [True] * 3
    score = [score_of(i) for i in t.infos]
    assert score[2]["lake"] >= 7 and max(s["lake"] for s in score[:2]) <= 2, score
    assert [s["nertz_left"] == 0 for s in score] == [p in seats for p in range(3)]
    assert [s["bonus"] for s in score] == bonus
    assert [s["total"] for s in score] == [s["lake"] + s["bonus"] - 2 * s["nertz_left"] for s in score]
    # the reward: this tick's lake card, the bonus, the penalty
    assert t.rewards == [(p in seats) + s["bonus"] - 2.0 * s["nertz_left"] for p, s in enumerate(score)]


def test_call_mode_manual__empty_pile_waits_for_a_call_and_a_false_call_costs_five() -> None:
    rules = {"num_players": 2, "call_mode": "manual", "call_bonus": 10}
    env = build(rules, {0: {"nertz": ["2D"]}, 1: {"nertz": ["KS", "QD", "9C"]}}, [[["AD", 0]]])
    assert "call" in legal(env, 0) and "call" in legal(env, 1)  # a call is always a move (false or not)
    t = play(env, {0: "lake:nertz"}, {0: {"nertz": []}}, lake=[[["AD", 0], ["2D", 0]]])
    assert not any(t.terminations), "manual mode ended the round without a call"
    t = play(env, {1: "call"}, {1: {"false_calls": 1}})  # a false call: cards left
    assert t.rewards == [0.0, -5.0] and not any(t.terminations) and not t.infos[1]["illegal"]
    t = play(env, {0: "call"})
    assert t.terminations == [True, True] and [round_end_name(i) for i in t.infos] == ["nertz"] * 2
    assert [score_of(i) for i in t.infos] == [
        {"lake": 2, "nertz_penalty": 0, "bonus": 10, "false_calls": 0, "total": 12, "nertz_left": 0},
        {"lake": 0, "nertz_penalty": -6, "bonus": 0, "false_calls": -5, "total": -11, "nertz_left": 3},
    ]
    assert t.rewards == [10.0, -6.0]  # seat 1's -5 came with its call: -5 - 6 == its round score


def test_call_bonus__in_manual_mode_goes_to_the_caller_even_with_fewer_lake_cards() -> None:
    env = build(
        {"num_players": 2, "call_mode": "manual", "call_bonus": 10},
        {0: {"nertz": []}},
        [suit("C", 1, 6), [["AD", 0]]],
    )
    t = play(env, {0: "call"})
    assert t.terminations == [True, True]
    assert [i["score_lake"] for i in t.infos] == [1, 6]
    assert [i["score_bonus"] for i in t.infos] == [10, 0]


@pytest.mark.parametrize("name", ["call", "rotate", "tuck:nertz>0", "joker_lake:nertz:H"])
def test_actions__of_options_that_are_off_do_not_exist(name: str) -> None:
    with pytest.raises(ValueError, match=f"no action named '{re.escape(name)}'"):
        nertz_env.parallel_env().actions.lookup(name)


# ---------------------------------------------------------------------------------------------- stalls and bounds
def test_stall__waste_under_the_stock_then_top_to_bottom_and_a_second_stall_ends_the_round() -> None:
    env = spades_only({"stall_ticks": 2}, stock=["AS", "2S", "3S"], waste=["4S", "5S", "6S", "7S"])
    stock1 = env.snapshot()["players"][1]["stock"]
    assert not any(play(env, None, {}).terminations)
    expect = {
        # the waste face down under the stock (its top 7S lowest), then the stock's top 3S to the bottom
        0: {"stock": ["3S", "7S", "6S", "5S", "4S", "AS", "2S"], "waste": []},
        1: {"stock": [stock1[-1], *stock1[:-1]]},
    }
    play(env, None, expect)  # the second tick without progress: the stall rule
    after = env.snapshot()
    assert after["stalls"] == 1 and after["since_progress"] == 0 and after["done"] == "running"
    play(env)
    t = play(env)  # a second stall ends the round, scored as usual
    assert t.terminations == [True, True] and t.truncations == [False, False]
    assert [round_end_name(i) for i in t.infos] == ["stall"] * 2
    assert_table(env, after, {0: {"match_score": 35}, 1: {"match_score": -4}})  # no second shuffle
    assert [i["score"] for i in t.infos] == [39 - 4, -4]
    assert t.rewards == [-4.0, -4.0]


# ---------------------------------------------------------------------------------------------- the seat's memory
SPADES7 = ["AS", "2S", "3S", "4S", "5S", "6S", "7S"]


def memory_of(env: nertz_env.NertzParallelEnv, p: int = 0) -> dict[str, Any]:
    """Seat p's memory as ``decode`` reads it, with the cards ``memory_on_top`` marks."""
    obs = env._state.obs[0, p]
    on_top = obs[env.obs_layout.slices["memory_on_top"]]
    return decode(obs, env.config)["memory"] | {"on_top": [DECK[c] for c in np.flatnonzero(on_top)]}


@pytest.mark.parametrize(("recycle", "stock"), [("flip", ["AS", "2S", None, None, "5S", None, None]),
                                                ("shuffle", [None] * 7)])
def test_memory__the_seat_knows_the_tops_it_turned_up_until_a_shuffled_redeal(recycle: str, stock: list) -> None:
    """Draw 3: a flip shows its packet's deepest card only. Turned over unshuffled, the waste is the stock again
    in the order the seat saw it, and the cards seen are the ones a flip turns up; shuffled, they are still seen,
    but no place is known."""
    env = spades_only({"memory": True, "recycle": recycle}, stock=SPADES7)
    assert memory_of(env) == {"stock": [None] * 7, "waste": [], "on_top": [],
                              "unseen": ["AS", "2S", "3S", "4S", "5S", "6S", "7S", "KS"]}  # KS: under the Nertz top
    play(env, {0: "flip"})
    assert memory_of(env)["waste"] == [None, None, "5S"]
    play(env, {0: "flip"})
    play(env, {0: "flip"})
    assert memory_of(env)["waste"] == [None, None, "5S", None, None, "2S", "AS"]
    play(env, {0: "flip"})  # the redeal
    assert memory_of(env) == {"stock": stock, "waste": [], "on_top": [c for c in stock if c],
                              "unseen": ["3S", "4S", "6S", "7S", "KS"]}


@pytest.mark.parametrize(("stall_ticks", "stock"), [(2, [None, "5S", None, None, None, None, None]), (1, [None] * 7)])
def test_memory__the_stall_rule_carries_the_known_places_along(stall_ticks: int, stock: list) -> None:
    """The stall rule puts the waste under the stock and the stock's top at its bottom, and the seat follows.
    A card turned up in the tick the stall rule acts was never in an observation: the seat has not seen it."""
    env = spades_only({"memory": True, "stall_ticks": stall_ticks}, stock=SPADES7)
    for _ in range(stall_ticks):
        play(env, {0: "flip"} if _ == 0 else None)
    assert env.snapshot()["stalls"] == 1
    assert env.snapshot()["players"][0]["stock"] == ["4S", "5S", "6S", "7S", "AS", "2S", "3S"]
    memory = memory_of(env)
    assert memory["stock"] == stock and ("5S" in memory["unseen"]) == (stall_ticks == 1)


@pytest.mark.parametrize(
    ("move", "ends"),
    [
        ("wait", True),
        ("flip", True),
        ("to_work:waste>1", True),
        ("lake:nertz", False),
        ("to_work:nertz>1", False),
    ],
)
def test_stall__only_lake_and_nertz_plays_are_progress(move: str, ends: bool) -> None:
    seat0 = {"nertz": ["KS", "AH"], "waste": ["5C"], "work": [["KC"]]}
    env = build({"num_players": 2, "stall_ticks": 3}, {0: seat0}, stalls=1, since_progress=2)
    t = play(env, {0: move})
    assert not t.infos[0]["illegal"]
    assert t.terminations == [ends, ends]
    if not ends:
        snap = env.snapshot()
        assert snap["stalls"] == 0 and snap["since_progress"] == 0


@pytest.mark.parametrize("tick", [1, 2])
def test_max_ticks__truncates_and_scores_with_the_penalty(tick: int) -> None:
    env = build({"num_players": 2, "max_ticks": 3}, {0: {"nertz": ["KS", "AH"]}}, tick=tick)
    changes: dict[int, dict[str, Any]] = {0: {"nertz": ["KS"]}}
    if tick == 2:  # the round is scored: the match scores take the round scores
        changes = {0: {"nertz": ["KS"], "match_score": 1 - 2}, 1: {"match_score": -4}}
    t = play(env, {0: "lake:nertz"}, changes, lake=[[["AH", 0]]])
    if tick == 1:
        assert not any(t.truncations) and t.rewards == [1.0, 0.0]
        return
    assert t.truncations == [True, True] and t.terminations == [False, False] and env.agents == []
    assert [round_end_name(i) for i in t.infos] == ["max_ticks"] * 2
    assert [i["score"] for i in t.infos] == [1 - 2, -4]
    assert t.rewards == [1.0 - 2.0, -4.0]
    assert env.snapshot()["done"] == "truncated"


# ---------------------------------------------------------------------------------------------- matches
def test_target_score__round_below_target_deals_the_next_round() -> None:
    seats = {0: {"nertz": ["2D"], "match_score": 3}, 1: {"match_score": 1}}
    env = build({"num_players": 2, "target_score": 10}, seats, [[["AD", 0]]])
    t = play(env, {0: "lake:nertz"})
    assert t.terminations == [False, False] and t.truncations == [False, False]
    assert env.agents == ["player_0", "player_1"]
    assert [round_end_name(i) for i in t.infos] == ["nertz"] * 2
    assert [i["score"] for i in t.infos] == [2, -4]
    assert [i["match_score"] for i in t.infos] == [5, -3]
    assert t.rewards == [1.0, -4.0]
    snap = env.snapshot()
    assert snap["round"] == 1 and snap["tick"] == 0 and snap["lake"] == [] and snap["done"] == "running"
    for p, pl in enumerate(snap["players"]):
        assert pl["match_score"] == [5, -3][p]
        assert len(pl["nertz"]) == 13 and [len(w) for w in pl["work"]] == [1] * 4 and pl["waste"] == []
    env.reset(options={"snapshot": snap})  # the new deal is a valid table (every deck whole)


@pytest.mark.parametrize(
    ("clubs", "match", "max_rounds", "done", "round_after"),
    [
        # seat 0 reaches 10
        ([], [8, 0], None, "terminated", 0),
        # both cross; seat 0's round (4) beats seat 1's (2)
        ([["AC", 0], ["2C", 0]], [7, 9], None, "terminated", 0),
        # both cross with equal round scores: one more round
        ([["AC", 0], ["2C", 1]], [7, 8], None, "running", 1),
        # the same tie in the last allowed round: the match is truncated
        ([["AC", 0], ["2C", 1]], [7, 8], 2, "truncated", 1),
    ],
    ids=["one-crosses", "both-cross-higher-round-wins", "both-cross-tied-plays-on", "tie-in-the-last-round"],
)
def test_target_score__ends_when_one_player_crosses_and_ties_play_on(
    clubs: list, match: list, max_rounds: int | None, done: str, round_after: int
) -> None:
    both = bool(clubs)
    seats = {
        0: {"nertz": ["2D"], "match_score": match[0]},
        1: {"nertz": ["2S"] if both else IDLE_NERTZ, "match_score": match[1]},
    }
    lake = [fnd for fnd in (clubs, [["AD", 0]], [["AS", 1]]) if fnd]
    rules = {"num_players": 2, "target_score": 10}
    if max_rounds is None:
        env = build(rules, seats, lake)
    else:
        env = build({**rules, "max_rounds": max_rounds}, seats, lake, round=max_rounds - 1)
    t = play(env, {0: "lake:nertz", 1: "lake:nertz"} if both else {0: "lake:nertz"})
    assert [round_end_name(i) for i in t.infos] == ["nertz"] * 2
    snap = env.snapshot()
    assert snap["done"] == done and snap["round"] == round_after
    assert t.terminations == [done == "terminated"] * 2 and t.truncations == [done == "truncated"] * 2


@pytest.mark.parametrize(("round_idx", "over"), [(0, False), (1, True)])
def test_rounds__the_match_lasts_exactly_that_many_rounds(round_idx: int, over: bool) -> None:
    env = build({"num_players": 3, "rounds": 2}, {0: {"nertz": ["AD"]}}, round=round_idx)
    t = play(env, {0: "lake:nertz"})
    assert [round_end_name(i) for i in t.infos] == ["nertz"] * 3
    assert t.terminations == [over] * 3 and t.truncations == [False] * 3
    assert env.snapshot()["round"] == (round_idx if over else round_idx + 1)


# ---------------------------------------------------------------------------------------------- variants
def test_teams__partners_share_rewards_and_either_ends_the_round() -> None:
    seats = {0: {"nertz": ["KS", "AC"]}, 2: {"nertz": ["AD"]}}
    env = build({"num_players": 4, "teams": True, "call_bonus": 5}, seats)  # teams: seats 0+2 and 1+3
    assert env.config.team_of == (0, 1, 0, 1)
    t = play(env, {0: "lake:nertz", 2: "lake:nertz"})
    assert env.snapshot()["lake"] in ([[["AC", 0]], [["AD", 2]]], [[["AD", 2]], [["AC", 0]]])
    assert t.terminations == [True] * 4, "seat 2 emptied its pile: the round ends for its team too"
    totals = [i["score"] for i in t.infos]
    assert totals == [1 - 2, -4, 1 + 5, -4]
    assert [i["team_score"] for i in t.infos] == [5, -8, 5, -8]
    assert t.rewards == [5.0, -8.0, 5.0, -8.0]


def test_teams__rewards_within_a_round_are_team_sums() -> None:
    seats = {0: {"nertz": ["KS", "AC"]}, 1: {"nertz": ["KS", "AH"]}, 5: {"nertz": ["KS", "AD"]}}
    env = build({"num_players": 6, "teams": [[0, 3], [1, 5], [2, 4]]}, seats)
    t = play(env, {0: "lake:nertz", 1: "lake:nertz", 5: "lake:nertz"})
    assert not any(t.terminations)
    assert t.rewards == [1.0, 2.0, 0.0, 1.0, 0.0, 2.0]


def test_turn_based__only_the_seat_on_turn_may_act_and_the_turn_rotates() -> None:
    seats = {0: {"nertz": ["KS", "AD"]}, 1: {"nertz": ["KS", "AC"]}, 2: {"nertz": ["KS", "AH"]}}
    env = build({"num_players": 3, "turn_based": True}, seats)
    assert "lake:nertz" in legal(env, 0)
    assert legal(env, 1) == {"wait"} and legal(env, 2) == {"wait"}
    t = play(env, {0: "lake:nertz", 1: "lake:nertz"}, {0: {"nertz": ["KS"]}}, lake=[[["AD", 0]]])
    assert t.infos[1]["illegal"] and not t.infos[0]["illegal"]
    assert legal(env, 0) == {"wait"} and "lake:nertz" in legal(env, 1) and legal(env, 2) == {"wait"}
    turn = [decode(t.obs[agent(p)]["observation"], env.config)["status"]["my_turn"] for p in range(3)]
    assert turn == [0, 1, 0]
    play(env, {1: "lake:nertz"})
    assert "lake:nertz" in legal(env, 2) and legal(env, 0) == {"wait"} and legal(env, 1) == {"wait"}


@pytest.mark.parametrize(
    ("move", "lake_after"),
    [
        ("joker_lake:nertz:H", [[["AH", 1], ["2H", 1], ["*3H", 0]]]),  # onto the foundation of its suit
        ("joker_lake:nertz:S", [[["AH", 1], ["2H", 1]], [["*AS", 0]]]),  # none of its suit yet: it starts one
    ],
)
def test_jokers__a_free_joker_is_declared_as_the_chosen_suit(move: str, lake_after: list) -> None:
    env = build({"num_players": 2, "jokers": 1}, {0: {"nertz": ["KS", "**"]}}, [[["AH", 1], ["2H", 1]]])
    assert {f"joker_lake:nertz:{s}" for s in SUITS} <= legal(env, 0)
    t = play(env, {0: move}, {0: {"nertz": ["KS"]}}, lake=lake_after)
    assert t.rewards == [1.0, 0.0]


def test_jokers__a_real_card_builds_on_a_declared_joker() -> None:
    lake = [[["AH", 1], ["2H", 1], ["*3H", 1]]]
    env = build({"num_players": 2, "jokers": 1}, {0: {"nertz": ["KS", "4H"]}}, lake)
    assert "lake:nertz" in legal(env, 0)
    play(env, {0: "lake:nertz"}, {0: {"nertz": ["KS"]}}, lake=[[*lake[0], ["4H", 0]]])


@pytest.mark.parametrize("cover", ["7S", "7C"])
def test_jokers__fixed_once_covered_on_a_work_pile_then_only_its_colour_and_rank_reach_the_lake(
    cover: str,
) -> None:
    """A card covering a wild joker fixes it as the card it stands for: on the 9C, a red 8. With 7D, 7C and 2H
    on top of the lake, the uncovered joker then goes on the 7D only."""
    lake = [suit("D", 1, 7), suit("C", 1, 7), suit("H", 1, 2)]
    seat0 = {"nertz": ["KS", cover], "waste": ["**"], "work": [["9C"]]}
    env = build({"num_players": 2, "jokers": 1}, {0: seat0}, lake)
    assert "to_work:waste>0" in legal(env, 0)
    play(env, {0: "to_work:waste>0"})  # the joker continues the run as a red 8 ...
    assert "to_work:nertz>0" in legal(env, 0), "a black 7 goes on a wild joker lying on the 9C"
    expect = {0: {"nertz": ["KS"], "waste": [], "work": [["9C", "*8r", cover], [], [], []]}}
    play(env, {0: "to_work:nertz>0"}, expect)  # ... and is covered by the black 7
    play(
        env, {0: "run:work0>1x1"}, {0: {"work": [["9C", "*8r"], [cover], [], []]}}
    )  # uncovered, still a red 8
    jokers = {n for n in legal(env, 0) if n.startswith("joker_lake")}
    assert jokers == {"joker_lake:work0:D"}, f"a joker fixed as a red 8 must go on 7D only, got {jokers}"
    lake_after = [[*suit("D", 1, 7), ["*8D", 0]], *lake[1:]]
    t = play(env, {0: "joker_lake:work0:D"}, {0: {"work": [["9C"], [cover], [], []]}}, lake=lake_after)
    assert t.rewards == [1.0, 0.0]


def test_jokers__a_joker_played_on_a_card_stays_wild_and_reaches_the_lake_as_any_suit() -> None:
    seat0 = {"nertz": ["KS", "QD"], "waste": ["**"], "work": [["9C"]]}
    env = build({"num_players": 2, "jokers": 1}, {0: seat0}, [[["AH", 1], ["2H", 1]]])
    t = play(env, {0: "to_work:waste>0"}, {0: {"waste": [], "work": [["9C", "**"], [], [], []]}})
    seen = decode(t.obs[agent(0)]["observation"], env.config)
    assert seen["work"][0] == ["9C", "**"] and seen["work_exposed"][0] == "**"
    jokers = {n for n in legal(env, 0) if n.startswith("joker_lake")}
    assert jokers == {f"joker_lake:work0:{s}" for s in SUITS}, f"an uncovered joker is wild, got {jokers}"
    lake_after = [[["AH", 1], ["2H", 1], ["*3H", 0]]]
    t = play(
        env, {0: "joker_lake:work0:H"}, {0: {"work": [["9C"], [], [], []]}}, lake=lake_after
    )  # not a red 8
    assert t.rewards == [1.0, 0.0]


def test_jokers__a_wild_joker_on_a_card_takes_only_cards_that_fit_where_it_lies() -> None:
    seat0 = {"nertz": ["KS", "7H"], "waste": ["7C"], "work": [["9C", "**"], ["8D", "7S"], ["**"]]}
    env = build({"num_players": 2, "jokers": 2}, {0: seat0})
    moves = legal(env, 0)
    assert {"to_work:waste>0", "run:work1>0x1"} <= moves, "a black 7 fits a joker lying on the 9C"
    assert "to_work:nertz>0" not in moves, "a red 7 cannot cover a joker that stands for a red 8"
    assert "run:work1>0x2" not in moves, "the 8D cannot cover a joker that stands for a red 8"
    assert {"to_work:nertz>2", "run:work1>2x2"} <= moves, "a lone joker still takes any card below a king"
    assert "run:work0>2x1" not in moves, "a joker cannot go on a joker alone on its pile"


def test_jokers__a_wild_joker_moved_alone_to_another_pile_stays_wild() -> None:
    seat0 = {"nertz": ["KS", "3D"], "work": [["9C", "**"], ["5H"], ["AS"], ["TD"]]}
    env = build({"num_players": 2, "jokers": 1}, {0: seat0}, [[["AH", 1], ["2H", 1]]])
    moves = legal(env, 0)
    assert "run:work0>1x1" in moves, "an uncovered joker moves alone onto any card above an ace"
    assert "run:work0>2x1" not in moves, "nothing is lower than an ace"
    assert "run:work0>3x2" in moves and "run:work0>1x2" not in moves, "the 9C takes its joker along"
    play(env, {0: "run:work0>1x1"}, {0: {"work": [["9C"], ["5H", "**"], ["AS"], ["TD"]]}})
    moves = legal(env, 0)
    assert {f"joker_lake:work1:{s}" for s in SUITS} <= moves, "the moved joker is still wild"
    assert "to_work:nertz>1" in moves, "on the 5H the joker stands for a black 4, which takes the 3D"
    play(
        env,
        {0: "to_work:nertz>1"},
        {0: {"nertz": ["KS"], "work": [["9C"], ["5H", "*4b", "3D"], ["AS"], ["TD"]]}},
    )


def test_jokers__a_wild_joker_tucked_over_a_card_stays_wild() -> None:
    seat0 = {"nertz": ["KS", "5H"], "work": [["**"], ["9C"]]}
    env = build({"num_players": 2, "jokers": 1, "allow_tuck": True}, {0: seat0})
    assert "tuck:nertz>0" in legal(env, 0)
    play(env, {0: "tuck:nertz>0"}, {0: {"nertz": ["KS"], "work": [["5H", "**"], ["9C"], [], []]}})
    assert {f"joker_lake:work0:{s}" for s in SUITS} <= legal(env, 0)


@pytest.mark.parametrize(
    ("pile", "message"),
    [
        (["9C", "**", "7S"], r"snapshot\.players\[0\]\.work\[0\]\[1\]: a covered joker has a value"),
        (["**", "**"], r"snapshot\.players\[0\]\.work\[0\]\[0\]: a covered joker has a value"),
        (["AH", "**"], r"snapshot\.players\[0\]\.work\[0\]\[1\]: a joker cannot lie on AH"),
    ],
)
def test_jokers__a_snapshot_with_a_joker_covered_or_on_an_ace_is_refused(pile: list, message: str) -> None:
    with pytest.raises(SnapshotError, match=message):
        build({"num_players": 2, "jokers": 2}, {0: {"work": [pile]}})


def test_jokers__a_card_on_a_lone_joker_fixes_it() -> None:
    env = build({"num_players": 2, "jokers": 2}, {0: {"nertz": ["KS", "7C"], "work": [["**"], ["**"]]}})
    assert {"to_work:nertz>0", "to_work:nertz>1"} <= legal(env, 0)
    play(env, {0: "to_work:nertz>0"}, {0: {"nertz": ["KS"], "work": [["*8r", "7C"], ["**"], [], []]}})


# ---------------------------------------------------------------------------------------------- lake races
def race(n: int, seed: int = 0, lake: list | None = None, card: str = "2C") -> nertz_env.NertzParallelEnv:
    """Every seat's Nertz top is ``card`` and the lake holds one AC (or ``lake``): ``n`` plays for one slot."""
    seats = {p: {"nertz": ["KS", card]} for p in range(n)}
    return build({"num_players": n}, seats, [[["AC", 0]]] if lake is None else lake, seed=seed)


def race_winner(t: Tick) -> int:
    winners = [p for p, i in enumerate(t.infos) if not i["lost_race"]]
    assert len(winners) == 1, f"exactly one seat should win the slot, got {winners}"
    return winners[0]


def seeded_batch(snap: dict[str, Any], tables: int, seed: int, **rules: Any) -> nertz_env.NertzVectorEnv:
    """``tables`` copies of ``snap``, table t with the generator of a deal seeded with ``seed + t``."""
    venv = nertz_env.vector_env(tables, **rules)
    venv.reset(seed=seed)
    for t in range(tables):
        venv.restore(t, {**snap, "rng": venv.snapshot(t)["rng"]})
    return venv


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("seed", [0, 1])
def test_race__exactly_one_card_lands_and_the_losers_are_flagged(n: int, seed: int) -> None:
    env = race(n, seed)
    before = env.snapshot()
    assert all("lake:nertz" in legal(env, p) for p in range(n))
    t = play(env, dict.fromkeys(range(n), "lake:nertz"))
    w = race_winner(t)
    assert_table(env, before, {w: {"nertz": ["KS"]}}, lake=[[["AC", 0], ["2C", w]]])
    lake_nertz = env.actions.lookup("lake:nertz")
    for p, info in enumerate(t.infos):
        assert info["illegal"] is False, f"seat {p}: a legal play that lost the race is not illegal"
        assert info["lost_race"] is (p != w) and info["action"] == lake_nertz
        assert t.rewards[p] == (1.0 if p == w else 0.0)
        if p != w:
            assert "lake:nertz" not in legal(env, p), f"seat {p}: 2C still playable after the 2C landed"
    assert not any(t.terminations)


def test_race__losers_cards_stay_in_every_kind_of_source() -> None:
    seats = {0: {"waste": ["2C"]}, 1: {"work": [["3H", "2C"]]}, 2: {"nertz": ["KS", "2C"]}}
    env = build({"num_players": 3}, seats, [[["AC", 1]]])
    before = env.snapshot()
    t = play(env, {0: "lake:waste", 1: "lake:work0", 2: "lake:nertz"})
    w = race_winner(t)
    popped = {
        0: {"waste": before["players"][0]["waste"][:-1]},
        1: {"work": [["3H"], [], [], []]},
        2: {"nertz": ["KS"]},
    }
    assert_table(env, before, {w: popped[w]}, lake=[[["AC", 1], ["2C", w]]])
    assert [i["lost_race"] for i in t.infos] == [p != w for p in range(3)]


def test_race__two_slots_take_two_cards_and_the_third_is_flagged() -> None:
    env = race(3, lake=[[["AC", 0]], [["AC", 1]]])
    before = env.snapshot()
    t = play(env, dict.fromkeys(range(3), "lake:nertz"))
    lost = [p for p, i in enumerate(t.infos) if i["lost_race"]]
    assert len(lost) == 1 and not any(i["illegal"] for i in t.infos)
    landed = [p for p in range(3) if p not in lost]
    lake = env.snapshot()["lake"]
    assert sorted(f[1][1] for f in lake) == landed and [f[0] for f in lake] == [["AC", 0], ["AC", 1]]
    assert_table(env, before, {p: {"nertz": ["KS"]} for p in landed}, lake=lake)


def test_race__separate_slots_do_not_collide_and_aces_never_do() -> None:
    seats = {p: {"nertz": ["KS", "2C" if p < 2 else "2D"]} for p in range(4)}
    env = build({"num_players": 4}, seats, [[["AC", 3]], [["AD", 0]]])
    t = play(env, dict.fromkeys(range(4), "lake:nertz"))
    lost = [i["lost_race"] for i in t.infos]
    assert lost[0] != lost[1] and lost[2] != lost[3], f"one 2C and one 2D should land, lost_race = {lost}"
    clubs, diamonds = (0 if not lost[0] else 1), (2 if not lost[2] else 3)
    assert env.snapshot()["lake"] == [[["AC", 3], ["2C", clubs]], [["AD", 0], ["2D", diamonds]]]
    aces = race(4, lake=[], card="AC")
    t = play(aces, dict.fromkeys(range(4), "lake:nertz"))
    assert not any(i["lost_race"] or i["illegal"] for i in t.infos) and t.rewards == [1.0] * 4
    assert sorted(aces.snapshot()["lake"]) == [[["AC", p]] for p in range(4)]


@pytest.mark.parametrize("seed", range(4))
def test_race__a_play_made_possible_only_by_an_earlier_action_of_the_tick_is_illegal(seed: int) -> None:
    """Legality is that of the mask shown at the tick's start: 3C cannot follow a 2C landing in the same tick."""
    seats = {0: {"nertz": ["KS", "2C"]}, 1: {"nertz": ["KS", "3C"]}}
    env = build({"num_players": 2}, seats, [[["AC", 1]]], seed=seed)
    assert "lake:nertz" not in legal(env, 1)
    t = play(env, {0: "lake:nertz", 1: "lake:nertz"}, {0: {"nertz": ["KS"]}}, lake=[[["AC", 1], ["2C", 0]]])
    assert t.infos[1]["illegal"] and not t.infos[1]["lost_race"] and t.infos[1]["action"] == 0
    assert t.rewards == [1.0, 0.0]


def test_restore__keeps_the_snapshots_generator_whatever_the_reset_seed() -> None:
    """``reset(seed=s, options={"snapshot": snap})`` restores snap's generator: the same seat wins every time.
    To vary the tick order, the fairness test puts the generator of a deal seeded with s in the snapshot."""
    env = race(4, seed=0)
    snap = env.snapshot()
    winners = set()
    for s in range(6):
        env.reset(seed=100 + s, options={"snapshot": snap})
        winners.add(race_winner(play(env, dict.fromkeys(range(4), "lake:nertz"))))
    assert len(winners) == 1


@pytest.mark.parametrize("n", [2, 4])
def test_race_fairness__every_seat_wins_its_share_over_2000_seeds(n: int) -> None:
    tables = 2000
    venv = seeded_batch(race(n).snapshot(), tables, 50_000, num_players=n)
    actions = np.full((tables, n), venv.actions.lookup("lake:nertz"), dtype=np.int64)
    _, rewards, terms, truncs, infos = venv.step(actions)
    lost = infos["lost_race"]
    assert not infos["illegal"].any() and not terms.any() and not truncs.any()
    assert (lost.sum(axis=1) == n - 1).all(), "some table did not have exactly one winner"
    np.testing.assert_array_equal(rewards, (~lost).astype(np.float32))
    counts = np.bincount(np.argmin(lost, axis=1), minlength=n)
    shares = counts / tables
    assert np.abs(shares - 1 / n).max() <= 0.03, f"win shares per seat {shares.round(3)}, fair is {1 / n:.3f}"
    assert_uniform(counts, f"win counts {counts.tolist()}", p_min=0.001)


# ---------------------------------------------------------------------------------------------- statistics
P_MIN = 1e-6  # every uniformity test: the correct code passes with p far above this, the mutants far below


def assert_uniform(counts: np.ndarray, what: str, df: int | None = None, p_min: float = P_MIN) -> None:
    """``counts`` fit equal cell probabilities (``df``: cells - 1 unless given), with p > ``p_min``."""
    stats = pytest.importorskip("scipy.stats", reason="needs the eval extra (scipy)")
    df = counts.size - 1 if df is None else df
    stat, p = stats.chisquare(counts.ravel(), ddof=counts.size - 1 - df)
    assert p > p_min, f"{what}: chi-square {stat:.1f} on {df} degrees of freedom, p = {p:.3g} (not uniform)"


def assert_every_order_uniform(perms: np.ndarray, what: str) -> None:
    """The rows of ``perms`` (samples x n) fit the uniform law over all n! permutations, each seen."""
    _, counts = np.unique(perms, axis=0, return_counts=True)
    assert len(counts) == math.factorial(perms.shape[1]), f"some orders never came up: {counts.tolist()}"
    assert_uniform(counts, what)


def position_table(perms: np.ndarray) -> np.ndarray:
    """The item-by-position counts of ``perms`` (samples x n, each row a permutation of 0..n-1): against equal
    positions it has (n - 1)^2 degrees of freedom (its rows and columns sum to the samples)."""
    samples, n = perms.shape
    table = np.zeros((n, n), dtype=np.int64)
    np.add.at(table, (perms.ravel(), np.tile(np.arange(n), samples)), 1)
    return table


# ---------------------------------------------------------------------------------------------- redeals
USED_REDEALS = {
    0: {"nertz": ["2D"], "redeals": 1},
    1: {"redeals": 1},
}  # seat 0's last card, 2D, goes on the AD


def test_max_redeals__counts_afresh_in_the_next_round() -> None:
    env = build({"num_players": 2, "max_redeals": 1, "rounds": 2}, USED_REDEALS, [[["AD", 1]]])
    assert [pl["redeals"] for pl in env.snapshot()["players"]] == [1, 1]
    t = play(env, {0: "lake:nertz"})
    assert not any(t.terminations) and [round_end_name(i) for i in t.infos] == ["nertz"] * 2
    snap = env.snapshot()
    assert snap["round"] == 1
    assert [pl["redeals"] for pl in snap["players"]] == [0, 0], "the new deal kept the last round's redeals"
    for p in range(2):
        status = decode(t.obs[agent(p)]["observation"], env.config)["status"]
        assert status["redeals_left"] == 1.0, f"seat {p}: {status}"
    # seat 0 turns its whole stock (35 cards, 3 at a time), may turn the waste over once more, then no more
    stock = len(snap["players"][0]["stock"])
    for _ in range(math.ceil(stock / 3)):
        play(env, {0: "flip"})
    assert env.snapshot()["players"][0]["stock"] == []
    assert "flip" in legal(env, 0), "the round's one redeal is not available in the new round"
    play(env, {0: "flip"})
    assert env.snapshot()["players"][0]["redeals"] == 1
    for _ in range(math.ceil(stock / 3)):
        play(env, {0: "flip"})
    assert "flip" not in legal(env, 0), "max_redeals=1 allowed a second redeal in one round"


def test_max_redeals__counts_afresh_in_the_next_episode_and_after_a_vector_autoreset() -> None:
    rules = {"num_players": 2, "max_redeals": 1}
    env = build(rules, USED_REDEALS, [[["AD", 1]]])
    snap = env.snapshot()
    play(env, {0: "lake:nertz"})
    assert env.agents == []
    obs, _ = env.reset(seed=11)
    assert [pl["redeals"] for pl in env.snapshot()["players"]] == [0, 0]
    assert decode(obs[agent(1)]["observation"], env.config)["status"]["redeals_left"] == 1.0
    # and straight after a restore with the redeals used up (no round played in between)
    env.reset(options={"snapshot": snap})
    env.reset(seed=12)
    assert [pl["redeals"] for pl in env.snapshot()["players"]] == [0, 0]
    venv = nertz_env.vector_env(2, **rules)
    venv.reset(seed=3, options={"snapshots": {0: snap, 1: snap}})
    acts = np.zeros((2, 2), dtype=np.int64)
    acts[:, 0] = venv.actions.lookup("lake:nertz")
    assert venv.step(acts)[2].all()
    venv.step(np.zeros((2, 2), dtype=np.int64))  # the next-step autoreset deals a new episode
    assert (venv._state.redeals == 0).all()


# ---------------------------------------------------------------------------------------------- the deal shuffle
def deal_permutations(venv: nertz_env.NertzVectorEnv) -> np.ndarray:
    """Each deck of a fresh batch in deal order (Nertz pile, work piles, stock): the shuffle's permutation."""
    state = venv._state
    cfg = venv.config
    ns, w = cfg.nertz_size, cfg.work_piles
    nertz = state.nertz[:, :, :ns]
    work = state.work[:, :, :, 0]
    stock = state.stock[:, :, : 52 - ns - w]
    decks = np.concatenate([nertz, work, stock], axis=2).astype(np.int64)
    return decks.reshape(-1, 52)


def test_deal_shuffle__every_card_is_equally_likely_at_every_deck_position() -> None:
    """2,000 decks: the card-by-position table is uniform (Sattolo's shuffle leaves its diagonal empty)."""
    venv = nertz_env.vector_env(500, num_players=4)
    venv.reset(seed=20_251)
    perms = deal_permutations(venv)
    assert perms.shape == (2000, 52)
    assert (np.sort(perms, axis=1) == np.arange(52)).all(), "a deal is not one whole deck"
    assert len({tuple(r) for r in perms.tolist()}) == len(perms), "two decks (one table or two) are equal"
    table = position_table(perms)
    assert_uniform(table, "card-by-position table of 2,000 deals", df=51**2)
    # the count of cards dealt where they lay before the shuffle: n * 1/n = 1 per deck on average
    fixed = int(np.trace(table))
    assert 2000 - 5 * 45 < fixed < 2000 + 5 * 45, (
        f"{fixed} fixed points in 2,000 decks (expected about 2,000)"
    )


# ---------------------------------------------------------------------------------------------- the recycle shuffle
def recycle_permutations(tables: int, cycles: int, seed: int) -> np.ndarray:
    """The permutations ``recycle="shuffle"`` applies to a 4-card waste (spades only, no stock), a row each:
    every seat flips every tick, a recycle then two flips that refill the waste, ``cycles`` times."""
    nertz, work = SPADES_ONLY
    nertz = [*nertz, "7S", "6S", "5S"]  # (a Nertz pile needs no order); 4 cards left for the waste
    waste = ["AS", "2S", "3S", "4S"]
    seats = {p: {"nertz": nertz, "work": work, "waste": waste, "filler": None} for p in range(4)}
    lake = [suit(s, p) for p in range(4) for s in "CDH"]
    rules_: dict[str, Any] = {"num_players": 4, "recycle": "shuffle", "stall_ticks": 1000, "max_ticks": 1000}
    venv = seeded_batch(build(rules_, seats, lake).snapshot(), tables, seed, **rules_)
    state = venv._state
    flip = np.ones((tables, 4), dtype=np.int64)
    out = []
    for _ in range(cycles):
        assert (state.stock_len == 0).all() and (state.waste_len == 4).all()
        plain = state.waste[:, :, 3::-1].astype(np.int64)  # the stock an unshuffled redeal makes, bottom to top
        _, _, term, trunc, info = venv.step(flip)
        assert not info["illegal"].any() and not term.any() and not trunc.any()
        assert (state.redeals > 0).all() and (state.stock_len == 4).all()
        got = state.stock[:, :, :4].astype(np.int64)
        # position in `plain` of each card of `got`
        pos = np.argmax(got[..., :, None] == plain[..., None, :], axis=-1)
        assert (np.sort(pos, axis=-1) == np.arange(4)).all(), "the redeal is not the waste's cards"
        out.append(pos.reshape(-1, 4))
        venv.step(flip)
        venv.step(flip)
    return np.concatenate(out)


def test_recycle_shuffle__every_order_of_the_redealt_cards_is_equally_likely() -> None:
    """2,400 redeals' permutations (not the orders, which a biased walk visits evenly too) against all 24."""
    perms = recycle_permutations(tables=50, cycles=12, seed=31_337)
    assert perms.shape == (2400, 4)
    assert_every_order_uniform(perms, "orders of 2,400 shuffled redeals")
    assert_uniform(position_table(perms), "card-by-position table of 2,400 shuffled redeals", df=9)


# ---------------------------------------------------------------------------------------------- the seat order
def seat_orders(num_players: int, tables: int, ticks: int, seed: int) -> np.ndarray:
    """``TableState.order`` (the seats in the order they acted) of ``ticks`` all-wait ticks, a row each."""
    venv = nertz_env.vector_env(tables, num_players=num_players, stall_ticks=1000, max_ticks=1000)
    venv.reset(seed=seed)
    waits = np.zeros((tables, num_players), dtype=np.int64)
    out = []
    for _ in range(ticks):
        _, _, term, trunc, _ = venv.step(waits)
        assert not term.any() and not trunc.any()
        out.append(venv._state.order.astype(np.int64).copy())
    return np.concatenate(out)


@pytest.mark.parametrize(
    ("n", "tables", "ticks"), [(2, 50, 20), (3, 50, 24), (4, 100, 24)], ids=["seats=2", "seats=3", "seats=4"]
)
def test_seat_order__every_order_of_the_seats_is_equally_likely(n: int, tables: int, ticks: int) -> None:
    """Every tick's order against the n! orders (rotations alone, fair to the first seat, reach 3 of 6)."""
    perms = seat_orders(n, tables, ticks, seed=4_242 + n)
    assert (np.sort(perms, axis=1) == np.arange(n)).all()
    assert_every_order_uniform(perms, f"orders of {len(perms)} ticks of {n} seats")


def test_seat_order__eight_seats_every_position_and_every_neighbour_pair_are_fair() -> None:
    """3,000 ticks: the seat-by-position table, and seat p before p + 1 half the time (rotations: 7/8)."""
    perms = seat_orders(8, tables=100, ticks=30, seed=808)
    where = np.argsort(perms, axis=1)  # row: each seat's position in the tick's order
    assert_uniform(position_table(where), "seat-by-position table of 3,000 ticks of 8 seats", df=7**2)
    before = (where < np.roll(where, -1, axis=1)).sum(axis=0)  # seat p acts before seat p + 1
    z = (before - len(perms) / 2) / math.sqrt(len(perms) / 4)  # each a binomial(3000, 1/2): sd 27.4
    assert np.abs(z).max() < 5, (
        f"seat p before seat p + 1 in {before.tolist()} of {len(perms)} ticks (z {z.round(1)})"
    )


def test_seat_order__is_drawn_afresh_every_tick() -> None:
    """Consecutive ticks of a table: the first seat of tick k and of tick k + 1 are independent."""
    perms = seat_orders(4, tables=100, ticks=24, seed=99).reshape(24, 100, 4)
    first = perms[:, :, 0]
    pairs = np.zeros((4, 4), dtype=np.int64)
    np.add.at(pairs, (first[:-1].ravel(), first[1:].ravel()), 1)
    assert_uniform(pairs, "first seats of consecutive ticks")


# ---------------------------------------------------------------------------------------------- sample_actions
def test_sample_actions__draws_every_legal_action_equally_often_and_never_an_illegal_one() -> None:
    """``rules.sample_block``: masks of 1, 2, 5 and 7 legal actions of 12, sampled 3,000 times each."""
    legal_sets = [[4], [0, 11], [1, 2, 3, 7, 9], [0, 2, 4, 5, 6, 8, 10]]
    mask = np.zeros((1, len(legal_sets), 12), dtype=np.int8)
    for p, acts in enumerate(legal_sets):
        mask[0, p, acts] = 1
    gen = np.full(1, 2024, dtype=np.uint64)
    out = np.zeros((1, len(legal_sets)), dtype=np.int64)
    draws = np.zeros((3000, len(legal_sets)), dtype=np.int64)
    for i in range(3000):
        sample_block(mask, gen, out, 0, 1)
        draws[i] = out[0]
    for p, acts in enumerate(legal_sets):
        counts = np.bincount(draws[:, p], minlength=12)
        assert counts[[a for a in range(12) if a not in acts]].sum() == 0, (
            f"seat {p}: an illegal action drawn"
        )
        if len(acts) > 1:
            assert_uniform(counts[acts], f"seat {p}")


# ---------------------------------------------------------------------------------------------- the mutation list
def test_mutation_list__every_mutant_still_applies_to_the_source_exactly_once() -> None:
    """``bench/mutate.py`` edits the engine by exact snippets; when the engine's source changes under one, the
    mutant would silently test nothing. Each original snippet must occur exactly once, and each mutant must
    still be valid Python that differs from the source."""
    root = Path(__file__).resolve().parents[1]
    mutate = runpy.run_path(str(root / "bench" / "mutate.py"), run_name="_nertz_mutate")
    assert len(mutate["MUTANTS"]) >= 15
    assert len({m.name for m in mutate["MUTANTS"]}) == len(mutate["MUTANTS"]), "two mutants share a name"
    problems = mutate["check_mutants"](root)
    assert not problems, "\n".join(problems)
