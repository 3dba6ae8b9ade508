"""Rules a mutation trial of the engine found unpinned, each with a direct test, and a uniformity test for every
random draw of the engine.

A mutation trial (single small edits to ``nertz_env/engine/rules.py``, each run against the suite; the
script is ``bench/mutate.py``) found edits that no test noticed, or that only a distant test noticed: the call
bonus decided over every seat instead of the seats that emptied their piles; a ``recycle="shuffle"`` redeal that
never leaves a card in place (Sattolo's algorithm instead of Fisher-Yates); a new deal that keeps the redeal
count; a run of several cards onto an empty work pile; a seat order limited to rotations. Each has a direct
test here.

Every random draw of the engine gets a statistical test with fixed seeds: the deal shuffle (card-by-position
frequencies), the recycle shuffle and the per-tick seat order (chi-square over all permutations of a small
size, so a shuffle that reaches only some permutations fails by hundreds of standard deviations), and the
uniform legal action of ``sample_actions``. Each threshold is p > 1e-6: the correct code passes with a wide
margin (the p-values are in the comments) and the biased variants above fail by far (their chi-square values
are in the comments too; ``bench/mutate.py`` runs them).
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nertz_env
from nertz_env.engine import rules
from nertz_env.infos import round_end_name, score_of
from nertz_env.observation import decode
from test_rules import SPADES_ONLY, agent, assert_table, build, chi2_sf, legal, play, suit

P_MIN = 1e-6  # every uniformity test: the correct code passes with p far above this, the mutants far below


def wilson_hilferty(x: float, df: int) -> float:
    """P(chi-square with ``df`` degrees of freedom >= x) by the Wilson-Hilferty normal approximation."""
    z = ((x / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


def chi2_p(x: float, df: int) -> float:
    """P(chi-square with ``df`` degrees of freedom >= x): exact up to 100 degrees of freedom, then
    Wilson-Hilferty (the exact sum overflows floats for thousands of degrees of freedom)."""
    return chi2_sf(x, df) if df <= 100 else wilson_hilferty(x, df)


def test_chi2_p__the_approximation_agrees_with_the_exact_tail_where_both_apply() -> None:
    for df in (60, 100):
        for x in (df * 0.8, df, df * 1.3, df * 1.6):
            assert wilson_hilferty(x, df) == pytest.approx(chi2_sf(x, df), rel=0.05, abs=1e-6), (df, x)
    assert chi2_p(2601.0, 2601) == pytest.approx(0.5, abs=0.01)
    assert (
        chi2_p(2601.0 + 6 * math.sqrt(2 * 2601), 2601) < 1e-6 < chi2_p(2601.0 + 4 * math.sqrt(2 * 2601), 2601)
    )


def permutation_chi2(perms: np.ndarray) -> tuple[float, int, np.ndarray]:
    """Chi-square of the rows of ``perms`` (samples x n) against the uniform law over all n! permutations;
    returns the statistic, the degrees of freedom and the counts per permutation (lexicographic order)."""
    n = perms.shape[1]
    index = {p: i for i, p in enumerate(itertools.permutations(range(n)))}
    counts = np.zeros(len(index), dtype=np.int64)
    for row in perms:
        counts[index[tuple(int(v) for v in row)]] += 1
    expected = len(perms) / len(index)
    return float(((counts - expected) ** 2 / expected).sum()), len(index) - 1, counts


def position_chi2(perms: np.ndarray) -> tuple[float, int, np.ndarray]:
    """Chi-square of the item-by-position table of the rows of ``perms`` (samples x n, each row a permutation
    of 0..n-1) against n equally likely positions per item; (n - 1)^2 degrees of freedom (every row and every
    column of the table sums to the number of samples)."""
    samples, n = perms.shape
    table = np.zeros((n, n), dtype=np.int64)
    np.add.at(table, (perms.ravel(), np.tile(np.arange(n), samples)), 1)
    expected = samples / n
    return float(((table - expected) ** 2 / expected).sum()), (n - 1) ** 2, table


def assert_uniform(stat: float, df: int, what: str) -> float:
    p = chi2_p(stat, df)
    assert p > P_MIN, f"{what}: chi-square {stat:.1f} on {df} degrees of freedom, p = {p:.3g} (not uniform)"
    return p


# ---------------------------------------------------------------------------------------------- call bonus
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
    the bonus; still tied, both do." The comparison is among those players: a seat that did not go out has no
    claim, however many lake cards it has (here seat 2, with AC..5C and the aces the others build on)."""
    env = build({"num_players": 3, "call_bonus": 10}, seats, [*SEAT2_LAKE, hearts])
    t = play(env, {p: "lake:nertz" for p in seats})
    assert t.terminations == [True] * 3
    score = [score_of(i) for i in t.infos]
    assert score[2]["lake"] >= 7 and max(s["lake"] for s in score[:2]) <= 2, score
    assert [s["nertz_left"] == 0 for s in score] == [p in seats for p in range(3)]
    assert [s["bonus"] for s in score] == bonus
    assert [s["total"] for s in score] == [s["lake"] + s["bonus"] - 2 * s["nertz_left"] for s in score]


