"""Client libraries, each by its own route on a small table (docs/clients/index.md); those whose pins conflict
with the dev extras in venvs of their own (marked ``isolated``: tests/isolated_venv.py, tests/clients/)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils import env_checker
from gymnasium.wrappers.vector import RecordEpisodeStatistics
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, render_test, seed_test

import nertz_env
from isolated_venv import dist, env_for, run, run_script, venv
from nertz_env.train import NertzSingleAgentEnv

SCRIPTS = Path(__file__).parent / "clients"


def _legal(mask: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(np.asarray(mask))))


# ---------------------------------------------------------------- PettingZoo's own tests
@pytest.mark.parametrize("obs_key", ["observation", "observations", None])
def test_pettingzoo_parallel_api_test__passes(obs_key: str | None) -> None:
    parallel_api_test(nertz_env.parallel_env(obs_key=obs_key), num_cycles=400)


def test_obs_key__picks_the_observations_form_and_the_mask_is_in_one_place() -> None:
    """``obs_key``: PettingZoo's dict, RLlib's ``"observations"`` or the bare vector, the same game; the mask
    in one place (never both: TorchRL's PettingZooWrapper fails on that); any other is one clear error."""
    envs = {k: nertz_env.parallel_env(num_players=2, obs_key=k) for k in ("observation", "observations", None)}
    outs = {k: e.reset(seed=4) for k, e in envs.items()}
    for _ in range(5):
        o = outs["observation"][0]
        for a in o:
            np.testing.assert_array_equal(outs["observations"][0][a]["observations"], o[a]["observation"])
            np.testing.assert_array_equal(outs[None][0][a], o[a]["observation"])
            np.testing.assert_array_equal(outs[None][1][a]["action_mask"], o[a]["action_mask"])
            assert "action_mask" not in outs["observation"][1][a] and "action_mask" not in outs["observations"][1][a]
        acts = {a: int(np.flatnonzero(o[a]["action_mask"])[-1]) for a in o}
        outs = {k: (lambda r: (r[0], r[4]))(e.step(acts)) for k, e in envs.items()}
    assert envs[None].observation_space("player_0") == envs["observation"].observation_space("player_0")["observation"]
    with pytest.raises(ValueError, match="obs_key must be 'observation', 'observations' or None, got 'obs'"):
        nertz_env.parallel_env(obs_key="obs")


@pytest.mark.parametrize("rules", [{}, {"num_players": 2, "jokers": 1}, {"turn_based": True, "teams": True}])
def test_pettingzoo_api_test__passes_on_aec(rules: dict) -> None:
    api_test(nertz_env.env(**rules), num_cycles=300)


def test_pettingzoo_seed_test__aec_is_deterministic() -> None:
    seed_test(nertz_env.env, num_cycles=300)


def test_pettingzoo_max_cycles_test__passes_on_the_module() -> None:
    max_cycles_test(nertz_env)  # the module's parallel_env(max_cycles=4) and env(max_cycles=4)


def test_pettingzoo_render_test__every_render_mode() -> None:
    render_test(lambda render_mode=None: nertz_env.env(render_mode=render_mode, num_players=2))


# ---------------------------------------------------------------- Tianshou
def test_tianshou_trainer__one_epoch_of_its_multi_agent_recipe() -> None:
    """Tianshou 2.0's multi-agent recipe (its tic-tac-toe example) runs one epoch with gradient steps."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("tianshou")
    from tianshou.algorithm import (
        DQN,
        MARLRandomDiscreteMaskedOffPolicyAlgorithm,
        MultiAgentOffPolicyAlgorithm,
    )
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.env.pettingzoo_env import PettingZooEnv
    from tianshou.trainer import OffPolicyTrainerParams
    from tianshou.utils.net.common import Net

    def get_env() -> PettingZooEnv:
        return PettingZooEnv(nertz_env.env(num_players=2, max_ticks=20))

    torch.manual_seed(0)
    env = get_env()
    net = Net(
        state_shape=env.observation_space["observation"].shape, action_shape=env.action_space.n, hidden_sizes=[32]
    )
    learner = DQN(
        policy=DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.05),
        optim=AdamOptimizerFactory(lr=1e-3),
        n_step_return_horizon=3,
        gamma=0.9,
        target_update_freq=50,
    )
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=[learner, opponent], env=env)
    train_envs = DummyVectorEnv([get_env for _ in range(2)])
    test_envs = DummyVectorEnv([get_env])
    train_envs.seed(0)
    test_envs.seed(1)
    buffer = VectorReplayBuffer(2000, len(train_envs))
    train_collector = Collector[CollectStats](algorithm, train_envs, buffer, exploration_noise=True)
    test_collector = Collector[CollectStats](algorithm, test_envs, exploration_noise=True)
    train_collector.reset()
    train_collector.collect(n_step=16 * len(train_envs))
    before = [p.detach().clone() for p in net.parameters()]
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=1,
            epoch_num_steps=60,
            collection_step_num_env_steps=10,
            test_step_num_episodes=1,
            batch_size=32,
            update_step_num_gradient_steps_per_sample=0.2,
            multi_agent_return_reduction=lambda rews: rews[:, 0],
            show_progress=False,
            verbose=False,
        )
    )
    assert result.train_step >= 60 and result.update_step >= 5 and result.test_episode >= 1
    assert any(not torch.equal(a, b) for a, b in zip(before, net.parameters(), strict=True))
    # the buffer's infos: every key on every row, one dtype each (no NaN padding)
    info = buffer.info[buffer.sample_indices(0)]  # every stored row
    assert info.illegal.dtype == bool and info.round_end.dtype.kind == info.score.dtype.kind == "i"
    assert set(info.round_end.tolist()) <= {0, 1, 2, 3}


# ---------------------------------------------------------------- Gymnasium's vector wrappers
def test_gymnasium_record_episode_statistics__returns_equal_the_recomputed_returns() -> None:
    """RecordEpisodeStatistics: each return is the seat's rewards and round score, each length its ticks."""
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


# ---------------------------------------------------------------- Stable-Baselines3
def test_sb3_subproc_vec_env__ships_single_agent_envs_to_two_processes() -> None:
    """Env instances shipped to SubprocVecEnv's workers play as they do locally, masks included."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

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


# ---------------------------------------------------------------- Stable-Baselines3 and SuperSuit
def test_sb3_check_env__passes_on_the_registered_gymnasium_id() -> None:
    """SB3's ``check_env`` on ``gymnasium.make`` by id and on the class it makes."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_checker import check_env

    env = gymnasium.make("nertz_env/Nertz-v0", num_players=2, max_ticks=30)
    check_env(env.unwrapped, warn=True)
    check_env(env, warn=True)


def _parts(x: object) -> list[object]:
    """Every dict, list and array inside ``x``."""
    if isinstance(x, dict):
        return [x, *(p for v in x.values() for p in _parts(v))]
    if isinstance(x, (list, tuple)):
        return [*([x] if isinstance(x, list) else []), *(p for v in x for p in _parts(v))]
    return [x] if isinstance(x, np.ndarray) else []


def _shares(a: object, b: object) -> bool:
    pa, pb = _parts(a), _parts(b)
    arrays = [(x, y) for x in pa for y in pb if isinstance(x, np.ndarray) and isinstance(y, np.ndarray)]
    return bool({id(x) for x in pa} & {id(y) for y in pb}) or any(np.shares_memory(x, y) for x, y in arrays)


def test_gymnasium_id__every_call_returns_new_observation_and_info_objects() -> None:
    """No two calls of ``reset``/``step`` share an object: users keep them (Gymnasium 1.4 checks it)."""
    env = gymnasium.make("nertz_env/Nertz-v0", num_players=3, max_ticks=30).unwrapped
    calls = [env.reset(seed=3)]
    for _ in range(3):
        obs, _, _, _, info = env.step(env.action_space.sample())
        calls.append((obs, info))
    calls.append(env.reset(seed=4))
    for i, first in enumerate(calls):
        for second in calls[i + 1 :]:
            assert not _shares(first[0], second[0]) and not _shares(first[1], second[1])
    if hasattr(env_checker, "check_returned_data_not_reused"):
        env_checker.check_returned_data_not_reused(env)


def test_supersuit_concat_vec_envs__sb3s_seed_and_maskableppos_masks_are_supersuits_gaps() -> None:
    """Pins SuperSuit 3.11's gaps with SB3 that docs/clients/index.md names (no ``seed``, no ``has_attr``):
    when SuperSuit fills either, this fails: update the docs."""
    ss = pytest.importorskip("supersuit")
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO

    vec = ss.pettingzoo_env_to_vec_env_v1(nertz_env.parallel_env(num_players=2, max_ticks=20))
    envs = ss.concat_vec_envs_v1(vec, 2, num_cpus=2, base_class="stable_baselines3")
    try:
        with pytest.raises(AttributeError, match="'ProcConcatVec' object has no attribute 'seed'"):
            PPO("MultiInputPolicy", envs, seed=0, n_steps=8, batch_size=8)
        with pytest.raises(AttributeError, match="'ProcConcatVec' object has no attribute 'has_attr'"):
            MaskablePPO("MultiInputPolicy", envs, n_steps=8, batch_size=8).learn(16)
    finally:
        envs.close()


def test_sb3_maskable_ppo__trains_with_masks_on_nertz_vec_env() -> None:
    """The supported SB3 route: MaskablePPO on NertzVecEnv trains with masks and plays no illegal action."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import is_masking_supported

    from nertz_env.train import NertzVecEnv

    envs = NertzVecEnv(2, num_players=2, rules={"max_ticks": 25}, seed=0)
    assert is_masking_supported(envs)
    model = MaskablePPO("MlpPolicy", envs, n_steps=32, batch_size=32, n_epochs=1, seed=0, policy_kwargs={"net_arch": [32]})
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(128)
    assert model.num_timesteps >= 128 and envs.episodes >= 2 and envs.illegal_actions == 0
    assert any(not torch.equal(a, b) for a, b in zip(before, model.policy.parameters(), strict=True))


# ---------------------------------------------------------------- a CleanRL-style PPO loop
def test_cleanrl_style_ppo__a_few_updates_on_agent_vector_env_with_masks() -> None:
    """CleanRL's ppo.py loop, masked, with ``agent_vector_env`` as its ``envs`` (docs/clients/routes.md)."""
    torch = pytest.importorskip("torch")
    from torch import nn

    torch.manual_seed(0)
    envs = RecordEpisodeStatistics(nertz_env.agent_vector_env(2, num_players=2, max_ticks=25))
    n, num_steps, updates, gamma, gae_lambda, clip = envs.num_envs, 32, 3, 0.99, 0.95, 0.2
    obs_dim = envs.single_observation_space["observation"].shape[0]
    n_act = envs.single_action_space.n
    actor = nn.Sequential(nn.Linear(obs_dim, 32), nn.Tanh(), nn.Linear(32, n_act))
    critic = nn.Sequential(nn.Linear(obs_dim, 32), nn.Tanh(), nn.Linear(32, 1))
    params = [*actor.parameters(), *critic.parameters()]
    optimizer = torch.optim.Adam(params, lr=2.5e-4, eps=1e-5)

    def dist(x: torch.Tensor, mask: torch.Tensor) -> torch.distributions.Categorical:
        return torch.distributions.Categorical(logits=actor(x).masked_fill(~mask, -1e8))

    obs_buf = torch.zeros(num_steps, n, obs_dim)
    mask_buf = torch.zeros(num_steps, n, n_act, dtype=torch.bool)
    act_buf, logp_buf, rew_buf, done_buf, val_buf = (torch.zeros(num_steps, n) for _ in range(5))
    o, _ = envs.reset(seed=0)
    next_obs, next_mask = torch.as_tensor(o["observation"]), torch.as_tensor(o["action_mask"]).bool()
    next_done = torch.zeros(n)
    illegal = episodes = 0
    for _ in range(updates):
        for step in range(num_steps):
            obs_buf[step], mask_buf[step], done_buf[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                d = dist(next_obs, next_mask)
                action = d.sample()
                logp_buf[step], val_buf[step] = d.log_prob(action), critic(next_obs).squeeze(-1)
            act_buf[step] = action
            o, reward, term, trunc, info = envs.step(action.numpy())
            illegal += int(info["illegal"].sum())
            episodes += int(info.get("_episode", np.zeros(n, bool)).sum())
            rew_buf[step] = torch.as_tensor(reward)
            next_obs, next_mask = torch.as_tensor(o["observation"]), torch.as_tensor(o["action_mask"]).bool()
            next_done = torch.as_tensor(term | trunc, dtype=torch.float32)
        with torch.no_grad():  # GAE, as CleanRL computes it
            next_value = critic(next_obs).squeeze(-1)
            adv = torch.zeros_like(rew_buf)
            last = torch.zeros(n)
            for t in reversed(range(num_steps)):
                nonterminal = 1.0 - (next_done if t == num_steps - 1 else done_buf[t + 1])
                nv = next_value if t == num_steps - 1 else val_buf[t + 1]
                delta = rew_buf[t] + gamma * nv * nonterminal - val_buf[t]
                adv[t] = last = delta + gamma * gae_lambda * nonterminal * last
            ret = adv + val_buf
        b_obs, b_mask = obs_buf.reshape(-1, obs_dim), mask_buf.reshape(-1, n_act)
        b_act, b_logp, b_adv, b_ret = act_buf.reshape(-1), logp_buf.reshape(-1), adv.reshape(-1), ret.reshape(-1)
        for _epoch in range(2):
            for mb in torch.randperm(num_steps * n).split(32):
                d = dist(b_obs[mb], b_mask[mb])
                ratio = (d.log_prob(b_act[mb]) - b_logp[mb]).exp()
                a = (b_adv[mb] - b_adv[mb].mean()) / (b_adv[mb].std() + 1e-8)
                pg_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - clip, 1 + clip)).mean()
                v_loss = 0.5 * (critic(b_obs[mb]).squeeze(-1) - b_ret[mb]).pow(2).mean()
                loss = pg_loss - 0.01 * d.entropy().mean() + 0.5 * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(params, 0.5)
                optimizer.step()
                assert torch.isfinite(loss)
    envs.close()
    # a masked policy never plays an illegal action; the envs' seats finished rounds along the way
    assert illegal == 0 and episodes >= n
    assert (b_mask.gather(1, b_act.long()[:, None])).all()



