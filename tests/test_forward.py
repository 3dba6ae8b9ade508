"""The network's numpy forward (nertz_env.agents.forward): the same choices as torch, read without torch."""

from __future__ import annotations

import copy
import itertools
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import nertz_env
from nertz_env.agents import make_agent
from nertz_env.agents.registry import shipped_models

PPO = shipped_models()["ppo"]


def _observations(games: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every seat's observation and mask of ``games`` games of ppo against heuristic and search."""
    env = nertz_env.parallel_env(num_players=4)
    agents = [make_agent(s) for s in ("ppo", "heuristic", "ppo", "heuristic")]
    obs_l, mask_l = [], []
    for g in range(games):
        obs, _ = env.reset(seed=seed + g)
        for s, a in enumerate(agents):
            a.reset(env.config, s, seed + g * 4 + s)
        while env.agents:
            for n in env.agents:
                obs_l.append(obs[n]["observation"])
                mask_l.append(obs[n]["action_mask"].astype(bool))
            obs, *_ = env.step({n: agents[s].act(obs[n]["observation"], obs[n]["action_mask"])
                                for s, n in enumerate(env.agents)})
    return np.asarray(obs_l, dtype=np.float32), np.asarray(mask_l)


def test_arrays__saved_beside_the_zip_read_once_with_torch_when_missing_and_never_from_other_weights(
        tmp_path) -> None:
    import shutil

    import torch

    from nertz_env.agents.forward import NumpyActor, UnsupportedNetwork, arrays_path
    from nertz_env.agents.meta import read_meta
    from nertz_env.agents.policy import load_policy, numpy_actor
    from nertz_env.train.imitate import _PolicyHolder
    from nertz_env.train.trainer import save_policy

    policy, _ = load_policy(PPO)
    shipped = NumpyActor.load(PPO)  # agents/models/ppo.npz: the same arrays as torch's network
    for mine, theirs in ((shipped.weights, NumpyActor.from_policy(policy).weights), ([shipped.w_out], [
            policy.action_net.weight.detach().numpy().T])):
        assert all(a.dtype == np.float32 and np.array_equal(a, b) for a, b in zip(mine, theirs, strict=True))
    old = str(tmp_path / "old.zip")  # a zip saved before the array files: read once with torch, which writes one
    shutil.copy(PPO, old)
    with pytest.raises(UnsupportedNetwork, match="no array file"):
        NumpyActor.load(old)
    assert numpy_actor(old).activation == shipped.activation and os.path.isfile(arrays_path(old))
    assert all(np.array_equal(a, b) for a, b in zip(NumpyActor.load(old).weights, shipped.weights, strict=True))
    with torch.no_grad():  # saved again with other weights: the array file follows; a stale one is not read
        policy.action_net.bias += 1.0
    save_policy(_PolicyHolder(policy, {"net_arch": {"pi": [256, 256], "vf": [256, 256]},
                                       "activation_fn": torch.nn.ReLU}), old, read_meta(PPO))
    assert np.array_equal(NumpyActor.load(old).b_out, shipped.b_out + 1.0)
    shutil.copy(PPO, old)
    with pytest.raises(UnsupportedNetwork, match="other weights"):
        NumpyActor.load(old)


def test_numpy_forward__same_actions_as_torch_on_thousands_of_observations() -> None:
    from nertz_env.agents.forward import NumpyActor
    from nertz_env.agents.policy import load_policy, policy_probabilities

    obs, masks = _observations(20, seed=3)
    rng = np.random.default_rng(0)  # and random inputs with random legal sets, off the game's manifold
    r_obs = rng.random((2000, obs.shape[1]), dtype=np.float32)
    r_masks = rng.random((2000, masks.shape[1])) < 0.1
    r_masks[:, 0] = True
    obs, masks = np.concatenate([obs, r_obs]), np.concatenate([masks, r_masks])
    assert len(obs) > 5000
    policy, _ = load_policy(PPO)
    want = policy_probabilities(policy, obs, masks)
    actor = NumpyActor.load(PPO)
    for i in range(len(obs)):
        assert actor.first_choice(obs[i], masks[i]) == int(np.argmax(want[i])), i
    np.testing.assert_allclose(actor.probabilities(obs[0], masks[0]), want[0], atol=1e-5)
    assert all(np.array_equal(a, b) for a, b in zip(actor.weights, NumpyActor.from_policy(policy).weights, strict=True))


def test_numpy_forward__exact_ties_go_to_the_lowest_action_as_torchs_argmax(tmp_path) -> None:
    """Two actions with the same weights have the same logit: both routes take the lower index."""
    from nertz_env.agents.forward import NumpyActor
    from nertz_env.agents.meta import read_meta
    from nertz_env.agents.policy import load_policy, load_policy_agent, policy_probabilities
    from nertz_env.train.imitate import _PolicyHolder
    from nertz_env.train.trainer import save_policy

    base, _ = load_policy(PPO)
    policy = copy.deepcopy(base)
    import torch

    with torch.no_grad():  # actions 40 and 7 tie, well above every other action
        policy.action_net.weight[40] = policy.action_net.weight[7]
        policy.action_net.bias[7] += 1e4
        policy.action_net.bias[40] = policy.action_net.bias[7]
    path = str(tmp_path / "tied.zip")
    save_policy(_PolicyHolder(policy, {"net_arch": {"pi": [256, 256], "vf": [256, 256]},
                                       "activation_fn": torch.nn.ReLU}), path, read_meta(PPO))
    obs, masks = _observations(1, seed=5)
    masks[:, 7] = masks[:, 40] = True
    actor = NumpyActor.load(path)  # written by save_policy
    agent = load_policy_agent(path, deterministic=True)
    assert agent.actor is not None
    probs = policy_probabilities(policy, obs, masks)
    for i in range(len(obs)):
        assert int(np.argmax(probs[i])) == 7
        assert actor.first_choice(obs[i], masks[i]) == 7 == agent.act(obs[i], masks[i].astype(np.int8))
    masks[:, 7] = False  # alone at the top, the other one is chosen
    assert actor.first_choice(obs[0], masks[0]) == 40


def test_ppo__plays_through_make_agent_without_importing_torch() -> None:
    code = (
        "import sys, nertz_env\n"
        "from nertz_env.agents import make_agent\n"
        "env = nertz_env.parallel_env(num_players=4)\n"
        "agents = [make_agent(s) for s in ('ppo', 'heuristic', 'heuristic', 'ppo')]\n"
        "obs, _ = env.reset(seed=1)\n"
        "for s, a in enumerate(agents): a.reset(env.config, s, s)\n"
        "n = 0\n"
        "while env.agents:\n"
        "    obs, *_ = env.step({k: agents[s].act(obs[k]['observation'], obs[k]['action_mask'])"
        " for s, k in enumerate(env.agents)})\n"
        "    n += 1\n"
        "assert n > 10\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'stable_baselines3', 'sb3_contrib')))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "NUMBA_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout


def test_policy_agent__sampled_play_and_pickling_still_reach_torch() -> None:
    from nertz_env.agents.policy import PolicyAgent

    agent = make_agent("ppo")
    assert isinstance(agent, PolicyAgent) and agent.actor is not None and agent._policy is None
    obs, masks = _observations(1, seed=7)
    sampled = make_agent("ppo:deterministic=false")
    assert sampled.actor is None  # draws from torch's probabilities, as before
    sampled.reset(nertz_env.parallel_env(num_players=4).config, 0, 0)
    assert masks[0, sampled.act(obs[0], masks[0].astype(np.int8))]
    back = pickle.loads(pickle.dumps(agent))
    assert back.actor is not None and back._policy is None
    pairs = list(zip(obs[:50], masks[:50].astype(np.int8), strict=True))
    assert [back.act(o, m) for o, m in pairs] == [agent.act(o, m) for o, m in pairs]
    assert agent.policy is not None  # torch on demand (training's opponent pools batch through it)


def test_arrays__not_written_for_what_numpy_cannot_run_and_the_agent_falls_back_to_torch(tmp_path) -> None:
    import torch

    from nertz_env.agents.forward import NumpyActor, UnsupportedNetwork
    from nertz_env.agents.meta import read_meta
    from nertz_env.agents.policy import load_policy_agent
    from nertz_env.train.imitate import _PolicyHolder, build_policy
    from nertz_env.train.trainer import save_policy

    config = nertz_env.parallel_env(num_players=4).config
    policy, kwargs = build_policy(config, [32])
    kwargs["activation_fn"] = torch.nn.LeakyReLU
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    policy = MaskableActorCriticPolicy(policy.observation_space, policy.action_space, lambda _: 1e-3, **kwargs)
    path = str(tmp_path / "leaky.zip")
    save_policy(_PolicyHolder(policy, kwargs), path, read_meta(PPO))
    with pytest.raises(UnsupportedNetwork, match="ReLU or Tanh"):
        NumpyActor.from_policy(policy)
    with pytest.raises(UnsupportedNetwork, match="no array file"):
        NumpyActor.load(path)
    agent = load_policy_agent(path, deterministic=True)
    assert agent.actor is None
    obs, masks = _observations(1, seed=2)
    agent.reset(config, 0, 0)
    assert masks[0, agent.act(obs[0], masks[0].astype(np.int8))]


@pytest.mark.parametrize("name", ["ppo", "scratch"])
def test_shipped_network__plays_through_nertz_eval_and_nertz_play(name: str, tmp_path, capsys) -> None:
    """Each shipped network by name: a gauntlet, and three seats of a nertz-play table, in numpy. ``scratch``
    was trained with last_moves=1 and plays at these tables without it (its own record of its moves)."""
    from nertz_env.eval.cli import main as nertz_eval
    from nertz_env.play import cli as play_cli

    assert nertz_eval(["gauntlet", name, "heuristic", "--players", "4", "--deals", "1", "--seed", "3", "--no-save",
                       "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert name in out and "heuristic" in out
    built = play_cli._build(play_cli.build_parser().parse_args(
        ["--opponents", name, "--players", "4", "--step", "--seed", "4", "--replay-dir", str(tmp_path)]))
    hub = play_cli.make_hub(built, seat=0, step=True)
    game = hub.game
    assert all(bot.actor is not None for bot in game.bots.values())  # the numpy forward
    moved = 0
    for _ in range(40):
        if game.done:
            break
        result = game.tick(None)  # the person waits; the three network seats play
        moved += sum(1 for m in result.moves if m.seat != 0 and m.applied != 0 and not m.illegal)
    assert moved > 0
    game.close()


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("hidden", [[], [64], [96, 64, 32]])
def test_the_compiled_first_choice_equals_the_dense_layers(activation: str, hidden: list[int]) -> None:
    """The one-call kernel (sparse rows, legal actions only) against argmax of the dense numpy logits, for any
    depth and both activations, on sparse and dense inputs, with the mask as int8, bool or int64 and the
    observation as float64 or a strided view; a wrong shape raises instead of reading past the arrays."""
    from nertz_env.agents.forward import NumpyActor

    rng = np.random.default_rng(len(hidden) * 2 + (activation == "tanh"))
    dims = [40, *hidden]
    actor = NumpyActor([rng.normal(size=(a, b)).astype(np.float32) for a, b in itertools.pairwise(dims)],
                       [rng.normal(size=b).astype(np.float32) for b in dims[1:]],
                       rng.normal(size=(dims[-1], 12)).astype(np.float32), rng.normal(size=12).astype(np.float32),
                       activation)
    for k in range(400):
        x = rng.normal(size=40).astype(np.float32)
        if k % 2:
            x[rng.random(40) < 0.8] = 0.0  # sparse, as the observations are
        m = rng.random(12) < 0.3
        m[rng.integers(12)] = True
        want = int(np.argmax(np.where(m, actor.logits(x), -np.inf)))
        assert actor.first_choice(x, m.astype(np.int8)) == want
        assert actor.first_choice(x, m) == want
        assert actor.first_choice(x.astype(np.float64), m.astype(np.int64)) == want
        wide = np.zeros(80, np.float32)
        wide[::2] = x
        assert actor.first_choice(wide[::2], m) == want
    for x, m in ((np.zeros(39, np.float32), np.ones(12, np.int8)), (np.zeros(40, np.float32), np.ones(11, np.int8)),
                 (np.zeros(40, np.float32), np.ones(1, np.int8)), (np.zeros((2, 40), np.float32), np.ones(12, bool))):
        with pytest.raises(ValueError, match="first_choice takes one observation"):
            actor.first_choice(x, m)  # never a broadcast mask (every action legal) nor a read past the arrays


def test_layers_that_do_not_fit_are_refused() -> None:
    """The compiled call reads by the layers' shapes with no bounds checks: a bias or output layer that would
    only broadcast in numpy is refused when the actor is built."""
    from nertz_env.agents.forward import NumpyActor, UnsupportedNetwork

    w1, w2 = np.zeros((40, 8), np.float32), np.zeros((8, 6), np.float32)
    wo, bo = np.zeros((6, 12), np.float32), np.zeros(12, np.float32)
    NumpyActor([w1, w2], [np.zeros(8, np.float32), np.zeros(6, np.float32)], wo, bo)
    bad = [
        ([w1, w2], [np.zeros(1, np.float32), np.zeros(6, np.float32)], wo, bo),  # a bias that broadcasts
        ([w1, w2], [np.zeros(8, np.float32), np.zeros(6, np.float32)], wo, np.zeros(1, np.float32)),
        ([w1, np.zeros((7, 6), np.float32)], [np.zeros(8, np.float32), np.zeros(6, np.float32)], wo, bo),
        ([w1, w2], [np.zeros(8, np.float32), np.zeros(6, np.float32)], np.zeros((5, 12), np.float32), bo),
        ([w1, w2], [np.zeros(8, np.float32)], wo, bo),
    ]
    for weights, biases, w_out, b_out in bad:
        with pytest.raises(UnsupportedNetwork):
            NumpyActor(weights, biases, w_out, b_out)
