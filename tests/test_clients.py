"""Third-party clients researchers plug environments into, each run on a small table and checked to step the
same game as the env itself: PettingZoo's conformance tests, SuperSuit's vector wrappers with worker processes,
Tianshou's PettingZooEnv, Gymnasium's vector wrappers over the per-agent view, SB3's SubprocVecEnv over the
single-agent view. Their packages are in the ``test`` extra (part of ``dev``); nothing here is skipped when one is missing, so an
install that lacks them fails loudly instead of passing quietly."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, render_test, seed_test

import nertz_env
from nertz_env.infos import round_end_name


def _legal(mask: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(np.asarray(mask))))


# ---------------------------------------------------------------- PettingZoo's own tests
def test_pettingzoo_parallel_api_test__passes() -> None:
    parallel_api_test(nertz_env.parallel_env(), num_cycles=400)


@pytest.mark.parametrize("rules", [{}, {"num_players": 2, "jokers": 1}, {"turn_based": True, "teams": True}])
def test_pettingzoo_api_test__passes_on_aec(rules: dict) -> None:
    api_test(nertz_env.env(**rules), num_cycles=300)


def test_pettingzoo_seed_test__aec_is_deterministic() -> None:
    seed_test(nertz_env.env, num_cycles=300)


def test_pettingzoo_max_cycles_test__passes_on_the_module() -> None:
    max_cycles_test(nertz_env)  # the module's parallel_env(max_cycles=4) and env(max_cycles=4)


def test_pettingzoo_render_test__every_render_mode() -> None:
    render_test(lambda render_mode=None: nertz_env.env(render_mode=render_mode, num_players=2))


# ---------------------------------------------------------------- SuperSuit
def test_supersuit_concat_vec_envs__worker_processes_step_the_same_games() -> None:
    """``pettingzoo_env_to_vec_env_v1`` + ``concat_vec_envs_v1(num_cpus=2)`` pickles the env into two worker
    processes; their games must equal two local parallel_envs seeded as SuperSuit seeds them (seed + i) and
    reset unseeded when an episode ends, as its Markov wrapper does."""
    import supersuit as ss
    rules = {"num_players": 2, "max_ticks": 12}
    vec = ss.pettingzoo_env_to_vec_env_v1(nertz_env.parallel_env(**rules))
    envs = ss.concat_vec_envs_v1(vec, 2, num_cpus=2, base_class="gymnasium")
    try:
        assert envs.num_envs == 4
        obs, _ = envs.reset(seed=3)
        refs = [nertz_env.parallel_env(**rules) for _ in range(2)]
        ref_obs = [r.reset(seed=3 + i)[0] for i, r in enumerate(refs)]
        rng = np.random.default_rng(0)
        ends = 0
        for _ in range(30):
            names = refs[0].possible_agents
            for i in range(2):
                for j, a in enumerate(names):
                    np.testing.assert_array_equal(obs["observation"][2 * i + j], ref_obs[i][a]["observation"])
                    np.testing.assert_array_equal(obs["action_mask"][2 * i + j], ref_obs[i][a]["action_mask"])
            acts = np.array([_legal(m, rng) for m in obs["action_mask"]])
            obs, rew, term, trunc, _ = envs.step(acts)
            for i, r in enumerate(refs):
                o, rr, tt, tr, _ = r.step({a: int(acts[2 * i + j]) for j, a in enumerate(names)})
                np.testing.assert_array_equal(rew[2 * i : 2 * i + 2], [rr[a] for a in names])
                np.testing.assert_array_equal(term[2 * i : 2 * i + 2], [tt[a] for a in names])
                np.testing.assert_array_equal(trunc[2 * i : 2 * i + 2], [tr[a] for a in names])
                if not r.agents:
                    ends += 1
                    o, _ = r.reset()  # unseeded: the table's own generator, in the worker and here alike
                ref_obs[i] = o
        assert ends >= 2
    finally:
        envs.close()


# ---------------------------------------------------------------- Tianshou
def test_tianshou_pettingzoo_env__plays_a_game_with_masks_and_sums_to_the_scores() -> None:
    from tianshou.env.pettingzoo_env import PettingZooEnv

    env = PettingZooEnv(nertz_env.env(num_players=3, max_ticks=40))
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    totals = np.zeros(3)
    for _ in range(3 * 40 + 3):
        assert obs["agent_id"] in env.agents and len(obs["mask"]) == env.action_space.n
        obs, rew, term, trunc, info = env.step(_legal(obs["mask"], rng))
        totals += rew
        if term or trunc:
            break
    assert trunc and round_end_name(info) == "max_ticks"
    infos = env.env.infos  # the AEC env's last infos: every seat's round score
    np.testing.assert_array_equal(totals, [infos[a]["score"] for a in env.agents])


# ---------------------------------------------------------------- Gymnasium's vector wrappers
def test_gymnasium_record_episode_statistics__returns_equal_the_recomputed_returns() -> None:
    """RecordEpisodeStatistics over the per-agent view: every finished episode's return equals the sum of the
    seat's rewards recomputed here and the seat's round score; its length is the table's ticks."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    envs = RecordEpisodeStatistics(nertz_env.agent_vector_env(3, num_players=2, max_ticks=60))
    obs, _ = envs.reset(seed=1)
    n = envs.num_envs
    ret, length = np.zeros(n), np.zeros(n, dtype=int)
    rng = np.random.default_rng(0)
    seen = 0
    prev_done = np.zeros(n, dtype=bool)
    for _ in range(200):
        obs, rew, term, trunc, info = envs.step(np.array([_legal(m, rng) for m in obs["action_mask"]]))
        ret[prev_done], length[prev_done] = 0.0, 0  # NEXT_STEP autoreset: this step dealt them anew
        assert not rew[prev_done].any() and info["autoreset"][prev_done].all()
        ret[~prev_done] += rew[~prev_done]
        length[~prev_done] += 1
        done = term | trunc
        if done.any():
            assert (info["_episode"] == done).all()
            np.testing.assert_allclose(info["episode"]["r"][done], ret[done], rtol=1e-6)
            np.testing.assert_allclose(info["episode"]["r"][done], info["score"][done], rtol=1e-6)
            np.testing.assert_array_equal(info["episode"]["l"][done], length[done])
            seen += int(done.sum())
        prev_done = done
    assert seen >= n  # every seat finished at least one episode
    assert len(envs.return_queue) == min(seen, 100)