# ---------------------------------------------------------------- TorchRL
@pytest.mark.parametrize("obs_key", ["observation", None], ids=["mask_in_obs", "mask_in_infos"])
def test_torchrl_pettingzoo_wrapper__rollout_samples_only_legal_actions(obs_key: str | None) -> None:
    """TorchRL's PettingZooWrapper finds the mask in the observation or the infos: its rollout is legal."""
    pytest.importorskip("torchrl")
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    env = PettingZooWrapper(
        env=nertz_env.parallel_env(num_players=2, max_ticks=20, obs_key=obs_key), categorical_actions=True, seed=0
    )
    assert env.group_map == {"player": ["player_0", "player_1"]}
    rollout = env.rollout(40, break_when_any_done=False)
    mask, action = rollout["player", "action_mask"], rollout["player", "action"]
    assert mask.shape[1:] == (2, env.action_spec["player", "action"].space.n) and not mask.all()
    assert mask.gather(-1, action[..., None]).all()  # every action sampled was legal
    assert not rollout["next", "player", "info", "illegal"].any()
    assert rollout["next", "player", "done"].any()  # a round ended (max_ticks) and the env was reset


def test_torchrl_mappo__trains_with_masks_and_a_critic_on_the_global_state() -> None:
    """TorchRL's MAPPO as its docs show it (``use_mask``, ``return_state``): three iterations train."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchrl")
    from tensordict.nn import TensorDictModule
    from torch import nn
    from torchrl.collectors import Collector
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.modules import MaskedCategorical, MultiAgentMLP, ProbabilisticActor
    from torchrl.objectives import ClipPPOLoss, ValueEstimators

    G = "player"  # TorchRL's group of the agents player_0 .. player_{n-1}
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchRL notes that it tests PettingZoo 1.24.3
        env = PettingZooWrapper(nertz_env.parallel_env(num_players=2, max_ticks=40), use_mask=True,
                                return_state=True, categorical_actions=True, seed=0)
    assert env.group_map == {G: ["player_0", "player_1"]}
    obs_key = (G, "observation", "observation")  # the Dict observation's vector; its mask became the action mask
    obs_size = env.observation_spec[obs_key].shape[-1]
    state_size = env.observation_spec["state"].shape[-1]
    n_actions = env.full_action_spec[G, "action"].space.n
    assert state_size == nertz_env.state_layout(nertz_env.make_config(num_players=2)).size
    assert (G, "action_mask") in env.observation_spec.keys(True, True)
    policy_net = MultiAgentMLP(n_agent_inputs=obs_size, n_agent_outputs=n_actions, n_agents=2, centralized=False,
                               share_params=True, depth=1, num_cells=64)
    policy = ProbabilisticActor(
        TensorDictModule(policy_net, in_keys=[obs_key], out_keys=[(G, "logits")]),
        in_keys={"logits": (G, "logits"), "mask": (G, "action_mask")}, out_keys=[(G, "action")],
        distribution_class=MaskedCategorical, return_log_prob=True, log_prob_key=(G, "action_log_prob"),
    )
    value_net = nn.Sequential(nn.Linear(state_size, 64), nn.Tanh(), nn.Linear(64, 2), nn.Unflatten(-1, (2, 1)))
    critic = TensorDictModule(value_net, in_keys=["state"], out_keys=[(G, "state_value")])  # every agent's value
    loss = ClipPPOLoss(actor_network=policy, critic_network=critic, entropy_coeff=0.01, normalize_advantage=True)
    loss.set_keys(reward=(G, "reward"), action=(G, "action"), sample_log_prob=(G, "action_log_prob"),
                  value=(G, "state_value"), done=(G, "done"), terminated=(G, "terminated"))
    loss.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.95)
    optim = torch.optim.Adam(loss.parameters(), lr=3e-3)
    before = [p.detach().clone() for p in critic.parameters()]
    collector = Collector(env, policy, frames_per_batch=120, total_frames=360)
    iterations = 0
    for data in collector:
        assert not data["next", G, "info", "illegal"].any()  # the env flags an illegal action in its infos
        assert data["state"].shape[-1] == state_size
        with torch.no_grad():
            loss.value_estimator(data, params=loss.critic_network_params, target_params=loss.target_critic_network_params)
        for _ in range(2):
            parts = loss(data)
            total = parts["loss_objective"] + parts["loss_critic"] + parts["loss_entropy"]
            assert torch.isfinite(total)
            optim.zero_grad()
            total.backward()
            optim.step()
        iterations += 1
    collector.shutdown()
    assert iterations == 3 and any(not torch.equal(b, p) for b, p in zip(before, critic.parameters(), strict=True))


# ---------------------------------------------------------------- skrl (its PettingZoo wrapper, IPPO)
def _skrl_ippo(fix_cfg: bool, timesteps: int = 32) -> dict:
    """skrl 2.1's IPPO recipe of docs/clients/routes.md; the policy unflattens the mask with skrl's helper."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("skrl")
    from pettingzoo.utils import BaseParallelWrapper
    from skrl.envs.wrappers.torch import wrap_env
    from skrl.memories.torch import RandomMemory
    from skrl.models.torch import CategoricalMixin, DeterministicMixin, Model
    from skrl.multi_agents.torch.ippo import IPPO, IPPO_CFG
    from skrl.trainers.torch import SequentialTrainer
    from skrl.utils.spaces.torch import unflatten_tensorized_space

    class Policy(CategoricalMixin, Model):
        def __init__(self, observation_space, action_space, device):  # type: ignore[no-untyped-def]
            Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
            CategoricalMixin.__init__(self, unnormalized_log_prob=True)
            size = observation_space["observation"].shape[0]
            self.net = torch.nn.Sequential(torch.nn.Linear(size, 64), torch.nn.Tanh(), torch.nn.Linear(64, action_space.n))

        def compute(self, inputs, role=""):  # type: ignore[no-untyped-def]
            obs = unflatten_tensorized_space(self.observation_space, inputs["observations"])
            return self.net(obs["observation"]).masked_fill(obs["action_mask"] == 0, -1e8), {}

    class Value(DeterministicMixin, Model):
        def __init__(self, observation_space, action_space, device):  # type: ignore[no-untyped-def]
            Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
            DeterministicMixin.__init__(self)
            size = observation_space["observation"].shape[0]
            self.net = torch.nn.Sequential(torch.nn.Linear(size, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))

        def compute(self, inputs, role=""):  # type: ignore[no-untyped-def]
            return self.net(unflatten_tensorized_space(self.observation_space, inputs["observations"])["observation"]), {}

    seen = {"steps": 0, "illegal": 0}

    class Count(BaseParallelWrapper):  # counts what the env flags; not part of the route
        def step(self, actions):  # type: ignore[no-untyped-def]
            out = super().step(actions)
            seen["steps"] += 1
            seen["illegal"] += sum(bool(i.get("illegal")) for i in out[4].values())
            return out

    torch.manual_seed(0)
    env = wrap_env(Count(nertz_env.parallel_env(num_players=2, max_ticks=30)), wrapper="pettingzoo")
    agents = env.possible_agents
    models = {a: {"policy": Policy(env.observation_space(a), env.action_space(a), env.device),
                  "value": Value(env.observation_space(a), env.action_space(a), env.device)} for a in agents}
    memories = {a: RandomMemory(memory_size=16, num_envs=env.num_envs, device=env.device) for a in agents}
    cfg = IPPO_CFG(rollouts=16, learning_epochs=2, mini_batches=2)
    if fix_cfg:  # skrl 2.1.1: expand() refuses its own {} defaults; give them per agent
        for name in ("learning_rate_scheduler", "observation_preprocessor", "state_preprocessor", "value_preprocessor"):
            setattr(cfg, f"{name}_kwargs", {a: {} for a in agents})
    before = [p.detach().clone() for p in models[agents[0]]["policy"].parameters()]
    agent = IPPO(possible_agents=agents, models=models, memories=memories, cfg=cfg, device=env.device,
                 observation_spaces=env.observation_spaces, state_spaces=env.state_spaces, action_spaces=env.action_spaces)
    trainer_cfg = {"timesteps": timesteps, "headless": True, "disable_progressbar": True, "close_environment_at_exit": False}
    SequentialTrainer(env=env, agents=agent, cfg=trainer_cfg).train()
    env.close()
    after = list(models[agents[0]]["policy"].parameters())
    seen["changed"] = any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    return seen