def test_call_bonus__in_manual_mode_goes_to_the_caller_even_with_fewer_lake_cards() -> None:
    rules_ = {"num_players": 2, "call_mode": "manual", "call_bonus": 10}
    env = build(rules_, {0: {"nertz": []}}, [suit("C", 1, 6), [["AD", 0]]])
    t = play(env, {0: "call"})
    assert t.terminations == [True, True]
    assert [i["score_lake"] for i in t.infos] == [1, 6]
    assert [i["score_bonus"] for i in t.infos] == [10, 0]


# ---------------------------------------------------------------------------------------------- redeals
def _used_redeal_layout() -> tuple[dict, list]:
    """Seat 0 about to play its last Nertz card (2D on the AD); both seats have used their one redeal."""
    return {0: {"nertz": ["2D"], "redeals": 1}, 1: {"redeals": 1}}, [[["AD", 1]]]


def test_max_redeals__counts_afresh_in_the_next_round() -> None:
    seats, lake = _used_redeal_layout()
    env = build({"num_players": 2, "max_redeals": 1, "rounds": 2}, seats, lake)
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


def test_max_redeals__counts_afresh_in_the_next_episode() -> None:
    seats, lake = _used_redeal_layout()
    env = build({"num_players": 2, "max_redeals": 1}, seats, lake)
    play(env, {0: "lake:nertz"})
    assert env.agents == []
    obs, _ = env.reset(seed=11)
    assert [pl["redeals"] for pl in env.snapshot()["players"]] == [0, 0]
    assert decode(obs[agent(1)]["observation"], env.config)["status"]["redeals_left"] == 1.0
    # and straight after a restore with the redeals used up (no round played in between)
    again = build({"num_players": 2, "max_redeals": 1}, seats, lake)
    again.reset(seed=12)
    assert [pl["redeals"] for pl in again.snapshot()["players"]] == [0, 0]


def test_max_redeals__counts_afresh_after_a_vector_autoreset() -> None:
    seats, lake = _used_redeal_layout()
    snap = build({"num_players": 2, "max_redeals": 1}, seats, lake).snapshot()
    venv = nertz_env.vector_env(2, num_players=2, max_redeals=1)
    venv.reset(seed=3, options={"snapshots": {0: snap, 1: snap}})
    acts = np.zeros((2, 2), dtype=np.int64)
    acts[:, 0] = venv.actions.lookup("lake:nertz")
    _, _, term, _, _ = venv.step(acts)
    assert term.all()
    venv.step(np.zeros((2, 2), dtype=np.int64))  # the next-step autoreset deals a new episode
    assert (venv._state.redeals == 0).all()


# ---------------------------------------------------------------------------------------------- runs
@pytest.mark.parametrize(
    ("move", "work_after"),
    [
        ("run:work0>1x3", [[], ["9C", "8H", "7S"], ["KD"], ["4C"]]),
        ("run:work0>1x2", [["9C"], ["8H", "7S"], ["KD"], ["4C"]]),
        ("run:work0>1x1", [["9C", "8H"], ["7S"], ["KD"], ["4C"]]),
    ],
)
def test_run__an_empty_pile_takes_a_run_of_any_length(move: str, work_after: list) -> None:
    """RULES.md: a work pile takes "an ordered run ... onto an empty pile (any card or run)"."""
    layout = {"nertz": ["KS", "KH"], "work": [["9C", "8H", "7S"], [], ["KD"], ["4C"]]}
    env = build({"num_players": 2}, {0: layout})
    before = env.snapshot()
    runs = {n for n in legal(env, 0) if n.startswith("run:")}
    assert runs == {
        "run:work0>1x1", "run:work0>1x2", "run:work0>1x3",  # every run of pile 0, the whole pile included
        "run:work2>1x1", "run:work3>1x1",  # the lone KD and 4C
    }, runs  # fmt: skip
    t = play(env, {0: move})
    assert not t.infos[0]["illegal"]
    assert_table(env, before, {0: {"work": work_after}})
    assert legal(env, 0) >= {"wait", "flip"}


