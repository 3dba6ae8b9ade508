"""The batched adapters (``vector_env`` and the per-agent ``agent_vector_env``): the same rules as parallel_env,
Gymnasium's vector conventions, partial resets, rendering and bad input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import nertz_env
from nertz_env.engine import batch
from variants import VARIANTS, variant_id


@pytest.mark.parametrize("rules", VARIANTS, ids=variant_id)
def test_batch_table__equals_parallel_env_with_the_same_seed(rules: dict) -> None:
    """Table t of a batch seeded with s is parallel_env seeded with s + t, across autoresets."""
    tables, seed = 2, 100
    venv = nertz_env.vector_env(tables, **rules)
    envs = [nertz_env.parallel_env(**rules) for _ in range(tables)]
    vobs, _ = venv.reset(seed=seed)
    pobs = [e.reset(seed=seed + t)[0] for t, e in enumerate(envs)]
    agents = envs[0].possible_agents
    episodes = np.zeros(tables, dtype=int)
    after_reset = np.zeros(tables, dtype=int)  # steps checked since the first autoreset
    steps = 0
    while (after_reset < 10).any():
        steps += 1
        assert steps < 10_000, "tables did not finish an episode"
        actions = venv.sample_actions()
        for t in range(len(envs)):
            for p, a in enumerate(agents):
                np.testing.assert_array_equal(vobs["observation"][t, p], pobs[t][a]["observation"])
                np.testing.assert_array_equal(vobs["action_mask"][t, p], pobs[t][a]["action_mask"])
        vobs, vrew, vterm, vtrunc, vinfo = venv.step(actions)
        for t, e in enumerate(envs):
            after_reset[t] += episodes[t] > 0
            if vinfo["autoreset"][t]:
                pobs[t], _ = e.reset()
                assert not vrew[t].any()
                continue
            pobs[t], rew, term, trunc, info = e.step({a: int(actions[t, p]) for p, a in enumerate(agents)})
            for p, a in enumerate(agents):
                assert (rew[a], term[a], trunc[a]) == (vrew[t, p], vterm[t, p], vtrunc[t, p])
                assert info[a]["illegal"] == vinfo["illegal"][t, p]
                assert info[a]["lost_race"] == vinfo["lost_race"][t, p]
                if info[a]["round_end"]:
                    assert info[a]["score"] == vinfo["score"][t, p]
            episodes[t] += not e.agents


def test_batch__obeys_gymnasium_vector_shapes_and_dtypes() -> None:
    venv = nertz_env.vector_env(3, num_players=5)
    obs, _ = venv.reset(seed=0)
    assert venv.num_envs == 3  # (the infos: test_env.py checks them against the schema)
    assert obs["observation"].shape == (3, 5, venv.obs_layout.size) and obs["observation"].dtype == np.float32
    assert obs["action_mask"].shape == (3, 5, venv.actions.n) and obs["action_mask"].dtype == np.int8
    assert venv.observation_space.contains(obs) and venv.action_space.contains(venv.sample_actions())
    obs, rew, term, trunc, _ = venv.step(venv.sample_actions())
    assert rew.shape == term.shape == trunc.shape == (3, 5)
    assert rew.dtype == np.float32 and term.dtype == bool


def test_batch__seeds_per_table_copies_by_default_and_restores_per_table_snapshots() -> None:
    a, b = nertz_env.vector_env(3), nertz_env.vector_env(3)
    a.reset(seed=[7, 8, 9])
    b.reset(seed=7)
    assert all(a.snapshot(t) == b.snapshot(t) for t in range(3))
    obs, _ = a.reset(seed=1)
    kept = obs["observation"].copy()
    for _ in range(30):
        a.step(a.sample_actions())
    np.testing.assert_array_equal(obs["observation"], kept)
    snap = a.snapshot(1)
    b.reset(seed=0, options={"snapshots": {0: snap}})
    assert b.snapshot(0) == snap


def test_batch__out_of_range_actions_are_flagged_waits() -> None:
    venv = nertz_env.vector_env(2)
    venv.reset(seed=0)
    before = [venv.snapshot(t) for t in range(2)]
    _, _, _, _, info = venv.step(np.array([[-1, 9999, 0, 0], [0, 0, 0, 2**40]]))
    np.testing.assert_array_equal(info["illegal"], [[True, True, False, False], [False, False, False, True]])
    assert all(venv.snapshot(t)["players"] == before[t]["players"] for t in range(2))


def test_batch__zero_copy_outputs_are_read_only_views_of_the_engine() -> None:
    venv = nertz_env.vector_env(2, num_players=2, copy=False)
    obs, info = venv.reset(seed=0)
    outputs = [obs["observation"], obs["action_mask"], info["action_mask"], venv.sample_actions()]
    for a in outputs:
        with pytest.raises(ValueError, match="WRITEABLE"):
            a.flags.writeable = True  # not even on purpose: the engine reads legality from its mask
    with pytest.raises(ValueError, match="read-only"):
        obs["action_mask"][:] = 1
    before = obs["observation"].copy()
    venv.step(venv.sample_actions())
    assert not np.array_equal(obs["observation"], before), "still a view of the engine's buffer"


REFUSALS: list[tuple[Callable[[Any], Any], type, str]] = [
    (lambda v: v.step(np.zeros((2, 4), dtype=np.int64)), ValueError, "shape"),
    (lambda v: v.step(np.zeros((3, 4), dtype=np.float32)), ValueError, "integers"),
    (lambda v: v.reset(seed=[1, 2, 3, 4]), ValueError, "seed"),
    (lambda v: v.reset(seed=[1, 2, 2**64]), ValueError, "seed"),
    (lambda v: v.reset(seed=2**64 - 2), ValueError, "seed"),  # table 2 would get 2**64: seed 0's deal
    (lambda v: v.reset(seed=np.array(5)), ValueError, "seed"),
    (lambda v: v.reset(seed=0, options={"snapshots": [v.snapshot(1)]}), ValueError, r"options\['snapshots'\]"),
    (lambda v: v.reset(seed=0, options={"snapshots": None}), ValueError, r"options\['snapshots'\]"),
    (lambda v: v.reset(seed=0, options={"snapshots": {1.7: v.snapshot(1)}}), ValueError, r"options\['snapshots'\]"),
    (lambda v: v.reset(seed=0, options={"snapshots": {"x" * 10**5: {}}}), ValueError, r"options\['snapshots'\].{,200}$"),
    (lambda v: v.snapshot(5), ValueError, "table"),
    (lambda v: v.reset_tables([3]), ValueError, "table must be"),
    (lambda v: v.reset(options={"reset_mask": np.array([1, 0, 0])}), ValueError, "reset_mask"),
    (lambda v: nertz_env.vector_env(0), ValueError, "num_tables"),
    (lambda v: nertz_env.vector_env(2).step(np.zeros((2, 4), dtype=np.int64)), RuntimeError, "reset"),
]


@pytest.mark.parametrize(("call", "error", "match"), REFUSALS)
def test_batch__bad_input_is_refused_in_one_clear_line(call: Callable[[Any], Any], error: type, match: str) -> None:
    venv = nertz_env.vector_env(3)
    venv.reset(seed=0)
    with pytest.raises(error, match=match):
        call(venv)


def test_reset_tables__deals_what_the_autoreset_would_deal() -> None:
    """reset_tables(t) now equals the deal the next-step autoreset gives t one call later."""
    a, b = nertz_env.vector_env(4, num_players=3), nertz_env.vector_env(4, num_players=3)
    a.reset(seed=11)
    b.reset(seed=11)
    a.reset_tables([1, 3])
    for t in (1, 3):  # make b's tables 1 and 3 end, then let the autoreset deal them
        snap = b.snapshot(t)
        snap["done"] = "terminated"
        b.restore(t, snap)
    b.step(np.zeros((4, 3), dtype=np.int64))
    for t in (1, 3):
        assert a.snapshot(t) == b.snapshot(t)
        for key in ("observation", "action_mask"):
            np.testing.assert_array_equal(a.observations()[key][t], b.observations()[key][t])


def test_reset_mask__deals_only_the_masked_tables() -> None:
    venv = nertz_env.vector_env(3)
    venv.reset(seed=0)
    for _ in range(5):
        venv.step(venv.sample_actions())
    before = [venv.snapshot(t) for t in range(3)]
    venv.reset(seed=10, options={"reset_mask": np.array([False, True, False])})
    fresh = nertz_env.vector_env(3)
    fresh.reset(seed=10)
    assert venv.snapshot(0) == before[0] and venv.snapshot(2) == before[2]
    assert venv.snapshot(1) == fresh.snapshot(1)  # table t of a seed-s reset is seeded with s + t


def test_batch__threaded_blocks_equal_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch split across threads (a block of tables a core) plays as one block on the calling thread."""
    tables = batch.PARALLEL_MIN_TABLES + 44

    def play(workers: int) -> list[np.ndarray]:
        monkeypatch.setattr(batch, "WORKERS", workers)
        assert len(batch._blocks(tables)) == workers
        venv = nertz_env.vector_env(tables)
        obs, _ = venv.reset(seed=11)
        out = []
        for _ in range(60):
            obs, rew, *_ = venv.step(venv.sample_actions())
            out += [obs["observation"].sum(axis=-1), obs["action_mask"], rew]
        return out

    for threaded, serial in zip(play(2), play(1), strict=True):
        np.testing.assert_array_equal(threaded, serial)


