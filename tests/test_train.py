"""Training glue (nertz_env.train): the single-agent view, the self-play VecEnv and its masks, the pairing of
rewards with observations, shaping, the opponent pool, checkpoints (save, load, exact resume, clear errors)
and a small training run that is evaluated through the tournament harness."""

from __future__ import annotations

import copy
import csv
import itertools
import json
import os
import re
import zipfile
from typing import Any

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")

import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.vec_env import VecCheckNan, VecEnv, VecMonitor

import nertz_env
from nertz_env.agents import make_agent
from nertz_env.train import (
    CheckpointError,
    IncompatibleCheckpointError,
    NertzSingleAgentEnv,
    NertzVecEnv,
    OpponentPool,
    PotentialShaping,
    RelativeReward,
    TrainConfig,
    Trainer,
)
from nertz_env.train.cli import build_parser, config_from_args, main
from nertz_env.train.config import ConfigError
from nertz_env.train.meta import read_meta, sidecar_path
from nertz_env.train.trainer import state_path

torch.set_num_threads(1)

P = 4
LAYOUT = nertz_env.ObsLayout(nertz_env.make_config(num_players=P))
NERTZ_COUNT = LAYOUT.slices["nertz_count"].start
ACTIONS = nertz_env.action_table(nertz_env.make_config(num_players=P))
WAIT, LAKE_NERTZ = ACTIONS.lookup("wait"), ACTIONS.lookup("lake:nertz")


def _nertz_count(obs: np.ndarray) -> np.ndarray:
    return np.rint(obs[..., NERTZ_COUNT] * 13).astype(int)