def test_run__onto_an_empty_pile_waits_for_the_nertz_pile_when_that_rule_is_on() -> None:
    layout = {"nertz": ["KS", "KH"], "work": [["9C", "8H", "7S"], [], ["KD"], ["4C"]]}
    env = build({"num_players": 2, "empty_pile_from_nertz_first": True}, {0: layout})
    assert not {n for n in legal(env, 0) if n.startswith("run:")}
    empty = build(
        {"num_players": 2, "empty_pile_from_nertz_first": True, "call_mode": "manual"},
        {0: {**layout, "nertz": []}},
    )
    assert {"run:work0>1x2", "run:work0>1x3"} <= legal(empty, 0)


# ---------------------------------------------------------------------------------------------- the deal shuffle
def deal_permutations(venv: nertz_env.NertzVectorEnv) -> np.ndarray:
    """Every dealt deck of a freshly reset batch as the permutation the shuffle made: row = one deck, entry
    k = the card dealt at deck position k (Nertz pile, then one card per work pile, then the stock). The deal
    shuffles the ordered deck 0..51 (jokers: none here), so this is the shuffle's permutation itself."""
    S = venv._state
    cfg = venv.config
    ns, w = cfg.nertz_size, cfg.work_piles
    nertz = S.nertz[:, :, :ns]
    work = S.work[:, :, :, 0]
    stock = S.stock[:, :, : 52 - ns - w]
    decks = np.concatenate([nertz, work, stock], axis=2).astype(np.int64)
    return decks.reshape(-1, 52)


def test_deal_shuffle__every_card_is_equally_likely_at_every_deck_position() -> None:
    """2,000 decks (500 tables of 4): the 52 x 52 card-by-position table against 1/52 everywhere.

    Measured: chi-square 2575 on 2601 degrees of freedom (p = 0.64), 1,915 cards dealt where they lay. A
    shuffle that never leaves a card in place (Sattolo's algorithm: the swap index drawn below x instead of up
    to x) leaves the diagonal empty: chi-square 4,648 (p = 2e-118), no card where it lay."""
    venv = nertz_env.vector_env(500, num_players=4)
    venv.reset(seed=20_251)
    perms = deal_permutations(venv)
    assert perms.shape == (2000, 52)
    assert (np.sort(perms, axis=1) == np.arange(52)).all(), "a deal is not one whole deck"
    stat, df, table = position_chi2(perms)
    assert_uniform(stat, df, "card-by-position table of 2,000 deals")
    # the count of cards dealt where they lay before the shuffle: n * 1/n = 1 per deck on average
    fixed = int(np.trace(table))
    assert 2000 - 5 * 45 < fixed < 2000 + 5 * 45, (
        f"{fixed} fixed points in 2,000 decks (expected about 2,000)"
    )


def test_deal_shuffle__decks_of_the_same_table_and_of_neighbour_seeds_differ() -> None:
    venv = nertz_env.vector_env(64, num_players=8)
    venv.reset(seed=7)
    perms = deal_permutations(venv)
    assert len({tuple(r) for r in perms.tolist()}) == len(perms)