def test_skrl_ippo__trains_on_its_pettingzoo_wrapper_and_skrls_own_config_bug_is_pinned() -> None:
    """The route trains legally; skrl 2.1.1's ``IPPO_CFG().expand()`` refuses its own ``{}`` defaults (pinned:
    when it passes, drop the workaround from docs/clients/index.md)."""
    with pytest.raises(ValueError, match=r"Specified keys \(set\(\)\) do not match possible agents"):
        _skrl_ippo(fix_cfg=False)
    out = _skrl_ippo(fix_cfg=True)
    assert out["steps"] == 32 and out["changed"] and out["illegal"] == 0, out


# ---------------------------------------------------------------- SB3's SubprocVecEnv from python -c or a notebook
SUBPROC = """
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv
for env_id in ["nertz_env:nertz_env/Nertz-v0", "nertz_env/Nertz-v0"]:
    try:
        envs = make_vec_env(env_id, n_envs=2, vec_env_cls=SubprocVecEnv, env_kwargs={"num_players": 2})
    except Exception as e:
        print(env_id, type(e).__name__)
        continue
    print(env_id, envs.reset().shape)
    envs.close()
"""


def test_sb3_subproc_vec_env__from_python_c_the_id_names_its_module(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """From ``python -c`` SubprocVecEnv's workers lack the bare id (pinned); ``"nertz_env:id"`` works."""
    pytest.importorskip("stable_baselines3")
    out = subprocess.run([sys.executable, "-c", SUBPROC], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "nertz_env:nertz_env/Nertz-v0 (2, 406)", out.stdout + out.stderr[-2000:]
    assert lines[1].startswith("nertz_env/Nertz-v0 ") and "Namespace nertz_env not found" in out.stderr


# ---------------------------------------------------------------- clients whose pins conflict with the dev extras
# One venv on Python 3.11 (the one Python with torch's CPU wheel on this machine) for every client whose pins
# agree: the wheel's train and eval extras, RL Zoo 3, BenchMARL (TorchRL 0.11) and pufferlib-core (it requires
# torch 2.9.0: installed without its requirements). AgileRL pins TensorDict 0.13 and PettingZoo < 1.27: its own.
def _shared() -> Path:
    return venv("clients", dist()["wheel"], "train,eval", ["rl_zoo3==2.9.2", "benchmarl==1.5.2", "psutil"], torch=True,
                no_deps=["pufferlib-core==3.0.23"])


AGILERL = ["agilerl==2.58.0", "peft==0.21.2"]  # AgileRL imports peft but does not require it


@pytest.mark.isolated
def test_wheel_train_extra__nertz_train_finds_its_configs_trains_and_the_policy_plays_in_nertz_eval(tmp_path: Path) -> None:
    env = env_for(_shared())
    out = run(["nertz-train", "--config", "long_run", "--print-config"], cwd=tmp_path, env=env)
    assert json.loads(out.stdout)["num_players"] == 4  # the shipped config, found by name
    run(["nertz-train", "--num-tables", "2", "--n-steps", "16", "--batch-size", "32", "--n-epochs", "1", "--net-arch",
         "16", "--checkpoint-every", "0", "--eval-every", "0", "--eval-deals", "0", "--no-progress-bar",
         "--no-tensorboard", "--total-timesteps", "64", "--run-dir", "run"], cwd=tmp_path, env=env)
    run(["nertz-eval", "gauntlet", "run/policy.zip", "random", "--deals", "1", "--workers", "1", "--no-save",
         "--no-progress"], cwd=tmp_path, env=env)


@pytest.mark.isolated
def test_rl_zoo3_train__ppo_on_the_gymnasium_id_plays_unmasked_with_flagged_waits(tmp_path: Path) -> None:
    """RL Zoo 3 trains PPO on the id, unmasked: illegal actions are applied as flagged waits."""
    out = run_script(_shared(), SCRIPTS / "rl_zoo3_route.py", cwd=tmp_path)
    assert out["trained"] and out["decisions"] > 0 and 0 < out["illegal"] <= out["decisions"]


@pytest.mark.isolated
def test_benchmarl_custom_task__one_mappo_iteration_with_the_state_critic(tmp_path: Path) -> None:
    """BenchMARL 1.5.2, a custom task over PettingZooWrapper: one MAPPO iteration, the critic on ``state``."""
    out = run_script(_shared(), SCRIPTS / "benchmarl_task.py", cwd=tmp_path)
    assert out["iters"] == 1 and out["frames"] >= 100 and out["changed"] and out["has_state_spec"]
    assert ["state"] in out["critic_in_keys"]


@pytest.mark.isolated
def test_pufferlib_pettingzoo_puffer_env__masked_play_with_the_mask_from_the_struct_view(tmp_path: Path) -> None:
    """PettingZooPufferEnv: the mask read through the struct view keeps play legal, alone and vectorized."""
    out = run_script(_shared(), SCRIPTS / "pufferlib_route.py", cwd=tmp_path)
    assert out["episodes"] == 3 and out["illegal"] == 0 and out["fields"] == ["action_mask", "observation"]
    assert out["vec_obs_rows"] == 4 and out["vec_steps"] == 40 and out["action_space"] == "Discrete(172)"


@pytest.mark.isolated
def test_agilerl_ippo__trains_on_its_async_vec_env_and_its_own_mask_bug_is_pinned(tmp_path: Path) -> None:
    """AgileRL's IPPO on AsyncPettingZooVecEnv trains with masks through the docs' workaround for its own bug
    (pinned: when ``bug`` is None, drop the workaround)."""
    out = run_script(venv("agilerl", dist()["wheel"], requirements=AGILERL, torch=True), SCRIPTS / "agilerl_ippo.py",
                     cwd=tmp_path)
    assert out["bug"] and "truth value of an array with more than one element is ambiguous" in out["bug"]
    assert out["learns"] == 2 and out["changed"] and out["episodes"] >= 2
    assert out["decisions"] >= 128 and out["illegal"] == 0
