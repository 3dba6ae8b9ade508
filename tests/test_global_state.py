"""The global state (nertz_env.global_state): every card's position, hidden ones included, in every env
that offers ``state()``; it never reaches an observation."""

from __future__ import annotations

import numpy as np
import pytest

import nertz_env
from nertz_env.cards import JOKER, from_text
from nertz_env.global_state import state_layout

RULES = [{}, {"num_players": 2, "jokers": 2, "work_piles": 5}, {"num_players": 3, "jokers": 1, "draw": 1}]


def piles_from_state(state: np.ndarray, config: nertz_env.NertzConfig) -> list[dict[str, list[int]]]:
    """Per seat, each location's cards bottom to top (card indices of the deck), read back from the state."""
    layout = state_layout(config)
    cards = layout.cards(state)
    out = []
    for p in range(config.num_players):
        seat: dict[str, list[int]] = {}
        for k, loc in enumerate(layout.locations):
            here = np.flatnonzero(cards[p, :, k] == 1.0)
            depth = cards[p, here, -1]
            seat[loc] = [int(c) for c in here[np.argsort(-depth, kind="stable")]]
        out.append(seat)
    return out


def card_index(text: str) -> int:
    """A snapshot card's index in its deck, jokers as 52 (the two joker slots are interchangeable)."""
    return JOKER if text.startswith("*") else from_text(text)


@pytest.mark.parametrize("rules", RULES)
def test_state__holds_every_cards_exact_position(rules: dict) -> None:
    env = nertz_env.parallel_env(**rules)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(1)
    cfg = env.config
    assert env.state_space.shape == (state_layout(cfg).size,)
    for _ in range(120):
        state = env.state()
        assert state.dtype == np.float32 and env.state_space.contains(state)
        cards = state_layout(cfg).cards(state)
        np.testing.assert_array_equal(cards[..., :-1].sum(-1), 1.0)  # every card is somewhere, once
        snap = env.snapshot()
        got = piles_from_state(state, cfg)
        for p, pl in enumerate(snap["players"]):
            for loc in ("nertz", "stock", "waste"):
                want = [card_index(c) for c in pl[loc]]
                assert [min(c, 52) for c in got[p][loc]] == want, (p, loc)
            for j, pile in enumerate(pl["work"]):
                assert [min(c, 52) for c in got[p][f"work_{j}"]] == [card_index(c) for c in pile]
        lake_cards = sum(len(got[p]["lake"]) for p in range(cfg.num_players))
        assert lake_cards == sum(len(f) for f in snap["lake"])
        if not env.agents:
            break
        obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents})


def test_state__changes_with_hidden_cards_that_no_observation_shows() -> None:
    """Reordering hidden cards (a stock, a Nertz pile below its top, a waste below its top) changes the
    state and leaves every seat's observation and mask as they were."""
    env = nertz_env.parallel_env(draw=1)
    obs, _ = env.reset(seed=8)
    rng = np.random.default_rng(0)
    for _ in range(40):  # some cards in the wastes
        obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents})
    snap = env.snapshot()
    pl = snap["players"][1]
    assert len(pl["waste"]) > 2 and len(pl["stock"]) > 2 and len(pl["nertz"]) > 2
    pl["stock"] = pl["stock"][::-1]
    pl["nertz"] = pl["nertz"][:-1][::-1] + pl["nertz"][-1:]
    pl["waste"] = pl["waste"][:-1][::-1] + pl["waste"][-1:]
    other = nertz_env.parallel_env(draw=1)
    obs2, _ = other.reset(options={"snapshot": snap})
    for agent in obs:
        np.testing.assert_array_equal(obs[agent]["observation"], obs2[agent]["observation"])
        np.testing.assert_array_equal(obs[agent]["action_mask"], obs2[agent]["action_mask"])
    before, after = env.state(), other.state()
    assert not np.array_equal(before, after)
    layout = state_layout(env.config)
    changed = np.flatnonzero(before != after)
    cards = layout.slices["cards"]
    seat_width = env.config.deck_size * layout.card_width
    # only seat 1's cards moved, and only their depths (same piles)
    assert changed.min() >= cards.start + seat_width and changed.max() < cards.start + 2 * seat_width
    assert all((i - cards.start) % layout.card_width == layout.card_width - 1 for i in changed)


def test_batched_state__is_each_tables_parallel_env_state() -> None:
    venv = nertz_env.vector_env(3, num_players=3, jokers=1)
    envs = nertz_env.agent_vector_env(3, num_players=3, jokers=1)
    venv.reset(seed=5)
    envs.reset(seed=5)
    tables = [nertz_env.parallel_env(num_players=3, jokers=1) for _ in range(3)]
    for t, e in enumerate(tables):
        e.reset(seed=5 + t)
    for _ in range(30):
        acts = venv.sample_actions()
        venv.step(acts)
        envs.step(acts.reshape(-1))
        for t, e in enumerate(tables):
            if e.agents:
                e.step({a: int(acts[t, p]) for p, a in enumerate(e.possible_agents)})
    state = venv.state()
    assert state.shape == venv.state_space.shape == (3, state_layout(venv.config).size)
    assert venv.single_state_space.shape == state.shape[1:]
    np.testing.assert_array_equal(envs.state(), state)
    assert envs.state()[envs.env_table].shape == (9, state.shape[1])
    for t, e in enumerate(tables):
        np.testing.assert_array_equal(state[t], e.state())


def test_aec_env__passes_the_state_through() -> None:
    aec = nertz_env.env()
    aec.reset(seed=2)
    par = nertz_env.parallel_env()
    par.reset(seed=2)
    np.testing.assert_array_equal(aec.state(), par.state())
    assert aec.state_space == par.state_space