# ---------------------------------------------------------------------------------------------- the recycle shuffle
def recycle_permutations(tables: int, cycles: int, seed: int) -> np.ndarray:
    """Permutations made by ``recycle="shuffle"``: ``tables`` tables of 4 seats, each seat holding spades only
    (the other suits are in the lake) with a waste of 4 cards and no stock. Every seat flips on every tick: a
    recycle, then two flips (3 cards, then 1) that put the 4 cards back into the waste, ``cycles`` times.

    Row = one recycle; entry k = the position, in the stock an unshuffled redeal would make, of the card the
    shuffle put at stock position k: the permutation the shuffle applied."""
    nertz, work = SPADES_ONLY
    nertz = [*nertz, "7S", "6S", "5S"]  # (a Nertz pile needs no order); 4 cards left for the waste
    waste = ["AS", "2S", "3S", "4S"]
    seats = {p: {"nertz": nertz, "work": work, "waste": waste, "filler": None} for p in range(4)}
    lake = [suit(s, p) for p in range(4) for s in "CDH"]
    rules_: dict[str, Any] = {"num_players": 4, "recycle": "shuffle", "stall_ticks": 1000, "max_ticks": 1000}
    snap = build(rules_, seats, lake).snapshot()
    venv = nertz_env.vector_env(tables, **rules_)
    venv.reset(seed=seed)  # table t: the generator of a deal seeded with seed + t
    for t in range(tables):
        venv.restore(t, {**snap, "rng": venv.snapshot(t)["rng"]})
    S = venv._state
    flip = np.ones((tables, 4), dtype=np.int64)
    out = []
    for _ in range(cycles):
        assert (S.stock_len == 0).all() and (S.waste_len == 4).all()
        plain = S.waste[:, :, 3::-1].astype(np.int64)  # the stock an unshuffled redeal makes, bottom to top
        _, _, term, trunc, info = venv.step(flip)
        assert not info["illegal"].any() and not term.any() and not trunc.any()
        assert (S.redeals > 0).all() and (S.stock_len == 4).all()
        got = S.stock[:, :, :4].astype(np.int64)
        # position in `plain` of each card of `got`
        pos = np.argmax(got[..., :, None] == plain[..., None, :], axis=-1)
        assert (np.sort(pos, axis=-1) == np.arange(4)).all(), "the redeal is not the waste's cards"
        out.append(pos.reshape(-1, 4))
        venv.step(flip)
        venv.step(flip)
    return np.concatenate(out)


def test_recycle_shuffle__every_order_of_the_redealt_cards_is_equally_likely() -> None:
    """2,400 recycles of a 4-card waste (50 tables x 4 seats x 12 redeals) against the 24 orders.

    Measured: chi-square 26.5 on 23 degrees of freedom (p = 0.28); card by position p = 0.075. Sattolo's
    algorithm (no card stays in place) reaches only the 6 cyclic orders: chi-square 7,225 (p = 0 in floats).
    The test counts the permutation each redeal applies, not the orders the stock goes through: a walk of
    biased shuffles still visits every order evenly in the long run."""
    perms = recycle_permutations(tables=50, cycles=12, seed=31_337)
    assert perms.shape == (2400, 4)
    stat, df, counts = permutation_chi2(perms)
    assert (counts > 0).all(), f"some orders never came up: {counts.tolist()}"
    assert_uniform(stat, df, "orders of 2,400 shuffled redeals")
    stat, df, _ = position_chi2(perms)
    assert_uniform(stat, df, "card-by-position table of 2,400 shuffled redeals")


# ---------------------------------------------------------------------------------------------- the seat order
def seat_orders(num_players: int, tables: int, ticks: int, seed: int) -> np.ndarray:
    """The seat order (``TableState.order``: the seats in the order their actions were applied) of ``ticks``
    all-wait ticks on each of ``tables`` tables; one row per tick and table."""
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
    """Every tick's order against the n! orders (1,000 ticks for 2 seats, 1,200 for 3, 2,400 for 4).

    Measured p: 0.85, 0.90, 0.14. An order drawn among the n rotations of the seats only (every seat first
    equally often, so the race fairness test cannot tell) reaches 3 of the 6 orders of 3 seats (chi-square
    1,201) and 4 of the 24 of 4 seats (12,019); a Sattolo shuffle makes seat 1 act first on every tick of a
    2-seat table (chi-square 1,000)."""
    perms = seat_orders(n, tables, ticks, seed=4_242 + n)
    assert (np.sort(perms, axis=1) == np.arange(n)).all()
    stat, df, counts = permutation_chi2(perms)
    assert (counts > 0).all(), f"some orders never came up: {counts.tolist()}"
    assert_uniform(stat, df, f"orders of {len(perms)} ticks of {n} seats")