def test_batch__render_gives_one_text_per_table_or_the_chosen_ones(capsys: pytest.CaptureFixture[str]) -> None:
    venv = nertz_env.vector_env(3, render_mode="ansi")
    venv.reset(seed=0)
    frames = venv.render()
    assert isinstance(frames, tuple) and len(frames) == 3
    assert all(text == nertz_env.render.render_text(venv.snapshot(t)) for t, text in enumerate(frames))
    assert venv.render(tables=[2]) == (frames[2],)
    human = nertz_env.vector_env(2, render_mode="human")
    human.reset(seed=0)
    assert human.render() is None
    assert capsys.readouterr().out.count("player_3") == 2


def test_per_agent_view__flat_shapes_and_the_same_game_as_the_batch() -> None:
    envs = nertz_env.agent_vector_env(2, num_players=3)
    venv = nertz_env.vector_env(2, num_players=3)
    obs, _ = envs.reset(seed=4)
    venv.reset(seed=4)
    assert envs.num_envs == 6 and obs["observation"].shape == (6, venv.obs_layout.size)
    assert envs.observation_space.contains(obs)
    assert list(envs.env_table) == [0, 0, 0, 1, 1, 1] and list(envs.env_seat) == [0, 1, 2, 0, 1, 2]
    rng = np.random.default_rng(0)
    for _ in range(40):
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
        obs, rew, term, trunc, info = envs.step(acts)
        ref, rrew, rterm, rtrunc, rinfo = venv.step(acts.reshape(2, 3))
        assert rew.shape == term.shape == trunc.shape == (6,)
        np.testing.assert_array_equal(obs["observation"], ref["observation"].reshape(6, -1))
        for got, want in ((rew, rrew), (term, rterm), (trunc, rtrunc)):
            np.testing.assert_array_equal(got, want.reshape(6))
        np.testing.assert_array_equal(info["round_end"], np.repeat(rinfo["round_end"], 3))
    with pytest.raises(ValueError, match="shape"):
        envs.step(np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="every seat of a table"):
        envs.reset(options={"reset_mask": np.array([True, False, False, False, False, False])})
