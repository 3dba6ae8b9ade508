"""Training (nertz_env.train): the single-agent view, the self-play VecEnv, the reward wrappers, the pool, the
privileged critic; the config and every flag of ``nertz-train``; runs, checkpoints and resumes (a resumed or
moved run equals the straight one); checkpoints evaluated and plotted. Ctrl-C: test_interrupt.py; imitation
and expert iteration: test_imitate.py; RLlib: test_rllib.py."""

from __future__ import annotations

import csv
import itertools
import json
import os
import re
import shutil
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")

import torch
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.vec_env import VecCheckNan, VecMonitor

import nertz_env
import nertz_env.train.trainer as trainer_module
from conftest import one_line, run_main
from nertz_env.agents import AgentSpecError, make_agent
from nertz_env.agents.forward import NumpyActor
from nertz_env.agents.policy import load_policy, numpy_actor
from nertz_env.global_state import state_layout
from nertz_env.threads import usable_cpus
from nertz_env.train import (
    IncompatibleCheckpointError,
    NertzSingleAgentEnv,
    NertzVecEnv,
    OpponentPool,
    PotentialShaping,
    RelativeReward,
    TrainConfig,
    Trainer,
    evaluate,
    load_policy_agent,
    plot,
)
from nertz_env.train.checkpoint import run_dir_of
from nertz_env.train.cli import main as train_main
from nertz_env.train.config import ConfigError, options, read_config_file, shipped_configs
from nertz_env.train.evaluate import (
    EvalRow,
    append_csv,
    checkpoint_eval_path,
    evaluate_run,
    paired_with_start,
    read_per_deal,
    run_checkpoints,
)
from nertz_env.train.flags import _opponent, build_parser, config_from_args
from nertz_env.train.imitate import build_policy, load_for_fit
from nertz_env.train.meta import make_meta, read_meta, sidecar_path
from nertz_env.train.privileged import PrivilegedCriticPolicy
from nertz_env.train.trainer import save_policy, state_path
from test_rules import build

P = 4
LAYOUT = nertz_env.ObsLayout(nertz_env.make_config(num_players=P))
NERTZ_COUNT = LAYOUT.slices["nertz_count"].start
ACTIONS = nertz_env.action_table(nertz_env.make_config(num_players=P))
WAIT, LAKE_NERTZ = ACTIONS.lookup("wait"), ACTIONS.lookup("lake:nertz")
CONFIGS = os.path.join(os.path.dirname(__file__), "..", "train", "configs")
TINY = {"num_tables": 2, "n_steps": 16, "batch_size": 64, "n_epochs": 1, "net_arch": [16], "checkpoint_every": 0,
        "eval_deals": 0, "progress_bar": False, "tensorboard": False}


def _nertz_count(obs: np.ndarray) -> np.ndarray:
    return np.rint(obs[..., NERTZ_COUNT] * 13).astype(int)