def test_gymnasium_normalize_reward__divides_each_seats_reward_by_the_running_return_std() -> None:
    from gymnasium.wrappers.vector import NormalizeReward

    envs = NormalizeReward(nertz_env.agent_vector_env(2, num_players=2, max_ticks=40), gamma=0.9)
    twin = nertz_env.agent_vector_env(2, num_players=2, max_ticks=40)  # the raw rewards of the same game
    obs, _ = envs.reset(seed=2)
    twin.reset(seed=2)
    rng = np.random.default_rng(0)
    nonzero = 0
    for _ in range(120):
        acts = np.array([_legal(m, rng) for m in obs["action_mask"]])
        obs, rew, *_ = envs.step(acts)
        raw = twin.step(acts)[1]
        assert rew.shape == (4,) and np.isfinite(rew).all()
        np.testing.assert_allclose(rew, raw / np.sqrt(envs.return_rms.var + envs.epsilon), rtol=1e-5)
        nonzero += int((raw != 0).sum())
    assert nonzero > 0 and envs.return_rms.count > 100


# ---------------------------------------------------------------- Stable-Baselines3
def test_sb3_subproc_vec_env__ships_single_agent_envs_to_two_processes() -> None:
    """Env instances (not constructors) are shipped to the workers, as a runner that pickles an env does; the
    workers' games equal the same envs stepped locally, and MaskablePPO's masks come back through them."""
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from nertz_env.train import NertzSingleAgentEnv

    def make(seat: int) -> NertzSingleAgentEnv:
        env = NertzSingleAgentEnv(num_players=2, rules={"max_ticks": 15}, opponents=["greedy"], seat=seat)
        env.reset(seed=seat)  # mid-episode when shipped
        return env

    built = [make(0), make(1)]
    sub = SubprocVecEnv([lambda e=e: e for e in built], start_method="spawn")
    local = DummyVecEnv([lambda e=e: e for e in built])  # the very same objects, stepped here
    try:
        obs, ref = sub.reset(), local.reset()  # unseeded: each env's own generator, shipped with it
        rng = np.random.default_rng(0)
        dones_seen = 0
        for _ in range(40):
            np.testing.assert_array_equal(obs, ref)
            masks = get_action_masks(sub)
            np.testing.assert_array_equal(masks, get_action_masks(local))
            acts = np.array([_legal(m, rng) for m in masks])
            obs, rew, dones, _ = sub.step(acts)
            ref, rrew, rdones, _ = local.step(acts)
            np.testing.assert_array_equal(rew, rrew)
            np.testing.assert_array_equal(dones, rdones)
            dones_seen += int(dones.sum())
        assert dones_seen >= 2
    finally:
        sub.close()