def test_seat_order__eight_seats_every_position_and_every_neighbour_pair_are_fair() -> None:
    """8 seats (40,320 orders: too many to count), 3,000 ticks: the seat-by-position table, and how often each
    seat acts before the next seat (p + 1 mod 8), which is 1/2 for a uniform order and 7/8 for rotations.

    Measured: positions p = 0.014, neighbours |z| at most 1.3. Rotations: positions p = 0.98 (a rotation puts
    every seat everywhere equally often), neighbours z = 40 to 42. Sattolo: positions chi-square 3,473."""
    perms = seat_orders(8, tables=100, ticks=30, seed=808)
    where = np.argsort(perms, axis=1)  # row: each seat's position in the tick's order
    stat, df, _ = position_chi2(where)
    assert_uniform(stat, df, "seat-by-position table of 3,000 ticks of 8 seats")
    before = (where < np.roll(where, -1, axis=1)).sum(axis=0)  # seat p acts before seat p + 1
    z = (before - len(perms) / 2) / math.sqrt(len(perms) / 4)  # each a binomial(3000, 1/2): sd 27.4
    assert np.abs(z).max() < 5, (
        f"seat p before seat p + 1 in {before.tolist()} of {len(perms)} ticks (z {z.round(1)})"
    )


def test_seat_order__is_drawn_afresh_every_tick() -> None:
    """Consecutive ticks of a table: the first seat of tick k and of tick k + 1 are independent (4 x 4 table;
    measured p = 0.97)."""
    perms = seat_orders(4, tables=100, ticks=24, seed=99).reshape(24, 100, 4)
    first = perms[:, :, 0]
    pairs = np.zeros((4, 4), dtype=np.int64)
    np.add.at(pairs, (first[:-1].ravel(), first[1:].ravel()), 1)
    expected = pairs.sum() / 16
    assert_uniform(float(((pairs - expected) ** 2 / expected).sum()), 15, "first seats of consecutive ticks")


# ---------------------------------------------------------------------------------------------- sample_actions
def test_sample_actions__draws_every_legal_action_equally_often_and_never_an_illegal_one() -> None:
    """The engine's other draw: one uniform legal action per seat (``rules.sample_block``, the agents' own
    generators). Masks with 1, 2, 5 and 7 legal actions scattered over 12, sampled 3,000 times each."""
    legal_sets = [[4], [0, 11], [1, 2, 3, 7, 9], [0, 2, 4, 5, 6, 8, 10]]
    mask = np.zeros((1, len(legal_sets), 12), dtype=np.int8)
    for p, acts in enumerate(legal_sets):
        mask[0, p, acts] = 1
    gen = np.zeros(1, dtype=np.uint64)
    rules.seed_table(gen, 0, 2024)
    out = np.zeros((1, len(legal_sets)), dtype=np.int64)
    draws = np.zeros((3000, len(legal_sets)), dtype=np.int64)
    for i in range(3000):
        rules.sample_block(mask, gen, out, 0, 1)
        draws[i] = out[0]
    for p, acts in enumerate(legal_sets):
        counts = np.bincount(draws[:, p], minlength=12)
        assert counts[[a for a in range(12) if a not in acts]].sum() == 0, (
            f"seat {p}: an illegal action drawn"
        )
        if len(acts) > 1:
            got = counts[acts]
            expected = 3000 / len(acts)
            assert_uniform(float(((got - expected) ** 2 / expected).sum()), len(acts) - 1, f"seat {p}")


# ---------------------------------------------------------------------------------------------- the mutation list
def test_mutation_list__every_mutant_still_applies_to_the_source_exactly_once() -> None:
    """``bench/mutate.py`` edits the engine by exact snippets; when the engine's source changes under one, the
    mutant would silently test nothing. Each original snippet must occur exactly once, and each mutant must
    still be valid Python that differs from the source."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("_nertz_mutate", root / "bench" / "mutate.py")
    assert spec is not None and spec.loader is not None
    mutate = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mutate  # (dataclasses look their module up there)
    try:
        spec.loader.exec_module(mutate)
    finally:
        del sys.modules[spec.name]
    assert len(mutate.MUTANTS) >= 15
    assert len({m.name for m in mutate.MUTANTS}) == len(mutate.MUTANTS), "two mutants share a name"
    problems = mutate.check_mutants(root)
    assert not problems, "\n".join(problems)