def _random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of a (N, A) mask."""
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def _tiny(run_dir: str, **kw: Any) -> TrainConfig:
    base: dict[str, Any] = {**TINY, "total_timesteps": 128, "run_dir": run_dir, **kw}
    if base.get("mode") == "single":  # num_tables is a vector-mode option; a rollout is 16 x num_envs
        del base["num_tables"]
        base["batch_size"] = 32
    return TrainConfig.from_dict(base)


def _quiet(_: str) -> None:
    pass


def _policy_file(path: str, num_players: int, **rules: Any) -> str:
    """A policy file (as imitate writes it) for a table of ``num_players`` seats, without training."""
    config = nertz_env.make_config(num_players=num_players, **rules)
    return save_policy(*build_policy(config, [16]), path, make_meta(config, num_timesteps=0, mode="imitation"))


def _weights(path: str) -> dict[str, torch.Tensor]:
    return load_from_zip_file(path, device="cpu", load_data=False, print_system_info=False)[1]["policy"]


def _same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _assert_same_run(a: Trainer, b: Trainer) -> None:
    assert _same_weights(a.model.policy.state_dict(), b.model.policy.state_dict())
    oa, ob = a.model.policy.optimizer.state_dict()["state"], b.model.policy.optimizer.state_dict()["state"]
    assert all(torch.equal(oa[k]["exp_avg"], ob[k]["exp_avg"]) for k in oa)
    assert a.model.num_timesteps == b.model.num_timesteps
    assert np.array_equal(np.asarray(a.model._last_obs), np.asarray(b.model._last_obs))


# ---------------------------------------------------------------- the single-agent view
def test_single_agent_view__rewards_sum_to_the_learners_score_and_the_seat_rotates() -> None:
    env = NertzSingleAgentEnv(num_players=P, opponents=["greedy"])
    rng = np.random.default_rng(0)
    seats = []
    env.reset(seed=11)
    for _ in range(4):
        seats.append(env.seat)
        total, done, info = 0.0, False, dict[str, Any]()
        while not done:
            _, r, term, trunc, info = env.step(int(_random_legal(env.action_masks()[None], rng)[0]))
            total += r
            done = term or trunc
        assert info["seat"] == seats[-1]
        assert total == info["score"]  # the learner's reward, not another seat's
        env.reset()
    assert sorted(seats) == list(range(P))  # one episode at every seat


def test_single_agent_view__seeded_reset_fixes_seat_deal_and_opponents() -> None:
    a = NertzSingleAgentEnv(num_players=P, opponents={"random": 1.0, "greedy": 1.0})
    b = NertzSingleAgentEnv(num_players=P, opponents={"random": 1.0, "greedy": 1.0})
    oa, ia = a.reset(seed=42)
    ob, ib = b.reset(seed=42)
    assert np.array_equal(oa, ob) and np.array_equal(ia.pop("action_mask"), ib.pop("action_mask")) and ia == ib
    for _ in range(20):
        act = int(np.flatnonzero(a.action_masks())[0])
        ra, rb = a.step(act), b.step(act)
        assert np.array_equal(ra[0], rb[0]) and ra[1] == rb[1]


# ---------------------------------------------------------------- the self-play VecEnv
def _restore(env: NertzVecEnv, table: int, snap: dict) -> None:
    env.reset()
    env.venv.restore(table, snap)
    env._obs_full, env._mask_full = env.venv._state.obs, env.venv._state.mask
    env._gather()


def test_vec_env__only_the_seat_that_plays_is_rewarded_at_its_own_index() -> None:
    env = NertzVecEnv(num_tables=2, num_players=P)
    _restore(env, 1, build({"num_players": P}, {2: {"nertz": ["KS", "AH"]}}).snapshot())  # seat 2: an ace
    slot = 1 * P + 2  # in self-play, slot t * P + p is seat p of table t
    masks = get_action_masks(env)
    assert masks[slot, LAKE_NERTZ]
    actions = np.full(env.num_envs, WAIT)
    actions[slot] = LAKE_NERTZ
    before = env._gather()
    obs, rewards, dones, _ = env.step(actions)
    expected = np.zeros(env.num_envs, dtype=np.float32)
    expected[slot] = 1.0
    assert np.array_equal(rewards, expected)
    assert not dones.any()
    assert _nertz_count(obs[slot]) == _nertz_count(before[slot]) - 1  # the observation is the same seat's
    others = np.arange(env.num_envs) != slot
    assert np.array_equal(_nertz_count(obs[others]), _nertz_count(before[others]))


def test_vec_env__round_end_pairs_terminal_observations_and_penalties_by_seat() -> None:
    env = NertzVecEnv(num_tables=2, num_players=P)
    _restore(env, 1, build({"num_players": P}, {2: {"nertz": ["AH"]}}).snapshot())  # the others hold 2
    slot = 1 * P + 2
    actions = np.full(env.num_envs, WAIT)
    actions[slot] = LAKE_NERTZ
    obs, rewards, dones, infos = env.step(actions)
    table1 = np.arange(P, 2 * P)
    assert dones.tolist() == [False] * P + [True] * P  # the whole table, and only it
    assert rewards[slot] == 1.0  # one card to the lake, an empty Nertz pile
    for i in table1:
        info = infos[i]
        assert info["seat"] == i - P
        assert info["TimeLimit.truncated"] is False
        if i != slot:
            assert rewards[i] == -2 * 2  # 2 Nertz cards left, nothing in the lake
        assert info["round_score"] == rewards[i]
        terminal = info["terminal_observation"]
        assert _nertz_count(terminal) == (0 if i == slot else 2)
        assert _nertz_count(obs[i]) == 13  # same-step reset: the next deal's first observation
    assert all("terminal_observation" not in infos[i] for i in range(P))
    # the step after the round end is a real tick of the new deal, not an autoreset step
    obs2, _, dones2, _ = env.step(_random_legal(get_action_masks(env), np.random.default_rng(0)))
    tick = LAYOUT.slices["status"].start
    assert not dones2[table1].any() and np.all(obs2[table1, tick] > 0)


def test_vec_env__masks_reach_maskable_ppo_through_wrappers() -> None:
    env = VecCheckNan(VecMonitor(NertzVecEnv(num_tables=3, num_players=P, seed=1)), raise_exception=True)
    env.reset()
    assert is_masking_supported(env)
    masks = get_action_masks(env)
    base = env.unwrapped
    assert isinstance(base, NertzVecEnv)
    assert masks.shape == (3 * P, ACTIONS.n) and masks.dtype == bool
    assert np.array_equal(masks, base.venv._state.mask.reshape(3 * P, -1).astype(bool))
    rng = np.random.default_rng(1)
    ends = 0
    for _ in range(400):
        obs, _, dones, infos = env.step(_random_legal(get_action_masks(env), rng))
        assert obs.dtype == np.float32 and obs.min() >= 0 and obs.max() <= 1
        per_table = dones.reshape(3, P)
        assert np.all(per_table.all(axis=1) | ~per_table.any(axis=1))  # a table ends for all its seats
        assert all(("terminal_observation" in infos[i]) == bool(dones[i]) for i in range(len(dones)))
        ends += int(dones.sum())
    assert ends > 0


def test_vec_env__learners_rotate_and_opponents_fill_the_other_seats() -> None:
    env = NertzVecEnv(num_tables=2, num_players=P, learners_per_table=1, opponents=["greedy"], seed=3)
    assert env.num_envs == 2
    env.reset()
    rng = np.random.default_rng(2)
    seats: list[int] = [int(env._seat[0])]
    while len(seats) < 5:
        assert sorted(env._opponents[0]) == sorted(set(range(P)) - {int(env._seat[0])})
        _, _, dones, infos = env.step(_random_legal(get_action_masks(env), rng))
        if dones[0]:
            assert infos[0]["seat"] == seats[-1]
            seats.append(int(env._seat[0]))
    assert [(b - a) % P for a, b in itertools.pairwise(seats)] == [1, 1, 1, 1]


def test_vec_env__opponents_in_threads_play_exactly_as_in_one_thread() -> None:
    def play(threads: int) -> list[np.ndarray]:
        env = NertzVecEnv(num_tables=3, num_players=P, learners_per_table=1, opponents={"search": 1.0, "heuristic": 1.0},
                          seed=4, opponent_threads=threads)
        out = [env.reset()]
        rng = np.random.default_rng(6)
        for _ in range(60):  # past the end of the first rounds: new opponents are drawn on the same stream
            obs, rew, dones, _ = env.step(_random_legal(get_action_masks(env), rng))
            out += [obs, rew, dones]
        env.close()
        return out

    one, two = play(1), play(2)
    assert all(np.array_equal(a, b) for a, b in zip(one, two, strict=True))
    with pytest.raises(ValueError, match="opponent_threads"):
        NertzVecEnv(num_tables=1, num_players=P, learners_per_table=1, opponent_threads=0)


def test_shaping__shaped_return_differs_from_the_score_by_a_constant() -> None:
    base = VecMonitor(NertzVecEnv(num_tables=2, num_players=P, seed=5))
    env = PotentialShaping(base, nertz_env.make_config(num_players=P))
    env.reset()
    rng = np.random.default_rng(5)
    shaped = np.zeros(env.num_envs)
    checked = 0
    for _ in range(1500):
        _, rewards, dones, infos = env.step(_random_legal(get_action_masks(env), rng))
        shaped += rewards
        for i in np.flatnonzero(dones):
            assert shaped[i] - infos[i]["episode"]["r"] == pytest.approx(2 * 13)  # nertz_penalty * nertz_size
            shaped[i] = 0.0
            checked += 1
    assert checked >= P


def test_pool__draws_by_weight_and_refuses_an_unknown_agent_or_an_empty_pool() -> None:
    pool = OpponentPool({"random": 3.0, "greedy": 1.0}, snapshot_weight=0.0)
    rng = np.random.default_rng(0)
    draws = [pool.sample(rng).name for _ in range(4000)]
    assert 0.72 < draws.count("random") / len(draws) < 0.78
    with pytest.raises(ValueError, match="unknown agent"):
        OpponentPool({"no-such-bot": 1.0})
    with pytest.raises(ValueError, match="empty"):
        OpponentPool({"random": 0.0})


@pytest.mark.parametrize("teams", [False, True])
def test_relative_reward__a_rounds_return_is_the_score_minus_the_rivals_mean(teams: bool) -> None:
    rules = {"teams": teams}
    base = VecMonitor(NertzVecEnv(num_tables=2, num_players=P, rules=rules, seed=8))
    env = RelativeReward(base)
    env.reset()
    rng = np.random.default_rng(8)
    paid = np.zeros(env.num_envs)
    team = nertz_env.make_config(num_players=P, **rules).team_of
    checked = 0
    for _ in range(1500):
        _, rewards, dones, infos = env.step(_random_legal(get_action_masks(env), rng))
        paid += rewards
        for t in {i // P for i in np.flatnonzero(dones)}:
            # a seat's return: its score, or its team's with teams on (the monitor sees it unchanged)
            returns = {infos[i]["seat"]: infos[i]["episode"]["r"] for i in range(t * P, (t + 1) * P)}
            for i in range(t * P, (t + 1) * P):
                me = infos[i]["seat"]
                rivals = [returns[j] for j in range(P) if team[j] != team[me]]
                assert paid[i] == pytest.approx(returns[me] - np.mean(rivals), abs=1e-4)  # float32 rewards
                if not teams:
                    assert returns[me] == infos[i]["round_score"]
                paid[i] = 0.0
                checked += 1
    assert checked >= P


def test_relative_reward__single_agent_view_reports_the_rivals_mean() -> None:
    env = NertzSingleAgentEnv(num_players=3, opponents=["greedy"])
    env.reset(seed=4)
    totals = dict.fromkeys(env.names, 0.0)
    step = env.env.step

    def recording_step(actions: dict[str, int]) -> Any:
        out = step(actions)
        for name, r in out[1].items():
            totals[name] += float(r)
        return out

    env.env.step = recording_step  # type: ignore[method-assign]
    rng = np.random.default_rng(4)
    mine = rivals = 0.0
    done, info = False, dict[str, Any]()
    while not done:
        _, r, term, trunc, info = env.step(int(_random_legal(env.action_masks()[None], rng)[0]))
        mine, rivals = mine + r, rivals + info["rivals_reward"]
        done = term or trunc
    me = env.names[env.seat]
    assert mine == totals[me] == info["score"]
    assert rivals == pytest.approx(np.mean([totals[n] for n in env.names if n != me]))
    assert any(totals[n] != 0 for n in env.names if n != me)


# ---------------------------------------------------------------- the privileged critic (train.privileged)
# The value net reads the table's global state; the policy net and every policy file never do.
O = LAYOUT.size


@pytest.mark.parametrize(("players", "learners"), [(4, 4), (3, 2)])
def test_privileged_vec_env__appends_each_slots_table_state_with_its_own_seat_first(
        players: int, learners: int) -> None:
    kw: dict[str, Any] = {"learners_per_table": learners, "opponents": ["greedy"], "seed": 5, "max_ticks": 30}
    plain = NertzVecEnv(3, players, **kw)
    priv = NertzVecEnv(3, players, privileged_state=True, **kw)
    o = plain.observation_space.shape[0]
    layout = state_layout(priv.config)
    assert priv.observation_space.shape == (o + layout.size,)
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    a, b = plain.reset(), priv.reset()
    finished = 0
    for _ in range(75):  # short rounds: tables finish, are dealt anew in the same step and rotate their seats
        assert np.array_equal(b[:, :o], a)  # the observation part is the plain env's, step for step
        state = priv.venv.state()  # cards and status, the slot's own seat first
        cards, status = layout.cards(state), state[:, layout.slices["status"]].reshape(len(state), players, -1)
        for row, t, s in zip(b[:, o:], priv._table, priv._seat, strict=True):
            seats = [(int(s) + k) % players for k in range(players)]
            assert np.array_equal(row, np.concatenate([cards[t, seats].ravel(), status[t, seats].ravel()]))
        a, _, done_a, info_a = plain.step(_random_legal(plain.action_masks(), rng_a))
        b, _, done_b, info_b = priv.step(_random_legal(priv.action_masks(), rng_b))
        assert np.array_equal(done_a, done_b)
        for i in np.flatnonzero(done_b):  # the final observation keeps the final deal's state, not the new one's
            final = info_b[i]["terminal_observation"]
            assert np.array_equal(final[:o], info_a[i]["terminal_observation"])
            assert final.shape == (o + priv.state_size,) and not np.array_equal(final[o:], b[i, o:])
            finished += 1
    assert finished >= 2 * players  # the re-deal path ran
    one = NertzVecEnv(1, P, seed=2, privileged_state=True)
    obs = one.reset()
    st = one.venv._state  # swap the two lowest stock cards of seat 0: hidden from every observation
    assert st.stock[0, 0, 0] != st.stock[0, 0, 1]
    st.stock[0, 0, :2] = st.stock[0, 0, 1::-1].copy()
    again = one._gather()
    assert np.array_equal(again[:, :O], obs[:, :O]) and not np.array_equal(again[:, O:], obs[:, O:])


def test_privileged_policy__actor_ignores_the_state_files_hold_the_actor_alone_and_play_everywhere(
        tmp_path: Path) -> None:
    trainer = Trainer(_tiny(str(tmp_path / "run"), privileged_critic=True), log=_quiet)
    policy = trainer.model.policy
    assert isinstance(policy, PrivilegedCriticPolicy)
    S = trainer.model.observation_space.shape[0] - O
    rng = np.random.default_rng(0)
    with torch.no_grad():  # critic state weights non-zero, as training makes them
        policy.mlp_extractor.value_net[0].weight.normal_()
        x = torch.as_tensor(rng.random((8, O + S)), dtype=torch.float32)
        y = x.clone()
        y[:, O:] = torch.as_tensor(rng.random((8, S)), dtype=torch.float32)
        assert torch.equal(policy.get_distribution(x).distribution.logits, policy.get_distribution(y).distribution.logits)
        assert not torch.equal(policy.predict_values(x), policy.predict_values(y))
    trainer.train()
    path = str(tmp_path / "run" / "policy.zip")
    saved, _ = load_policy(path)
    assert not isinstance(saved, PrivilegedCriticPolicy) and saved.observation_space.shape == (O,)
    trained = trainer.model.policy.state_dict()
    for key, value in saved.state_dict().items():  # the policy part unchanged; the critic cut to O columns
        assert torch.equal(value, trained[key][:, :O] if key == "mlp_extractor.value_net.0.weight" else trained[key]), key
    with zipfile.ZipFile(path) as z:
        assert all(v.shape[-1] != O + S for v in torch.load(z.open("policy.pth"), weights_only=True).values())
    obs = rng.random((5, O + S)).astype(np.float32)
    with torch.no_grad():  # torch's logits are log-probabilities
        want = trainer.model.policy.get_distribution(torch.as_tensor(obs)).distribution.logits.numpy()
    got = torch.log_softmax(torch.as_tensor(NumpyActor.load(path).logits(obs[:, :O]), dtype=torch.float64), dim=1)
    assert np.allclose(got.numpy(), want, atol=1e-5)
    ckpt = trainer.checkpoints[-1]  # the whole privileged network, for resuming: loads as the same actor
    from_ckpt, _ = load_policy(ckpt)
    assert not isinstance(from_ckpt, PrivilegedCriticPolicy) and from_ckpt.observation_space.shape == (O,)
    assert all(torch.equal(v, saved.state_dict()[k]) for k, v in from_ckpt.state_dict().items())
    assert np.array_equal(numpy_actor(ckpt).logits(obs[:, :O]), NumpyActor.load(path).logits(obs[:, :O]))
    env = nertz_env.parallel_env(num_players=P)
    for source in (path, ckpt):
        agent = make_agent(source)
        observations, _ = env.reset(seed=0)
        agent.reset(env.config, 0, 0)
        first = observations["player_0"]
        assert first["action_mask"][agent.act(first["observation"], first["action_mask"])]
    for k, source in enumerate((path, ckpt)):  # imitation fitting either one saves a file that loads
        refit = str(tmp_path / f"refit{k}.zip")
        save_policy(*load_for_fit(source), refit, read_meta(path))
        assert load_policy(refit)[0].observation_space.shape == (O,)


def test_privileged_training__starts_from_a_plain_policys_critic_and_resumes_like_a_straight_run(
        tmp_path: Path) -> None:
    Trainer(_tiny(str(tmp_path / "plain")), log=_quiet).train()
    plain_path = str(tmp_path / "plain" / "policy.zip")
    plain, _ = load_policy(plain_path)
    started = Trainer(_tiny(str(tmp_path / "init"), privileged_critic=True, init_from=plain_path), log=_quiet)
    x = torch.as_tensor(np.random.default_rng(4).random((6, started.model.observation_space.shape[0])),
                        dtype=torch.float32)
    with torch.no_grad():
        assert torch.allclose(started.model.policy.predict_values(x), plain.predict_values(x[:, :O]))
        assert torch.equal(started.model.policy.get_distribution(x).distribution.logits,
                           plain.get_distribution(x[:, :O]).distribution.logits)
    kw = {"total_timesteps": 256, "checkpoint_every": 128, "shaping": True, "relative_reward": True}
    straight = Trainer(_tiny(str(tmp_path / "a"), privileged_critic=True, **kw), log=_quiet)
    straight.train()
    ckpt = str(tmp_path / "a" / "checkpoints" / "step_000000000128.zip")
    resumed = Trainer(_tiny(str(tmp_path / "b"), privileged_critic=True, **kw), resume=ckpt, log=_quiet)
    assert resumed.model.num_timesteps == 128
    resumed.train()
    _assert_same_run(straight, resumed)
    with pytest.raises(IncompatibleCheckpointError, match="privileged_critic"):
        Trainer(_tiny(str(tmp_path / "c"), **kw), resume=ckpt, log=_quiet)


# ---------------------------------------------------------------- the config and the flags of nertz-train
@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Bad config files, and policy files for other tables (no training)."""
    folder = tmp_path_factory.mktemp("files")
    for name, text in {"bad.toml": "num_tables = = 3\n", "unknown.toml": "num_tabels = 3\n",
                       "type.json": json.dumps({"num_tables": "many"}), "list.json": "[1, 2]",
                       "run.yaml": "num_tables: 3\n", "notes.txt": ""}.items():
        (folder / name).write_text(text)
    _policy_file(str(folder / "three.zip"), 3)
    return folder