def _random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of a (N, A) mask."""
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def _vstep(env: VecEnv, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
    """``env.step`` with the observations as one array (a VecEnv of vector observations)."""
    obs, rewards, dones, infos = env.step(actions)
    return np.asarray(obs), rewards, dones, infos


def _tiny(run_dir: str, **kw: object) -> TrainConfig:
    base: dict[str, object] = {
        "num_tables": 2,
        "n_steps": 16,
        "batch_size": 64,
        "n_epochs": 2,
        "net_arch": [32, 32],
        "total_timesteps": 256,
        "checkpoint_every": 0,
        "eval_every": 0,
        "eval_deals": 0,
        "progress_bar": False,
        "tensorboard": False,
        "run_dir": run_dir,
    }
    base.update(kw)
    if base.get("mode") == "single":  # num_tables is a vector-mode option; a rollout is 16 x num_envs (2)
        del base["num_tables"]
        base["batch_size"] = 32
    return TrainConfig.from_dict(base)


def _quiet(_: str) -> None:
    pass


# ---------------------------------------------------------------- the single-agent view
def test_single_agent_view__passes_sb3_check_env() -> None:
    env = NertzSingleAgentEnv(num_players=P, opponents=["random"])
    check_env(env, warn=True)
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    assert env.action_masks().dtype == bool and env.action_masks().any()


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
    env.venv.restore(table, snap)
    env._obs_full, env._mask_full = env.venv._state.obs, env.venv._state.mask
    env._gather()


def _ace_on_top(snap: dict, seat: int, keep: int | None = None) -> dict:
    """``snap`` with an ace of ``seat``'s deck moved from its stock to the top of its Nertz pile (the old top
    goes to the stock); with ``keep``, only that many Nertz cards stay (the rest go under the stock)."""
    snap = copy.deepcopy(snap)
    me = snap["players"][seat]
    ace = next(c for c in me["stock"] if c[0] == "A")
    me["stock"].remove(ace)
    if keep is None:
        me["stock"].insert(0, me["nertz"].pop())
    else:
        me["stock"] = me["nertz"][: len(me["nertz"]) - (keep - 1)] + me["stock"]
        me["nertz"] = me["nertz"][len(me["nertz"]) - (keep - 1) :]
    me["nertz"].append(ace)
    return snap


def _table_with_stock_ace(env: NertzVecEnv, table: int, seat: int) -> dict:
    for seed in range(50):
        env.seed(seed)
        env.reset()
        snap = env.venv.snapshot(table)
        if any(c[0] == "A" for c in snap["players"][seat]["stock"]):
            return snap
    raise AssertionError("no deal with an ace in the stock")


def test_vec_env__only_the_seat_that_plays_is_rewarded_at_its_own_index() -> None:
    env = NertzVecEnv(num_tables=2, num_players=P)
    _restore(env, 1, _ace_on_top(_table_with_stock_ace(env, 1, 2), seat=2))
    slot = env.slot_of(1, 2)
    assert slot == 1 * P + 2
    masks = get_action_masks(env)
    assert masks[slot, LAKE_NERTZ]
    actions = np.full(env.num_envs, WAIT)
    actions[slot] = LAKE_NERTZ
    before = env._gather()
    obs, rewards, dones, _ = _vstep(env, actions)
    expected = np.zeros(env.num_envs, dtype=np.float32)
    expected[slot] = 1.0
    assert np.array_equal(rewards, expected)
    assert not dones.any()
    assert _nertz_count(obs[slot]) == _nertz_count(before[slot]) - 1  # the observation is the same seat's
    others = np.arange(env.num_envs) != slot
    assert np.array_equal(_nertz_count(obs[others]), _nertz_count(before[others]))


def test_vec_env__round_end_pairs_terminal_observations_and_penalties_by_seat() -> None:
    env = NertzVecEnv(num_tables=2, num_players=P)
    _restore(env, 1, _ace_on_top(_table_with_stock_ace(env, 1, 2), seat=2, keep=1))
    slot = env.slot_of(1, 2)
    actions = np.full(env.num_envs, WAIT)
    actions[slot] = LAKE_NERTZ
    obs, rewards, dones, infos = _vstep(env, actions)
    table1 = np.arange(P, 2 * P)
    assert dones.tolist() == [False] * P + [True] * P  # the whole table, and only it
    assert rewards[slot] == 1.0  # one card to the lake, an empty Nertz pile
    for i in table1:
        info = infos[i]
        assert info["seat"] == i - P
        assert info["TimeLimit.truncated"] is False
        if i != slot:
            assert rewards[i] == -2 * 13  # 13 Nertz cards left, nothing in the lake
        assert info["round_score"] == rewards[i]
        terminal = info["terminal_observation"]
        assert _nertz_count(terminal) == (0 if i == slot else 13)
        assert _nertz_count(obs[i]) == 13  # same-step reset: the next deal's first observation
    assert all("terminal_observation" not in infos[i] for i in range(P))
    # the step after the round end is a real tick of the new deal, not an autoreset step
    obs2, _, dones2, _ = _vstep(env, _random_legal(get_action_masks(env), np.random.default_rng(0)))
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
        obs, _, dones, infos = _vstep(env, _random_legal(get_action_masks(env), rng))
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
    with pytest.raises(ConfigError, match="opponent_threads"):
        TrainConfig.from_dict({"opponent_threads": 0, "learners_per_table": 1})


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


def test_pool__draws_by_weight_and_snapshots_share_theirs(tmp_path: object) -> None:
    pool = OpponentPool({"random": 3.0, "greedy": 1.0}, snapshot_weight=0.0)
    rng = np.random.default_rng(0)
    draws = [pool.sample(rng).name for _ in range(4000)]
    assert 0.72 < draws.count("random") / len(draws) < 0.78
    with pytest.raises(ValueError, match="unknown agent"):
        OpponentPool({"no-such-bot": 1.0})
    with pytest.raises(ValueError, match="empty"):
        OpponentPool({"random": 0.0})


def test_vec_env__runs_maskable_ppo_learn() -> None:
    env = NertzVecEnv(num_tables=2, num_players=P, seed=0)
    model = MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=16,
        batch_size=64,
        n_epochs=1,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [32]},
    )
    model.learn(256)
    assert model.num_timesteps == 256


# ---------------------------------------------------------------- training runs and checkpoints
def test_train__small_run_saves_loads_and_evaluates(tmp_path: object) -> None:
    run = os.path.join(str(tmp_path), "run")
    cfg = _tiny(
        run,
        total_timesteps=512,
        checkpoint_every=256,
        eval_deals=2,
        eval_opponents=["random"],
        tensorboard=True,
    )
    report = Trainer(cfg, log=_quiet).train()
    ckpts = sorted(os.listdir(os.path.join(run, "checkpoints")))
    assert "step_000000000256.zip" in ckpts and "step_000000000512.state.pkl" in ckpts
    assert report["steps_per_second"] > 0 and 0 < report["env_share"] < 1
    with open(os.path.join(run, "throughput.json")) as f:
        assert json.load(f)["num_timesteps"] == 512
    with open(os.path.join(run, "eval.csv")) as f:
        assert f.readline().startswith("timesteps,baseline")
    assert os.listdir(os.path.join(run, "tb"))
    policy = os.path.join(run, "policy.zip")
    meta = read_meta(policy)
    assert meta["num_players"] == P and meta["obs_size"] == LAYOUT.size and meta["num_actions"] == ACTIONS.n
    with open(sidecar_path(policy)) as f:
        assert json.load(f) == meta
    agent = make_agent(policy + ":deterministic=true")  # through the registry's .zip loader
    env = nertz_env.parallel_env(num_players=P)
    obs, _ = env.reset(seed=0)
    agent.reset(env.config, 0, 0)
    a = agent.act(obs["player_0"]["observation"], obs["player_0"]["action_mask"])
    assert obs["player_0"]["action_mask"][a] == 1
    results = __import__("nertz_env.eval", fromlist=["run_tournament"]).run_tournament(
        [policy, "random"], num_players=P, deals=1, seed=1, mode="gauntlet"
    )
    assert len(results.games) == P


def _params(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in trainer.model.policy.state_dict().items()}


def _assert_same_run(a: Trainer, b: Trainer) -> None:
    pa, pb = _params(a), _params(b)
    assert pa.keys() == pb.keys()
    for k in pa:
        assert torch.equal(pa[k], pb[k]), k
    oa, ob = a.model.policy.optimizer.state_dict()["state"], b.model.policy.optimizer.state_dict()["state"]
    for k in oa:
        assert torch.equal(oa[k]["exp_avg"], ob[k]["exp_avg"])
    assert a.model.num_timesteps == b.model.num_timesteps
    assert np.array_equal(np.asarray(a.model._last_obs), np.asarray(b.model._last_obs))


def test_train__the_timing_line_counts_the_final_evaluation(tmp_path: object, monkeypatch: Any) -> None:
    import time

    import nertz_env.train.trainer as trainer_module

    def slow_evaluation(*args: Any, **kwargs: Any) -> list[Any]:
        time.sleep(1.5)
        return []

    monkeypatch.setattr(trainer_module, "evaluate_checkpoint", slow_evaluation)
    lines: list[str] = []
    cfg = _tiny(os.path.join(str(tmp_path), "run"), total_timesteps=64, eval_deals=1, eval_opponents=["random"])
    report = Trainer(cfg, log=lines.append).train()
    assert report["boundary_seconds"] >= 1.5 and report["wall_seconds"] >= report["boundary_seconds"]
    timing = next(ln for ln in lines[-1].splitlines() if "of it evaluations and checkpoints" in ln)
    wall, boundary = (float(x) for x in re.findall(r"in ([\d.]+) s \(([\d.]+) s of it", timing)[0])
    assert boundary >= 1.5 and wall >= boundary, timing


def test_resume__continues_exactly_like_a_straight_run(tmp_path: object) -> None:
    # opponents (scripted and snapshots of the learner), shaping and seat rotation all in play
    kw = {
        "learners_per_table": 2,
        "opponents": {"random": 1.0, "greedy": 1.0},
        "snapshot_weight": 1.0,
        "snapshot_every": 1,
        "max_snapshots": 2,
        "shaping": True,
        "lr_schedule": "linear",
        "total_timesteps": 4 * 64,
        "checkpoint_every": 128,
    }
    straight = Trainer(_tiny(os.path.join(str(tmp_path), "a"), **kw), log=_quiet)
    straight.train()
    ckpt = os.path.join(str(tmp_path), "a", "checkpoints", "step_000000000128.zip")
    resumed = Trainer(_tiny(os.path.join(str(tmp_path), "b"), **kw), resume=ckpt, log=_quiet)
    assert resumed.model.num_timesteps == 128
    resumed.train()
    _assert_same_run(straight, resumed)
    assert straight.pool is not None and resumed.pool is not None
    assert [e.name for e in straight.pool.snapshots] == [e.name for e in resumed.pool.snapshots]


def test_resume__a_checkpoint_at_the_total_writes_the_policy_and_evaluates_it(tmp_path: object) -> None:
    # a run stopped at a checkpoint is finished by resuming it with total_timesteps at its step: nothing
    # left to train (SB3 never sets up its logger then), the policy file and the evaluation still come out
    kw = {"total_timesteps": 128, "checkpoint_every": 128}
    Trainer(_tiny(os.path.join(str(tmp_path), "a"), **kw), log=_quiet).train()
    ckpt = os.path.join(str(tmp_path), "a", "checkpoints", "step_000000000128.zip")
    cfg = _tiny(os.path.join(str(tmp_path), "a"), eval_deals=1, eval_opponents=["random"], **kw)
    resumed = Trainer(cfg, resume=ckpt, log=_quiet)
    resumed.train()
    assert resumed.model.num_timesteps == 128
    assert os.path.exists(os.path.join(str(tmp_path), "a", "policy.zip"))
    assert [(r.timesteps, r.baseline) for r in resumed.eval_rows] == [(128, "random")]
    with open(os.path.join(str(tmp_path), "a", "eval.csv")) as f:
        assert len(f.read().strip().splitlines()) == 2  # header and the row


def test_resume__single_agent_mode_continues_exactly(tmp_path: object) -> None:
    kw = {
        "mode": "single",
        "num_envs": 2,
        "opponents": {"random": 1.0, "heuristic": 1.0},
        "total_timesteps": 4 * 32,
        "checkpoint_every": 64,
    }
    straight = Trainer(_tiny(os.path.join(str(tmp_path), "a"), **kw), log=_quiet)
    straight.train()
    ckpt = os.path.join(str(tmp_path), "a", "checkpoints", "step_000000000064.zip")
    resumed = Trainer(_tiny(os.path.join(str(tmp_path), "b"), **kw), resume=ckpt, log=_quiet)
    resumed.train()
    _assert_same_run(straight, resumed)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> str:
    run = str(tmp_path_factory.mktemp("ckpt"))
    trainer = Trainer(_tiny(run, total_timesteps=64), log=_quiet)
    trainer.train()
    return trainer.checkpoints[-1]


def test_resume__missing_checkpoint_is_a_clear_error(tmp_path: object) -> None:
    missing = os.path.join(str(tmp_path), "nope.zip")
    with pytest.raises(FileNotFoundError, match=r"nope\.zip"):
        Trainer(_tiny(str(tmp_path)), resume=missing, log=_quiet)


def test_resume__other_player_count_or_rules_name_the_mismatch(checkpoint: str, tmp_path: object) -> None:
    with pytest.raises(
        IncompatibleCheckpointError, match=r"num_players: checkpoint .* has 4, the table has 3"
    ):
        Trainer(_tiny(str(tmp_path), num_players=3), resume=checkpoint, log=_quiet)
    with pytest.raises(
        IncompatibleCheckpointError, match=r"rules.draw: checkpoint .* has 3, the table has 1"
    ):
        Trainer(_tiny(str(tmp_path), rules={"draw": 1}), resume=checkpoint, log=_quiet)
    with pytest.raises(IncompatibleCheckpointError, match="net_arch"):
        Trainer(_tiny(str(tmp_path), net_arch=[16]), resume=checkpoint, log=_quiet)


def test_resume__policy_file_without_training_state_is_refused(checkpoint: str, tmp_path: object) -> None:
    policy = os.path.join(os.path.dirname(os.path.dirname(checkpoint)), "policy.zip")
    with pytest.raises(CheckpointError, match=r"state\.pkl is missing"):
        Trainer(_tiny(str(tmp_path)), resume=policy, log=_quiet)
    assert os.path.isfile(state_path(checkpoint))


def test_init_from__copies_the_policy_weights_and_checks_the_network(
    checkpoint: str, tmp_path: object
) -> None:
    warm = Trainer(_tiny(str(tmp_path), init_from=checkpoint), log=_quiet)
    source = Trainer(_tiny(os.path.join(str(tmp_path), "src")), resume=checkpoint, log=_quiet)
    for k, v in source.model.policy.state_dict().items():
        assert torch.equal(v, warm.model.policy.state_dict()[k]), k
    assert warm.model.num_timesteps == 0
    with pytest.raises(IncompatibleCheckpointError, match="net_arch"):
        Trainer(_tiny(str(tmp_path), init_from=checkpoint, net_arch=[8]), log=_quiet)


def test_policy_agent__refuses_a_table_with_other_rules(checkpoint: str) -> None:
    agent = make_agent(checkpoint)
    with pytest.raises(IncompatibleCheckpointError, match=r"rules.work_piles: .* has 4, the table has 5"):
        agent.reset(nertz_env.make_config(num_players=P, work_piles=5), 0, 0)


def test_policy_agent__unknown_spec_parameter_is_named(checkpoint: str) -> None:
    from nertz_env.agents import AgentSpecError

    with pytest.raises(AgentSpecError, match="no parameter temperature"):
        make_agent(checkpoint + ":temperature=2")


def test_policy_agent__zip_without_nertz_record_plays_only_at_tables_of_its_spaces(
    checkpoint: str, tmp_path: object
) -> None:
    # a zip without a record (as SB3 saves one trained outside nertz-train) plays where its spaces fit
    # (tests/test_eval_cli.py covers such models end to end); training's init_from still needs the record
    bare = os.path.join(str(tmp_path), "bare.zip")
    with zipfile.ZipFile(checkpoint) as src, zipfile.ZipFile(bare, "w") as dst:
        for name in src.namelist():
            if name != "nertz_meta.json":
                dst.writestr(name, src.read(name))
    agent = make_agent(bare)
    agent.reset(nertz_env.make_config(num_players=P), 0, 0)
    with pytest.raises(IncompatibleCheckpointError, match="no nertz-env record"):
        agent.reset(nertz_env.make_config(num_players=P + 1), 0, 0)
    from nertz_env.train.policy_agent import load_policy

    with pytest.raises(CheckpointError, match="no nertz-env record"):
        load_policy(bare)


# ---------------------------------------------------------------- configuration and the command
def test_cli__flags_override_the_file_which_overrides_defaults(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "run.toml")
    with open(path, "w") as f:
        f.write(
            "n_steps = 32\n[vector]\nnum_tables = 8\n[shaping]\nscale = 1.0\n[rules]\ndraw = 1\n"
        )
    args = build_parser().parse_args(
        ["--config", path, "--n-steps", "16", "--no-shaping", "--rule", "jokers=1"]
    )
    cfg = config_from_args(args)
    assert cfg.vector is not None and (cfg.vector.num_tables, cfg.n_steps, cfg.shaping) == (8, 16, None)
    assert cfg.rules == {"draw": 1, "jokers": 1}


@pytest.mark.parametrize(
    "name",
    # the rllib_* configs are the RLlib backend's (no shaping there): tests/test_rllib.py builds them
    sorted(f for f in os.listdir(os.path.join(os.path.dirname(__file__), "..", "train", "configs")) if not f.startswith("rllib")),
)
def test_config__every_shipped_config_file_is_valid(name: str) -> None:
    path = os.path.join(os.path.dirname(__file__), "..", "train", "configs", name)
    cfg = config_from_args(build_parser().parse_args(["--config", path]))
    assert cfg.mode == "vector" and cfg.shaping is not None
    if name.startswith("selfplay"):  # every seat learns: no opponents to draw
        assert cfg.pool is None and cfg.learners == cfg.num_players and cfg.relative_reward
    else:
        assert cfg.pool is not None
    if name.startswith("dagger_"):
        assert cfg.pool is not None and cfg.pool.opponents["search"] > cfg.pool.opponents["heuristic"]


def test_cli__bad_options_and_missing_checkpoints_are_named(
    tmp_path: object, capsys: pytest.CaptureFixture
) -> None:
    path = os.path.join(str(tmp_path), "run.json")
    with open(path, "w") as f:
        json.dump({"num_tabels": 8}, f)
    with pytest.raises(ConfigError, match="num_tabels"):
        config_from_args(build_parser().parse_args(["--config", path]))
    with pytest.raises(ConfigError, match="draw"):
        TrainConfig.from_dict({"rules": {"draw": 7}})
    assert main(["--resume", os.path.join(str(tmp_path), "gone.zip")]) == 2
    assert "checkpoint file not found" in capsys.readouterr().err


# ---------------------------------------------------------------- the learning signal
def _learn_and_evaluate(run_dir: str, steps: int, baseline: str, deals: int) -> Any:
    cfg = _tiny(
        run_dir,
        num_tables=32,
        n_steps=32,
        batch_size=1024,
        n_epochs=4,
        net_arch=[64, 64],
        shaping=True,
        total_timesteps=steps,
        eval_deals=deals,
        eval_opponents=[baseline],
    )
    report = Trainer(cfg, log=_quiet).train()
    (row,) = report["eval"]
    return row


def test_train__a_short_self_play_run_beats_random(tmp_path: object) -> None:
    row = _learn_and_evaluate(os.path.join(str(tmp_path), "run"), 32 * 1024, "random", deals=5)
    assert row["diff_low"] > 0, row  # the 95% interval of (policy - random seats) lies above zero


@pytest.mark.long
def test_train__a_longer_self_play_run_beats_greedy(tmp_path: object) -> None:
    """256k transitions of self-play (about 20 s on 2 cores, so in CI's long-tests phase; the short run above
    stays in the README's command)."""
    row = _learn_and_evaluate(os.path.join(str(tmp_path), "run"), 256 * 1024, "greedy", deals=20)
    assert row["diff_low"] > 0, row


# ---------------------------------------------------------------- behaviour cloning (train/imitate.py)
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
    from stable_baselines3.common.vec_env import DummyVecEnv

    bare = RelativeReward(DummyVecEnv([lambda: NertzSingleAgentEnv(num_players=3)]))
    size = env.observation_space.shape
    bare.venv.envs[0].step = lambda a: (np.zeros(size, np.float32), 0.0, False, False, {})  # type: ignore[attr-defined]
    bare.reset()
    with pytest.raises(KeyError, match="rivals_reward"):
        bare.step(np.array([WAIT]))


def test_imitation_returns__discount_the_shaped_rewards_backwards() -> None:
    from nertz_env.train.imitate import _returns

    # 3 steps: the Nertz pile goes 3 -> 2 -> 2, rewards 1, 0, -4 (the round's end penalty for 2 cards)
    got = _returns([1.0, 0.0, -4.0], [3, 2, 2], gamma=0.5, coef=2.0, scale=1.0)
    # shaped: r0 = 1 + (-4 - -6) = 3; r1 = 0 + (-4 - -4) = 0; r2 = -4 + (0 - -4) = 0
    np.testing.assert_allclose(got, [3.0 + 0.5 * 0.0 + 0.25 * 0.0, 0.0, 0.0])
    plain = _returns([1.0, 0.0, -4.0], [3, 2, 2], gamma=1.0, coef=0.0, scale=1.0)
    np.testing.assert_allclose(plain, [-3.0, -4.0, -4.0])


def test_imitation__fits_the_teacher_and_writes_a_policy_that_init_from_and_eval_read(tmp_path: Any) -> None:
    from nertz_env.train.imitate import imitate

    out = str(tmp_path / "bc.zip")
    res = imitate(out, teacher="heuristic", num_players=3, samples=6000, seed=3, net_arch=[64], epochs=10, log=_quiet)
    assert res["samples"] >= 6000 and res["accuracy"] > 0.6, res
    meta = read_meta(out)
    assert meta["num_players"] == 3 and meta["mode"] == "imitation"
    agent = make_agent(out + ":deterministic=true")
    env = nertz_env.parallel_env(num_players=3)
    obs, _ = env.reset(seed=1)
    agent.reset(env.config, 0, seed=0)
    for _ in range(30):
        a = agent.act(obs["player_0"]["observation"], obs["player_0"]["action_mask"])
        assert obs["player_0"]["action_mask"][a] == 1
        obs, *_ = env.step({"player_0": a, "player_1": 0, "player_2": 0})
    trainer = Trainer(_tiny(str(tmp_path / "run"), num_players=3, net_arch=[64], init_from=out), log=_quiet)
    p = trainer.model.policy.state_dict()
    from nertz_env.train.policy_agent import load_policy

    q = load_policy(out)[0].state_dict()
    assert all(torch.equal(p[k], q[k]) for k in q)
    with pytest.raises(ValueError, match="samples"):
        imitate(out, teacher="heuristic", samples=0, log=_quiet)
    with pytest.raises(ValueError, match="dagger"):
        imitate(out, teacher="heuristic", samples=10, dagger_rounds=-1, log=_quiet)


def test_imitation__relative_returns_are_the_score_minus_the_rivals_mean() -> None:
    from nertz_env.train.imitate import collect

    config = nertz_env.make_config(num_players=3)
    plain = collect("heuristic", config, 10, seed=5, gamma=1.0, shaping=False)  # one round, same deal twice
    relative = collect("heuristic", config, 10, seed=5, gamma=1.0, shaping=False, relative_reward=True)
    scores = plain.returns[:3]  # every seat's first record: with gamma 1 and no shaping, its round score
    assert len(set(scores.tolist())) > 1
    np.testing.assert_allclose(relative.returns[:3], scores - (scores.sum() - scores) / 2, atol=1e-5)


def test_dagger__the_student_drives_one_seat_and_the_teacher_labels_it() -> None:
    from nertz_env.train.imitate import collect

    config = nertz_env.make_config(num_players=3)

    class Waiter:  # a student that always waits: the teacher's labels must still be its own moves
        name = "waiter"

        def reset(self, config: Any, seat: int, seed: int | None = None) -> None:
            self.seat = seat

        def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
            return WAIT

    teacher_only = collect("heuristic", config, 600, seed=2)
    dagger = collect("heuristic", config, 600, seed=2, student=Waiter())
    # seat 0 of the first round waits all the time, so that round is not the teacher-only round ...
    assert not np.array_equal(dagger.obs[:600], teacher_only.obs[:600])
    # ... but every label is a legal teacher move, and the driven seat's labels are not all waits
    assert dagger.masks[np.arange(len(dagger.actions)), dagger.actions].all()
    driven = dagger.actions[0 : 3 * 200 : 3]  # seat 0's records of the first 200 ticks
    assert (driven != WAIT).any()


def test_imitation__teachers_in_threads_record_exactly_what_one_thread_records() -> None:
    from nertz_env.train.imitate import collect

    config = nertz_env.make_config(num_players=3)
    one = collect("search", config, 400, seed=9)
    two = collect("search", config, 400, seed=9, teacher_threads=2)
    for field in ("obs", "masks", "actions", "returns"):
        assert np.array_equal(getattr(one, field), getattr(two, field)), field
    with pytest.raises(ValueError, match="teacher_threads"):
        collect("search", config, 10, teacher_threads=0)


def test_dagger__checkpoints_every_round_and_the_last_is_the_saved_policy(tmp_path: Any) -> None:
    from nertz_env.train.imitate import main as imitate_main
    from nertz_env.train.policy_agent import load_policy

    out, ckpt = tmp_path / "bc.zip", tmp_path / "rounds"
    args = ["--out", str(out), "--teacher", "greedy", "--players", "2", "--samples", "300", "--net-arch", "16",
            "--epochs", "1", "--dagger-rounds", "2", "--dagger-samples", "200", "--dagger-epochs", "1",
            "--checkpoint-dir", str(ckpt)]
    assert imitate_main(args) == 0
    assert sorted(p.name for p in ckpt.glob("*.zip")) == ["round_00.zip", "round_01.zip", "round_02.zip"]
    assert [read_meta(str(ckpt / f"round_0{k}.zip"))["imitation"]["dagger_rounds"] for k in range(3)] == [0, 1, 2]
    last, final = load_policy(str(ckpt / "round_02.zip"))[0].state_dict(), load_policy(str(out))[0].state_dict()
    first = load_policy(str(ckpt / "round_00.zip"))[0].state_dict()
    assert all(torch.equal(last[k], final[k]) for k in final)
    assert not all(torch.equal(first[k], final[k]) for k in final)  # the rounds did fit something
    bad = tmp_path / "never"
    assert imitate_main(["--out", str(out), "--teacher", "no_such_agent", "--checkpoint-dir", str(bad)]) == 2
    assert not bad.exists()  # a bad teacher spec is refused before any folder is made


def test_learning_curve_plot__draws_eval_csv_and_reports_a_missing_file(tmp_path: Any) -> None:
    pytest.importorskip("matplotlib")
    from nertz_env.train.evaluate import EvalRow, append_csv
    from nertz_env.train.plot import main as plot_main
    from nertz_env.train.plot import read_eval

    rows = [
        EvalRow(t, b, 10, 40, 1.0, 0.5, 2.0, d, d - 1, d + 1, 0.2, 0.3, 0, 1.0, "x.zip")
        for t, d in ((100, -2.0), (200, 0.5))
        for b in ("heuristic", "search")
    ]
    append_csv(str(tmp_path / "eval.csv"), rows)
    got = read_eval(str(tmp_path))
    assert [r["diff"] for r in got["search"]] == [-2.0, 0.5]
    out = tmp_path / "curve.png"
    assert plot_main([str(tmp_path), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot_main([str(tmp_path / "nowhere")]) == 2


def test_checkpoint_evaluation__plays_every_checkpoint_once_and_feeds_the_plot(
    checkpoint: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from nertz_env.train.evaluate import (
        checkpoint_eval_path,
        evaluate_run,
        paired_with_start,
        read_per_deal,
        run_checkpoints,
    )
    from nertz_env.train.evaluate import main as evaluate_main

    run = str(tmp_path / "run")
    Trainer(_tiny(run, init_from=checkpoint, total_timesteps=256, checkpoint_every=128), log=_quiet).train()
    points = run_checkpoints(run)
    assert points[0] == (0, checkpoint)  # the start policy first, as step 0
    assert [s for s, _ in points[1:]] == sorted(s for s, _ in points[1:]) and len(points) >= 3
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
        assert e.n == 2 and e.mean == pytest.approx(
            sum(per_deal[(s, "random")][d] - first[d] for d in (0, 1)) / 2
        )
    # an interrupted or repeated evaluation plays only what is missing: the rows written are kept
    with open(out, encoding="utf-8") as f:
        kept = f.readlines()
    with open(out, "w", encoding="utf-8") as f:
        f.writelines(kept[:-1])
    played: list[str] = []
    evaluate_run(run, ["random"], deals=2, seed=1, log=played.append)
    with open(out, encoding="utf-8") as f:
        assert len(f.readlines()) == len(kept) and len(played) == 1
    os.remove(checkpoint_eval_path(run, 2, 1, per_deal=True))  # lost per-deal records are played again,
    evaluate_run(run, ["random"], deals=2, seed=1, log=_quiet)  # without writing the rows twice
    with open(out, encoding="utf-8") as f:
        assert len(f.readlines()) == len(kept)
    assert read_per_deal(checkpoint_eval_path(run, 2, 1, per_deal=True)) == per_deal
    sampled = checkpoint_eval_path(run, 2, 1, deterministic=False)  # sampled play never mixes with it
    assert sampled != out and "stochastic" in sampled
    pytest.importorskip("matplotlib")
    from nertz_env.train.plot import checkpoint_evals
    from nertz_env.train.plot import main as plot_main

    assert checkpoint_evals(run) == [(os.path.basename(out), "checkpoints, 2 deals, seed 1")]
    png = tmp_path / "curve.png"
    assert plot_main([run, "--out", str(png)]) == 0  # no eval.csv in this run: the checkpoint rows alone
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    assert evaluate_main([run, "--deals", "2", "--seed", "1", "--baselines", "random"]) == 0  # all done
    printed = capsys.readouterr().out
    assert "minus the first point" in printed and printed.strip().endswith(out)
    assert evaluate_main([str(tmp_path / "nowhere")]) == 2
    assert "run directory not found" in capsys.readouterr().err
    assert evaluate_main([run, "--baselines", "no_such_agent"]) == 2
    assert "no_such_agent" in capsys.readouterr().err


def test_shipped_models__play_by_name_deterministically(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from nertz_env.agents import registry
    from nertz_env.train.imitate import imitate

    models = tmp_path / "models"
    models.mkdir()
    imitate(str(models / "tiny.zip"), teacher="greedy", num_players=2, samples=500, net_arch=[16], epochs=1, log=_quiet)
    monkeypatch.setattr(registry, "MODELS_DIR", str(models))
    assert "tiny" in registry.known_agents()
    agent = make_agent("tiny")
    assert agent.name == "tiny" and agent.deterministic
    assert not make_agent("tiny:deterministic=false").deterministic


def test_the_shipped_model__loads_plays_legally_and_refuses_other_tables() -> None:
    from nertz_env.agents.registry import shipped_models
    from nertz_env.train.meta import IncompatibleCheckpointError

    assert "ppo" in shipped_models(), "agents/models/ppo.zip is missing from the package"
    agent = make_agent("ppo")
    env = nertz_env.parallel_env(num_players=4)
    obs, _ = env.reset(seed=3)
    agent.reset(env.config, 0, seed=0)
    for _ in range(40):
        a = agent.act(obs["player_0"]["observation"], obs["player_0"]["action_mask"])
        assert obs["player_0"]["action_mask"][a] == 1
        obs, *_ = env.step({name: (a if name == "player_0" else 0) for name in env.agents})
        if not env.agents:
            break
    with pytest.raises(IncompatibleCheckpointError, match="player"):
        agent.reset(nertz_env.make_config(num_players=3), 0)
