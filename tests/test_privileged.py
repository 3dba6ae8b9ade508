"""The privileged critic (nertz_env.train.privileged, ``privileged_critic = true``): the value net reads the
table's global state, the policy net and every policy file never do; runs save and resume exactly."""

from __future__ import annotations

import zipfile
from typing import Any

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")

import torch

import nertz_env
from nertz_env.agents import make_agent
from nertz_env.agents.forward import NumpyActor
from nertz_env.agents.policy import load_policy, numpy_actor
from nertz_env.global_state import state_layout
from nertz_env.train import IncompatibleCheckpointError, NertzVecEnv, TrainConfig, Trainer
from nertz_env.train.config import ConfigError
from nertz_env.train.privileged import PrivilegedCriticPolicy
from test_train import _tiny as tiny_train_config

torch.set_num_threads(1)

P = 4
CONFIG = nertz_env.make_config(num_players=P)
O = nertz_env.ObsLayout(CONFIG).size
S = state_layout(CONFIG).size


def _tiny(run_dir: str, **kw: Any) -> TrainConfig:
    """test_train's tiny run, with the privileged critic unless ``kw`` says otherwise."""
    return tiny_train_config(run_dir, **{"privileged_critic": True, **kw})


def _quiet(_: str) -> None:
    pass


def _rotated_state(env: NertzVecEnv) -> np.ndarray:
    """Each slot's expected state part, built from ``venv.state()`` seat by seat (cards, then status)."""
    layout = state_layout(env.config)
    state = env.venv.state()
    p = env.num_players
    cards = layout.cards(state)
    status = state[:, layout.slices["status"]].reshape(len(state), p, -1)
    rows = []
    for t, s in zip(env._table, env._seat, strict=True):
        seats = [(int(s) + k) % p for k in range(p)]
        rows.append(np.concatenate([cards[t, seats].ravel(), status[t, seats].ravel()]))
    return np.array(rows)


@pytest.mark.parametrize(("players", "learners"), [(4, 4), (3, 2)])
def test_vec_env__appends_each_slots_table_state_with_its_own_seat_first(players: int, learners: int) -> None:
    # short rounds (max_ticks), so tables finish, are dealt anew in the same step and rotate their seats
    kw: dict[str, Any] = {"learners_per_table": learners, "opponents": ["greedy"], "seed": 5, "max_ticks": 30}
    plain = NertzVecEnv(3, players, **kw)
    priv = NertzVecEnv(3, players, privileged_state=True, **kw)
    o = plain.observation_space.shape[0]
    assert priv.observation_space.shape == (o + state_layout(priv.config).size,)
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    a, b = plain.reset(), priv.reset()
    finished = 0
    for _ in range(75):
        assert np.array_equal(b[:, :o], a)  # the observation part is the plain env's, step for step
        assert np.array_equal(b[:, o:], _rotated_state(priv))  # cards and status, the slot's seat first
        acts_a = np.array([rng_a.choice(np.flatnonzero(m)) for m in plain.action_masks()])
        acts_b = np.array([rng_b.choice(np.flatnonzero(m)) for m in priv.action_masks()])
        plain.step_async(acts_a)
        priv.step_async(acts_b)
        a, _, done_a, info_a = plain.step_wait()
        b, _, done_b, info_b = priv.step_wait()
        assert np.array_equal(done_a, done_b)
        for i in np.flatnonzero(done_b):  # the final observation keeps the final deal's state, not the new one's
            final = info_b[i]["terminal_observation"]
            assert np.array_equal(final[:o], info_a[i]["terminal_observation"])
            assert final.shape == (o + priv.state_size,) and not np.array_equal(final[o:], b[i, o:])
            finished += 1
    assert finished >= 2 * players  # the re-deal path ran


def test_vec_env__the_state_part_moves_with_hidden_cards_the_observation_part_does_not() -> None:
    env = NertzVecEnv(1, P, seed=2, privileged_state=True)
    obs = env.reset()
    st = env.venv._state  # swap the two lowest stock cards of seat 0: hidden from every observation
    lo = st.stock[0, 0, 0], st.stock[0, 0, 1]
    assert lo[0] != lo[1]
    st.stock[0, 0, 0], st.stock[0, 0, 1] = lo[1], lo[0]
    again = env._gather()
    assert np.array_equal(again[:, :O], obs[:, :O])
    assert not np.array_equal(again[:, O:], obs[:, O:])


def test_policy__the_actor_ignores_the_state_columns_the_critic_reads_them(tmp_path: Any) -> None:
    trainer = Trainer(_tiny(str(tmp_path / "run")), log=_quiet)
    policy = trainer.model.policy
    assert isinstance(policy, PrivilegedCriticPolicy)
    with torch.no_grad():  # make the critic's state weights non-zero, as training does
        policy.mlp_extractor.value_net[0].weight.normal_()
    rng = np.random.default_rng(0)
    x = torch.as_tensor(rng.random((8, O + S)), dtype=torch.float32)
    y = x.clone()
    y[:, O:] = torch.as_tensor(rng.random((8, S)), dtype=torch.float32)
    with torch.no_grad():
        assert torch.equal(policy.get_distribution(x).distribution.logits, policy.get_distribution(y).distribution.logits)
        assert not torch.equal(policy.predict_values(x), policy.predict_values(y))