REFUSED = [
    # (flags, a piece of the one line): one per kind of refusal, each before any work
    (["--opponent", "search=1"], "--learners-per-table 1"),  # self-play: the pool section does not exist
    (["--mode", "single", "--num-tables", "8"], "num_tables (--num-tables) applies only to mode vector"),
    (["--num-envs", "8"], "num_envs (--num-envs) applies only to mode single"),
    (["--opponent-threads", "2"], "every seat learns"),
    (["--learners-per-table", "1", "--snapshot-every", "5"], "snapshot_weight 0"),
    (["--learners-per-table", "1", "--opponent", "heuristic=0"], "the opponent pool is empty"),
    (["--learners-per-table", "1", "--opponent", "nobody"], "unknown agent 'nobody'"),
    (["--shaping-scale", "2"], "applies only with shaping on"),
    (["--eval-deals", "0", "--eval-seed", "3"], "evaluation off"),
    (["--checkpoint-every", "0", "--keep-checkpoints", "2"], "checkpoint_every 0"),
    (["--batch-size", "99999"], "larger than a rollout"),
    (["--gamma", "1.5"], "gamma must be in (0, 1]"),
    (["--mode", "single", "--privileged-critic"], "privileged_critic (--privileged-critic) applies only to mode"),
    (["--rule", "draw=7"], "rules:"),
    # files
    (["--config", "{f}/bad.toml"], "could not be read"),
    (["--config", "{f}/unknown.toml"], "num_tabels"),
    (["--config", "{f}/type.json"], "num_tables must be an integer"),
    (["--config", "{f}/list.json"], "must hold a table of options"),
    (["--config", "{f}/run.yaml"], "use a .toml or .json file"),
    (["--config", "long_rn"], "config file not found: long_rn"),
    (["--run-dir", "{f}/notes.txt"], "is a file, not a directory"),
    # a policy for another table, wherever it is named
    (["--init-from", "{f}/three.zip"], "num_players: init_from"),
    (["--learners-per-table", "1", "--opponent", "expert:policy={f}/three.zip"], "num_players"),
    (["--num-players", "2", "--eval-opponent", "best"], "num_players"),  # best holds the 4-player ppo
]