def test_policy_files_hold_the_policy_over_the_observation_alone_and_play_everywhere(tmp_path: Any) -> None:
    trainer = Trainer(_tiny(str(tmp_path / "run"), total_timesteps=128), log=_quiet)
    trainer.train()
    path = str(tmp_path / "run" / "policy.zip")
    policy, _ = load_policy(path)
    assert not isinstance(policy, PrivilegedCriticPolicy)
    assert policy.observation_space.shape == (O,)
    trained = trainer.model.policy.state_dict()
    for key, value in policy.state_dict().items():  # the policy part unchanged; the critic cut to O columns
        want = trained[key][:, :O] if key == "mlp_extractor.value_net.0.weight" else trained[key]
        assert torch.equal(value, want), key
    with zipfile.ZipFile(path) as z:
        assert all(v.shape[-1] != O + S for v in torch.load(z.open("policy.pth"), weights_only=True).values())
    obs = np.random.default_rng(3).random((5, O + S)).astype(np.float32)
    with torch.no_grad():
        want_logits = trainer.model.policy.get_distribution(torch.as_tensor(obs)).distribution.logits.numpy()
    # the compiled forward pass reads the file: the trained actor's logits, from the observation alone
    got = NumpyActor.load(path).logits(obs[:, :O]).astype(np.float64)
    got -= got.max(axis=1, keepdims=True) + np.log(np.exp(got - got.max(axis=1, keepdims=True)).sum(1, keepdims=True))
    assert np.allclose(got, want_logits, atol=1e-5)  # torch's logits are log-probabilities
    # a checkpoint (the whole privileged network, for resuming) loads for play as the same actor-only policy
    ckpt = trainer.checkpoints[-1]
    from_ckpt, _ = load_policy(ckpt)
    assert not isinstance(from_ckpt, PrivilegedCriticPolicy) and from_ckpt.observation_space.shape == (O,)
    assert all(torch.equal(v, policy.state_dict()[k]) for k, v in from_ckpt.state_dict().items())
    # ... and the compiled forward pass plays the checkpoint's actor too (read once with torch)
    assert np.array_equal(numpy_actor(ckpt).logits(obs[:, :O]), NumpyActor.load(path).logits(obs[:, :O]))
    env = nertz_env.parallel_env(num_players=P)
    for source in (path, ckpt):  # each plays through make_agent
        agent = make_agent(source)
        observations, _ = env.reset(seed=0)
        agent.reset(env.config, 0, 0)
        first = env.agents[0]
        action = agent.act(observations[first]["observation"], observations[first]["action_mask"])
        assert observations[first]["action_mask"][action]


def test_init_from_a_plain_policy_starts_with_its_critic(tmp_path: Any) -> None:
    Trainer(_tiny(str(tmp_path / "plain"), privileged_critic=False, total_timesteps=64), log=_quiet).train()
    plain_path = str(tmp_path / "plain" / "policy.zip")
    plain, _ = load_policy(plain_path)
    trainer = Trainer(_tiny(str(tmp_path / "priv"), init_from=plain_path), log=_quiet)
    x = torch.as_tensor(np.random.default_rng(4).random((6, O + S)), dtype=torch.float32)
    with torch.no_grad():
        assert torch.allclose(trainer.model.policy.predict_values(x), plain.predict_values(x[:, :O]))
        assert torch.equal(
            trainer.model.policy.get_distribution(x).distribution.logits,
            plain.get_distribution(x[:, :O]).distribution.logits,
        )


def test_resume__continues_exactly_like_a_straight_run(tmp_path: Any) -> None:
    kw = {"total_timesteps": 4 * 64, "checkpoint_every": 128, "shaping": True, "relative_reward": True}
    straight = Trainer(_tiny(str(tmp_path / "a"), **kw), log=_quiet)
    straight.train()
    ckpt = str(tmp_path / "a" / "checkpoints" / "step_000000000128.zip")
    resumed = Trainer(_tiny(str(tmp_path / "b"), **kw), resume=ckpt, log=_quiet)
    assert resumed.model.num_timesteps == 128
    resumed.train()
    pa, pb = straight.model.policy.state_dict(), resumed.model.policy.state_dict()
    assert pa.keys() == pb.keys() and all(torch.equal(pa[k], pb[k]) for k in pa)
    assert np.array_equal(np.asarray(straight.model._last_obs), np.asarray(resumed.model._last_obs))
    with pytest.raises(IncompatibleCheckpointError, match="privileged_critic"):
        Trainer(_tiny(str(tmp_path / "c"), privileged_critic=False, **kw), resume=ckpt, log=_quiet)


def test_config__privileged_critic_in_single_mode_is_refused() -> None:
    with pytest.raises(ConfigError, match="privileged_critic"):
        _tiny("unused", mode="single")