@pytest.mark.parametrize(("flags", "message"), REFUSED, ids=[" ".join(f) for f, _ in REFUSED])
def test_nertz_train__an_option_that_cannot_take_effect_is_one_line_and_exit_2(
    flags: list[str], message: str, files: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    flags = [f.format(f=files) for f in flags]
    run_dir = [] if "--run-dir" in flags else ["--run-dir", str(tmp_path / "run")]
    for extra in (["--print-config"], []):  # --print-config refuses what the run refuses, in the same line
        code, out, err = run_main(train_main, [*flags, *run_dir, "--total-timesteps", "128", *extra], capsys)
        assert code == 2 and out == "" and message in one_line(err, "nertz-train"), (extra, err)
    assert not (tmp_path / "run").exists()  # nothing half-written


def test_config__sections_or_flat_keys_and_an_absent_sections_default_is_accepted() -> None:
    tables = TrainConfig.from_dict({"vector": {"learners_per_table": 1}, "pool": {"opponents": {"greedy": 1.0}},
                                    "shaping": {"scale": 2.0}, "evaluation": {"every": 0}})
    flat = TrainConfig.from_dict({"learners_per_table": 1, "opponents": {"greedy": 1.0}, "shaping": True,
                                  "shaping_scale": 2.0, "eval_every": 0})
    assert tables == flat and TrainConfig.from_dict(tables.to_dict()) == tables  # what a checkpoint stores
    assert tables.shaping is not None and tables.shaping.scale == 2.0 and tables.pool is not None
    off = TrainConfig.from_dict({"eval_deals": 0})
    assert off.evaluation is None and off.shaping is None and off.pool is None and off.single is None
    # a checkpoint holds every setting: read back over defaults that evaluate, it still does not
    assert TrainConfig.from_dict(off.to_dict()) == off and "pool" not in off.to_dict()
    # a default where its section is absent asks for what happens anyway: accepted
    assert TrainConfig.from_dict({"opponent_threads": 1, "shaping_scale": 1.0, "eval_seed": 20_240_601,
                                  "eval_deals": 0, "snapshot_weight": 0, "snapshot_deterministic": False,
                                  "privileged_critic": False}) == off
    with pytest.raises(ConfigError, match=r"\[pool\] has no option 'weight'"):
        TrainConfig.from_dict({"pool": {"weight": 1.0}})


WRONG_TYPES = [
    ({"num_tables": True}, "num_tables must be an integer, got True"),
    ({"gamma": "x"}, "gamma must be a number, got 'x'"),
    ({"net_arch": [64, "a"]}, "net_arch must be a list of integers"),
    ({"learners_per_table": 1, "opponents": {"heuristic": True}}, "a table of agent spec = weight"),
    ({"rules": []}, "rules must be a table (mapping)"),
    ({"eval_opponents": "random"}, "eval_opponents must be a list of strings"),
    ({"activation": 3}, "activation must be one of ('relu', 'tanh'), got 3"),
    ({"run_dir": None}, "run_dir must not be empty (None)"),
    ({"shaping": {"coef": "a"}}, "shaping_coef must be a number"),
]


@pytest.mark.parametrize(("options", "message"), WRONG_TYPES, ids=[str(o) for o, _ in WRONG_TYPES])
def test_config__a_value_of_another_type_names_the_type(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        TrainConfig.from_dict(options)
    assert TrainConfig.from_dict({"shaping_coef": None, "torch_threads": None, "gamma": 1}).gamma == 1
    tuples = TrainConfig.from_dict({"net_arch": (64, 64), "eval_opponents": ("random",)})  # from Python: lists
    assert tuples.net_arch == [64, 64] and tuples.evaluation is not None and tuples.evaluation.opponents == ["random"]


def test_config__flags_override_the_file_which_overrides_defaults(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text("n_steps = 32\n[vector]\nnum_tables = 8\n[shaping]\nscale = 1.0\n[rules]\ndraw = 1\n")
    cfg = config_from_args(build_parser().parse_args(
        ["--config", str(path), "--n-steps", "16", "--no-shaping", "--rule", "jokers=1"]))
    assert cfg.vector is not None and (cfg.vector.num_tables, cfg.n_steps, cfg.shaping) == (8, 16, None)
    assert cfg.rules == {"draw": 1, "jokers": 1}
    # a list of agents is a repeated flag, as --opponent (an agent's own parameters hold commas)
    cfg = config_from_args(build_parser().parse_args(["--eval-opponent", "random", "--eval-opponent", "search:rollouts=4,horizon=8"]))
    assert cfg.evaluation is not None and cfg.evaluation.opponents == ["random", "search:rollouts=4,horizon=8"]


def test_config__every_key_is_a_flag_that_says_what_it_means() -> None:
    parser = build_parser()
    dests = {a.dest for a in parser._actions} - {"help", "config", "resume", "print_config", "backend"}
    assert dests - {"rule"} == set(options()) - {"rules"}
    for action in parser._actions:
        help_text = (action.help or "").split(" (default ")[0]
        assert action.dest == "help" or len(help_text) >= 12, (action.option_strings, action.help)
    text = " ".join(parser.format_help().split())
    for allowed in ("'vector'", "'single'", "'constant' or 'linear'", "'relu' or 'tanh'", "1 to num_players"):
        assert allowed in text, allowed
    assert all(name in text for name in shipped_configs())
    # --opponent keeps an agent's own parameters (their equals signs) apart from the weight
    assert _opponent("heuristic") == ("heuristic", 1.0)
    assert _opponent("search:rollouts=4") == ("search:rollouts=4", 1.0)
    assert _opponent("search:rollouts=4,depth=2=0.5") == ("search:rollouts=4,depth=2", 0.5)
    assert _opponent("runs/x/policy.zip=0.3") == ("runs/x/policy.zip", 0.3)


@pytest.mark.parametrize("name", sorted(os.listdir(CONFIGS)))
def test_config__every_shipped_config_is_valid_and_needs_no_adjustment(name: str) -> None:
    cfg = config_from_args(build_parser().parse_args(["--config", os.path.join(CONFIGS, name)]))
    resolved, notes = cfg.resolve(resume=True)  # resume: an init_from file is an earlier phase's output
    assert resolved == cfg and not any("batch_size" in n for n in notes)
    if name.startswith("rllib"):  # the RLlib backend's: tests/test_rllib.py builds them
        return
    assert cfg.mode == "vector" and cfg.shaping is not None
    if name.startswith("selfplay"):  # every seat learns: no opponents to draw
        assert cfg.pool is None and cfg.learners == cfg.num_players and cfg.relative_reward
    else:
        assert cfg.pool is not None
    if name.startswith("dagger_"):
        assert cfg.pool is not None and cfg.pool.opponents["search"] > cfg.pool.opponents["heuristic"]


def test_config__a_shipped_config_by_name_from_any_folder_unless_a_file_there_has_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # the docs' `--config train/configs/long_run.toml` is a checkout path; an install takes it by name too
    monkeypatch.chdir(tmp_path)
    shipped = shipped_configs()
    assert set(shipped) == {f[: -len(".toml")] for f in os.listdir(CONFIGS)}
    expected = read_config_file(shipped["long_run"])
    for spelling in ("long_run", "long_run.toml", "train/configs/long_run.toml"):
        assert read_config_file(spelling) == expected, spelling
    code, out, _ = run_main(train_main, ["--config", "long_run", "--print-config"], capsys)
    assert code == 0 and json.loads(out)["total_timesteps"] == expected["total_timesteps"]
    (tmp_path / "long_run.toml").write_text("num_tables = 3\n")
    assert read_config_file("long_run.toml") == {"num_tables": 3}
    assert read_config_file("long_run") == expected  # a bare name is the shipped config


def test_config__adjustments_are_said_before_training() -> None:
    cfg, notes = TrainConfig.from_dict({"mode": "single"}).resolve()
    assert cfg.batch_size == 256 and any("batch_size: 256, a whole rollout" in n for n in notes)
    _, notes = TrainConfig.from_dict({"batch_size": 1000}).resolve()
    assert any("last minibatch of each epoch has 384 transitions" in n for n in notes)
    _, notes = TrainConfig.from_dict({"total_timesteps": 16_384, "checkpoint_every": 16_384 * 4,
                                      "eval_deals": 0}).resolve()
    assert notes == [
        "checkpoint_every is past the end of the run (16,384 transitions): the only one is the final checkpoint"
    ]
    _, notes = TrainConfig.from_dict({"checkpoint_every": 250_000, "eval_every": 16_384}).resolve()
    assert notes == [
        "checkpoint_every 250,000: not a multiple of a rollout (16,384 transitions), so that work is done at "
        "the first rollout boundary at or past each multiple"
    ]
    _, notes = TrainConfig.from_dict({"learners_per_table": 1, "snapshot_weight": 0.5}).resolve()
    assert any("the only snapshot in the pool is the starting policy" in n for n in notes)
    assert TrainConfig(total_timesteps=100).planned_timesteps() == 16_384
    assert TrainConfig(total_timesteps=16_384 * 3).planned_timesteps() == 16_384 * 3
    assert TrainConfig(total_timesteps=100).planned_timesteps(start=16_384) == 16_384


def test_nertz_train__a_budget_of_part_of_a_rollout_is_said_then_trained_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()
             if k not in ("net_arch", "progress_bar", "tensorboard")]
    flags += ["--net-arch", "16", "--progress-bar", "--no-tensorboard", "--total-timesteps", "100"]
    code, out, err = run_main(train_main, [*flags, "--run-dir", str(tmp_path / "run")], capsys)
    assert code == 0, err
    lines = out.splitlines()
    said = lines.index("training to 128 transitions, not total_timesteps 100: PPO trains whole rollouts of "
                       "n_steps 16 x 8 sub-envs = 128")
    assert said < next(i for i, x in enumerate(lines) if x.startswith("checkpoint:"))
    assert "128/128" in err and "/100" not in err, err[-400:]  # the progress bar ends at the budget trained
    assert read_meta(str(tmp_path / "run" / "policy.zip"))["num_timesteps"] == 128


def test_trainer__takes_the_cpus_it_may_use_unless_told(tmp_path: Path) -> None:
    try:
        Trainer(_tiny(str(tmp_path / "a")), log=_quiet)
        assert torch.get_num_threads() == usable_cpus()
        Trainer(_tiny(str(tmp_path / "b"), torch_threads=1), log=_quiet)
        assert torch.get_num_threads() == 1
        assert os.environ.get("OMP_NUM_THREADS")  # set for the processes it starts, unless the user set it
    finally:
        torch.set_num_threads(1)


# ---------------------------------------------------------------- runs, checkpoints and resumes
STEP = "step_000000000064"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The shipped ``scratch`` recipe in 4 rollouts of 32, with learner snapshots in its pool, run from a
    relative run_dir as users do: checkpoints at 64 and 128, one evaluation deal at the end."""
    folder = tmp_path_factory.mktemp("scratch")
    options = {**read_config_file("scratch"), **TINY, "batch_size": 32, "total_timesteps": 128, "checkpoint_every": 64,
               "eval_every": 0, "eval_deals": 1, "tensorboard": True, "snapshot_weight": 0.5, "snapshot_every": 1,
               "run_dir": "runs/scratch"}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        trainer = Trainer(TrainConfig.from_dict(options), log=_quiet)
        report = trainer.train()
    run = folder / "runs" / "scratch"
    return {"trainer": trainer, "report": report, "options": options, "run": run,
            "ckpt": str(run / "checkpoints" / f"{STEP}.zip"), "rules": {"last_moves": 1}}


def test_scratch_recipe__a_tiny_run_writes_checkpoints_logs_evaluation_and_a_policy_that_plays(
    scratch: dict[str, Any],
) -> None:
    run, report = scratch["run"], scratch["report"]
    assert sorted(os.listdir(run / "checkpoints")) == sorted(
        f"step_{n:012d}{x}" for n in (64, 128) for x in (".zip", ".json", ".state.pkl"))
    assert report["steps_per_second"] > 0 and 0 < report["env_share"] < 1
    assert json.loads((run / "throughput.json").read_text())["num_timesteps"] == 128
    with open(run / "eval.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(r["timesteps"], r["baseline"]) for r in rows] == [("128", "heuristic")]
    assert os.listdir(run / "tb") and os.listdir(run / "pool")
    policy = str(run / "policy.zip")
    meta = read_meta(policy)
    assert (meta["num_players"], meta["rules"]["last_moves"], meta["num_actions"]) == (P, 1, ACTIONS.n)
    assert json.loads(Path(sidecar_path(policy)).read_text()) == meta
    agent = make_agent(policy + ":deterministic=true")  # through the registry's .zip loader
    env = nertz_env.parallel_env(num_players=P, **scratch["rules"])
    obs, _ = env.reset(seed=0)
    agent.reset(env.config, 0, 0)
    assert obs["player_0"]["action_mask"][agent.act(obs["player_0"]["observation"], obs["player_0"]["action_mask"])]


def test_resume__continues_exactly_as_the_straight_run(scratch: dict[str, Any], tmp_path: Path) -> None:
    straight = scratch["trainer"]
    cfg = TrainConfig.from_dict({**scratch["options"], "run_dir": str(tmp_path / "b"), "eval_deals": 0,
                                 "eval_every": 250_000, "tensorboard": False})  # evaluation: not training state
    resumed = Trainer(cfg, resume=scratch["ckpt"], log=_quiet)
    assert resumed.model.num_timesteps == 64
    resumed.train()
    _assert_same_run(straight, resumed)
    assert straight.pool is not None and resumed.pool is not None
    assert [e.name for e in straight.pool.snapshots] == [e.name for e in resumed.pool.snapshots]


def _copy_at(run: Path, to: Path, step: int) -> Path:
    """``run`` copied as it stood at checkpoint ``step`` (later checkpoints, the policy and eval.csv left out)."""
    def later(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if ((m := re.match(r"step_(\d+)", n)) and int(m.group(1)) > step)
                or n.startswith("policy.") or n == "eval.csv"}

    shutil.copytree(run, to, ignore=later)
    return to


def test_resume__a_moved_run_continues_in_its_own_folder_from_anywhere_as_the_straight_run(
    scratch: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = scratch["run"]
    moved = _copy_at(original, tmp_path / "runs" / "moved", 64)
    (tmp_path / "other").mkdir()
    away = original.with_name("away")
    os.rename(original, away)  # the copy must not need the folder it was trained in
    try:
        monkeypatch.chdir(tmp_path / "other")
        resume = os.path.join("..", "runs", "moved", "checkpoints", f"{STEP}.zip")
        argv = ["--resume", resume, "--total-timesteps", "128", "--eval-deals", "0"]
        code, out, err = run_main(train_main, argv, capsys)
    finally:
        os.rename(away, original)
    assert code == 0, err
    assert f"run dir: {moved}" in out.splitlines()
    assert not (tmp_path / "other" / "runs").exists()  # not the record's run_dir under the cwd
    assert (moved / "checkpoints" / "step_000000000128.zip").is_file()
    assert _same_weights(_weights(str(moved / "policy.zip")), _weights(str(original / "policy.zip")))


def test_resume__a_checkpoint_at_the_total_writes_the_policy_and_evaluates_it(
    scratch: dict[str, Any], tmp_path: Path
) -> None:
    # a run stopped at its last checkpoint is finished by resuming it there: nothing left to train (SB3 never
    # sets up its logger then), the policy file and the evaluation still come out
    run = _copy_at(scratch["run"], tmp_path / "run", 128)
    cfg = TrainConfig.from_dict({**scratch["options"], "run_dir": str(run), "tensorboard": False})
    resumed = Trainer(cfg, resume=str(run / "checkpoints" / "step_000000000128.zip"), log=_quiet)
    resumed.train()
    assert resumed.model.num_timesteps == 128 and (run / "policy.zip").is_file()
    assert [(r.timesteps, r.baseline) for r in resumed.eval_rows] == [(128, "heuristic")]
    assert len((run / "eval.csv").read_text().strip().splitlines()) == 2  # header and the row


def test_resume__single_agent_mode_continues_exactly(tmp_path: Path) -> None:
    kw = {"mode": "single", "num_envs": 2, "opponents": {"random": 1.0, "heuristic": 1.0}, "checkpoint_every": 64}
    straight = Trainer(_tiny(str(tmp_path / "a"), **kw), log=_quiet)
    straight.train()
    resumed = Trainer(_tiny(str(tmp_path / "b"), **kw), resume=str(tmp_path / "a" / "checkpoints" / f"{STEP}.zip"),
                      log=_quiet)
    resumed.train()
    _assert_same_run(straight, resumed)


def test_resume__changed_opponents_and_a_new_checkpoint_interval_take_effect(
    scratch: dict[str, Any], tmp_path: Path
) -> None:
    lines: list[str] = []
    cfg = TrainConfig.from_dict({**scratch["options"], "run_dir": str(tmp_path), "opponents": {"greedy": 1.0},
                                 "total_timesteps": 160, "checkpoint_every": 48})
    trainer = Trainer(cfg, resume=scratch["ckpt"], log=lines.append)
    assert trainer.pool is not None and [e.spec for e in trainer.pool.scripted] == ["greedy"]
    assert any("the opponent pool is now" in x and "scripted" in x for x in lines)
    trainer.train()  # boundaries at 96, 128 and 160: the multiples of 48 past the resume point at 64, the end
    assert sorted(os.listdir(tmp_path / "checkpoints")) == [f"step_{n:012d}{x}" for n in (96, 160)
                                                          for x in (".json", ".state.pkl", ".zip")]
    lines.clear()
    same = Trainer(TrainConfig.from_dict({**scratch["options"], "run_dir": str(tmp_path / "b")}),
                   resume=scratch["ckpt"], log=lines.append)
    assert same.pool is not None and [e.spec for e in same.pool.scripted] == ["heuristic"]
    assert not any("opponent pool" in x for x in lines)


REFUSED_ON_RESUME = [
    (["--net-arch", "32,32"], "net_arch: checkpoint has [16]"),
    (["--num-players", "3"], "num_players"),
    (["--mode", "single", "--num-envs", "4"], "sub-envs: checkpoint has 2, the config has 4"),
    (["--num-tables", "1", "--learners-per-table", "2"], "num_tables: checkpoint has 2"),  # the same sub-envs
    (["--seed", "3"], "seed: checkpoint has 1"),
    (["--total-timesteps", "32"], "below the 64 transitions"),
    (["--init-from", "{ckpt}"], "applies to a fresh run only"),
    (["--run-dir", "{other}"], "already holds a run (eval.csv)"),  # another run's folder: the two would mix
    (["--net-arch", "32", "--resume", "{run}/policy.zip"], "policy.state.pkl is missing"),  # said first
    (["--resume", "{tmp}/gone/step_1.zip"], "checkpoint file not found"),
    (["--resume", "{tmp}/cut.zip", "--run-dir", "{tmp}/new"], "cannot be read"),
    (["--resume", "{tmp}/loose.zip"], "not in a run folder's checkpoints/"),
]


@pytest.mark.parametrize(("flags", "message"), REFUSED_ON_RESUME, ids=[" ".join(f) for f, _ in REFUSED_ON_RESUME])
def test_resume__what_a_resume_cannot_change_is_one_line_and_exit_2(
    flags: list[str], message: str, scratch: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    ckpt = scratch["ckpt"]
    for name in (".zip", ".json"):  # a loose copy, and one whose training state was cut short
        shutil.copy(ckpt.replace(".zip", name), tmp_path / f"loose{name}")
        shutil.copy(ckpt.replace(".zip", name), tmp_path / f"cut{name}")
    shutil.copy(state_path(ckpt), state_path(str(tmp_path / "loose.zip")))
    Path(state_path(str(tmp_path / "cut.zip"))).write_bytes(Path(state_path(ckpt)).read_bytes()[:100])
    (tmp_path / "other" / "checkpoints").mkdir(parents=True)
    (tmp_path / "other" / "eval.csv").write_text("")
    before = sorted(os.listdir(tmp_path))
    # --print-config makes the run's checks, with the same line (all but reading the training state)
    extras = [[]] if "{tmp}/cut.zip" in flags else [["--print-config"], []]
    flags = [f.format(ckpt=ckpt, other=tmp_path / "other", run=scratch["run"], tmp=tmp_path) for f in flags]
    resume = [] if "--resume" in flags else ["--resume", ckpt]
    for extra in extras:
        code, out, err = run_main(train_main, [*resume, *flags, *extra], capsys)
        assert code == 2 and out == "" and message in one_line(err, "nertz-train"), (extra, err)
    assert sorted(os.listdir(tmp_path)) == before


def test_resume__print_config_shows_the_checkpoints_run_folder_unless_run_dir_is_given(
    scratch: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for flags, run_dir in [([], str(scratch["run"])), (["--run-dir", "elsewhere"], "elsewhere"),
                           (["--run-dir", str(scratch["run"])], str(scratch["run"]))]:
        code, out, err = run_main(train_main, ["--resume", scratch["ckpt"], *flags, "--print-config"], capsys)
        assert code == 0 and json.loads(out)["run_dir"] == run_dir, err
    assert run_dir_of("runs/x/checkpoints/step_1.zip") == os.path.normpath("runs/x")
    assert run_dir_of("../runs/x/checkpoints/step_1.zip") == os.path.normpath("../runs/x")
    assert run_dir_of("runs/x/policy.zip") is None and run_dir_of("step_1.zip") is None
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "run" / "checkpoints")
    assert os.path.abspath(run_dir_of("step_1.zip") or "") == str(tmp_path / "run")


def test_a_folder_holding_a_run__one_refusal_for_a_fresh_run_and_a_resume(
    scratch: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A fresh run or a resume into a folder holding another run: one wording, each with its own way out."""
    own, ckpt = str(scratch["run"]), scratch["ckpt"]
    copy = str(tmp_path / "checkpoints")  # a run folder named as a run's own checkpoints folder
    shutil.copytree(own, copy)
    head = f"nertz-train: error: run_dir {copy} already holds a run (checkpoints/{STEP}.zip)"
    why = ": the two runs' checkpoints and eval.csv rows would mix; "
    code, _, err = run_main(train_main, ["--run-dir", copy], capsys)
    assert code == 2 and one_line(err, "nertz-train") == (
        head + why + f"pass a new --run-dir, or continue that run with --resume {copy}/checkpoints/step_000000000128.zip")
    code, _, err = run_main(train_main, ["--resume", ckpt, "--run-dir", copy], capsys)
    assert code == 2 and one_line(err, "nertz-train") == (
        head + f" and is not the folder of {ckpt}" + why
        + f"leave out --run-dir to continue in {own}, the run {ckpt} belongs to, or pass a new --run-dir")
    with pytest.raises(ConfigError, match="already holds a run"):
        Trainer(_tiny(copy), log=_quiet)


def test_init_from__copies_the_policy_weights_and_checks_the_network(scratch: dict[str, Any], tmp_path: Path) -> None:
    # the scratch recipe trains the moves policy: a start from its checkpoint is one too
    kw = {"rules": scratch["rules"], "policy": "moves", "init_from": scratch["ckpt"]}
    warm = Trainer(_tiny(str(tmp_path), **kw), log=_quiet)
    p, q = warm.model.policy.state_dict(), load_policy(scratch["ckpt"])[0].state_dict()
    assert all(torch.equal(p[k], q[k]) for k in q)
    assert warm.model.num_timesteps == 0
    with pytest.raises(IncompatibleCheckpointError, match="net_arch"):
        Trainer(_tiny(str(tmp_path), **kw, net_arch=[8]), log=_quiet)


def test_policy_agent__refuses_other_rules_in_one_line_naming_its_record(scratch: dict[str, Any]) -> None:
    ckpt = scratch["ckpt"]
    # one line: each rule that differs, and the file that records the rules the run trained with
    with pytest.raises(IncompatibleCheckpointError, match=rf"its rules: .*{STEP}\.json\): rules.work_piles: .* has 4, "
                       "the table has 5; observation size"):
        load_policy_agent(ckpt, config=nertz_env.make_config(num_players=P, work_piles=5))
    # another last_moves: the agent keeps its own record of its moves, at every route
    assert load_policy_agent(ckpt, config=nertz_env.make_config(num_players=P)).memory is not None
    with pytest.raises(AgentSpecError, match="no parameter temperature"):
        make_agent(ckpt + ":temperature=2")


def test_train__the_timing_line_counts_the_final_evaluation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def slow_evaluation(*args: Any, **kwargs: Any) -> list[Any]:
        time.sleep(0.5)
        return []

    monkeypatch.setattr(trainer_module, "evaluate_checkpoint", slow_evaluation)
    lines: list[str] = []
    report = Trainer(_tiny(str(tmp_path / "run"), total_timesteps=64, eval_deals=1, eval_opponents=["random"]),
                     log=lines.append).train()
    assert report["boundary_seconds"] >= 0.5 and report["wall_seconds"] >= report["boundary_seconds"]
    timing = next(ln for ln in lines[-1].splitlines() if "of it evaluations and checkpoints" in ln)
    wall, boundary = (float(x) for x in re.findall(r"in ([\d.]+) s \(([\d.]+) s of it", timing)[0])
    assert boundary >= 0.5 and wall >= boundary, timing


# ---------------------------------------------------------------- a run's checkpoints evaluated and plotted
def test_checkpoint_evaluation__plays_every_checkpoint_once_and_feeds_the_plot(
    scratch: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    pytest.importorskip("matplotlib")
    start, run = scratch["ckpt"], str(tmp_path / "run")
    Trainer(_tiny(run, rules=scratch["rules"], policy="moves", init_from=start, learners_per_table=1, batch_size=32,
                  total_timesteps=64, checkpoint_every=32), log=_quiet).train()
    points = run_checkpoints(run)
    assert points[0][0] == 0 and os.path.samefile(points[0][1], start)  # the start policy first, as step 0
    assert [s for s, _ in points[1:]] == [32, 64]
    assert run_checkpoints(run, start=False) == points[1:]
    out = evaluate_run(run, ["random"], deals=2, seed=1, log=_quiet)
    assert out == checkpoint_eval_path(run, 2, 1)
    with open(out, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["timesteps"]) for r in rows] == [s for s, _ in points]
    assert all(r["deals"] == "2" and r["baseline"] == "random" for r in rows)
    per_deal = read_per_deal(checkpoint_eval_path(run, 2, 1, per_deal=True))
    assert sorted(per_deal) == [(s, "random") for s, _ in points]
    for r in rows:  # the row's difference is the mean of its deals' differences
        deals = per_deal[(int(r["timesteps"]), "random")]
        assert sorted(deals) == [0, 1] and float(r["diff"]) == pytest.approx(sum(deals.values()) / 2)
    gains = paired_with_start(run, 2, 1)
    assert [(s, b) for s, b, _ in gains] == [(s, "random") for s, _ in points[1:]]
    first = per_deal[(0, "random")]
    for s, _, e in gains:
        assert e.n == 2 and e.mean == pytest.approx(sum(per_deal[(s, "random")][d] - first[d] for d in (0, 1)) / 2)
    # an interrupted or repeated evaluation plays only what is missing: the rows written are kept
    kept = Path(out).read_text(encoding="utf-8").splitlines(keepends=True)
    Path(out).write_text("".join(kept[:-1]), encoding="utf-8")
    played: list[str] = []
    evaluate_run(run, ["random"], deals=2, seed=1, log=played.append)
    assert len(Path(out).read_text(encoding="utf-8").splitlines()) == len(kept) and len(played) == 1
    sampled = checkpoint_eval_path(run, 2, 1, deterministic=False)  # sampled play never mixes with it
    assert sampled != out and "stochastic" in sampled
    assert plot.checkpoint_evals(run) == [(os.path.basename(out), "checkpoints, 2 deals, seed 1")]
    png = tmp_path / "curve.png"
    assert plot.main([run, "--out", str(png)]) == 0  # no eval.csv in this run: the checkpoint rows alone
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    assert evaluate.main([run, "--deals", "2", "--seed", "1", "--baseline", "random"]) == 0  # all done
    printed = capsys.readouterr().out
    assert "minus the first point" in printed and printed.strip().endswith(out)


def test_learning_curve_plot__draws_eval_csv(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    rows = [EvalRow(t, b, 10, 40, 1.0, 0.5, 2.0, d, d - 1, d + 1, 0.2, 0.3, 0, 1.0, "x.zip")
            for t, d in ((100, -2.0), (200, 0.5)) for b in ("heuristic", "search")]
    append_csv(str(tmp_path / "eval.csv"), rows)
    assert [r["diff"] for r in plot.read_eval(str(tmp_path))["search"]] == [-2.0, 0.5]
    out = tmp_path / "curve.png"
    assert plot.main([str(tmp_path), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


EVALUATE_OR_PLOT_REFUSED = [
    ("evaluate", ["{tmp}/gone"], "run directory not found"),
    ("evaluate", ["{tmp}"], "has no checkpoints"),
    ("evaluate", ["{run}", "--deals", "0"], "argument --deals: must be at least 1"),
    ("evaluate", ["{run}", "--baseline", "random", "--baseline", "random"], "names an agent twice"),
    ("evaluate", ["{run}", "--baseline", "nobody"], "unknown agent"),
    ("evaluate", ["{run}", "--baseline", "{tmp}/draw1.zip"], "rules.draw: policy"),
    ("evaluate", ["{run}", "--no-start"], "--no-start has no effect"),
    ("plot", ["{tmp}/gone"], "run directory not found"),
    ("plot", ["{tmp}"], "holds no eval.csv, checkpoint_eval_*.csv or TensorBoard log"),
    ("plot", ["{run}", "--out", "{tmp}/curve.txt"], "must end in .png, .svg or .pdf"),
    ("plot", ["{tmp}/bad"], "not one that nertz-train wrote"),
]


@pytest.mark.parametrize(("command", "argv", "message"), EVALUATE_OR_PLOT_REFUSED,
                         ids=[f"{c} {' '.join(a)}" for c, a, _ in EVALUATE_OR_PLOT_REFUSED])
def test_evaluate_and_plot__bad_input_is_one_line_and_exit_2(
    command: str, argv: list[str], message: str, scratch: dict[str, Any], tmp_path: Path,
    capsys: pytest.CaptureFixture
) -> None:
    if command == "plot":
        pytest.importorskip("matplotlib")
    if "{tmp}/draw1.zip" in argv:
        _policy_file(str(tmp_path / "draw1.zip"), P, draw=1, **scratch["rules"])
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "eval.csv").write_text("a,b\n1,2\n")
    run = scratch["run"]
    before = sorted(os.listdir(run))
    argv = [a.format(tmp=tmp_path, run=run) for a in argv]
    code, _, err = run_main({"evaluate": evaluate, "plot": plot}[command].main, argv, capsys)
    assert code == 2 and message in one_line(err, f"python -m nertz_env.train.{command}"), err
    assert sorted(os.listdir(run)) == before  # no evaluation file was started


# ---------------------------------------------------------------- the learning signal
@pytest.mark.long
def test_train__a_longer_self_play_run_beats_greedy(tmp_path: Path) -> None:
    """256k transitions of self-play: a long test (CI's long-tests phase)."""
    cfg = _tiny(str(tmp_path / "run"), num_tables=32, n_steps=32, batch_size=1024, n_epochs=4, net_arch=[64, 64],
                shaping=True, total_timesteps=256 * 1024, eval_every=0, eval_deals=20, eval_opponents=["greedy"])
    (row,) = Trainer(cfg, log=_quiet).train()["eval"]
    assert row["diff_low"] > 0, row
