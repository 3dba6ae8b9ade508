"""TorchRL's own PettingZoo route with a centralized critic: ``PettingZooWrapper(parallel_env(...),
use_mask=True, return_state=True)``, a shared masked policy on each agent's observation, a critic on the
global ``state`` (MAPPO), TorchRL's collector, GAE and ``ClipPPOLoss``, trained a few iterations. No glue:
the env goes in as TorchRL's docs show."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="needs the test extra (pip install '.[test]')")
pytest.importorskip("torchrl", reason="needs the test extra (pip install '.[test]')")

import warnings  # noqa: E402

from tensordict.nn import TensorDictModule  # noqa: E402
from torch import nn  # noqa: E402
from torchrl.collectors import Collector  # noqa: E402
from torchrl.envs.libs.pettingzoo import PettingZooWrapper  # noqa: E402
from torchrl.modules import MaskedCategorical, MultiAgentMLP, ProbabilisticActor  # noqa: E402
from torchrl.objectives import ClipPPOLoss, ValueEstimators  # noqa: E402

import nertz_env  # noqa: E402

G = "player"  # TorchRL's group of the agents player_0 .. player_{n-1}


class CentralCritic(nn.Module):
    """The value of every agent from the global state alone (MAPPO's centralized critic)."""

    def __init__(self, state_size: int, n_agents: int) -> None:
        super().__init__()
        self.n_agents = n_agents
        self.net = nn.Sequential(nn.Linear(state_size, 64), nn.Tanh(), nn.Linear(64, n_agents))

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return self.net(state).unsqueeze(-1)  # (..., n_agents, 1)


def test_mappo__trains_with_masks_and_a_critic_on_the_global_state() -> None:
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchRL notes that it tests PettingZoo 1.24.3
        env = PettingZooWrapper(
            nertz_env.parallel_env(num_players=2, max_ticks=40),
            use_mask=True,
            return_state=True,
            categorical_actions=True,
            seed=0,
        )
    assert list(env.group_map) == [G] and env.group_map[G] == ["player_0", "player_1"]
    obs_key = (G, "observation", "observation")  # the Dict observation's vector; its mask became the action mask
    obs_size = env.observation_spec[obs_key].shape[-1]
    state_size = env.observation_spec["state"].shape[-1]
    n_actions = env.full_action_spec[G, "action"].space.n
    assert state_size == nertz_env.state_layout(nertz_env.make_config(num_players=2)).size
    assert (G, "action_mask") in env.observation_spec.keys(True, True)

    policy_net = MultiAgentMLP(
        n_agent_inputs=obs_size, n_agent_outputs=n_actions, n_agents=2, centralized=False, share_params=True,
        depth=1, num_cells=64,
    )
    policy = ProbabilisticActor(
        TensorDictModule(policy_net, in_keys=[obs_key], out_keys=[(G, "logits")]),
        in_keys={"logits": (G, "logits"), "mask": (G, "action_mask")},
        out_keys=[(G, "action")],
        distribution_class=MaskedCategorical,
        return_log_prob=True,
        log_prob_key=(G, "action_log_prob"),
    )
    critic = TensorDictModule(CentralCritic(state_size, 2), in_keys=["state"], out_keys=[(G, "state_value")])
    loss = ClipPPOLoss(actor_network=policy, critic_network=critic, entropy_coeff=0.01, normalize_advantage=True)
    loss.set_keys(
        reward=(G, "reward"),
        action=(G, "action"),
        sample_log_prob=(G, "action_log_prob"),
        value=(G, "state_value"),
        done=(G, "done"),
        terminated=(G, "terminated"),
    )
    loss.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.95)
    optim = torch.optim.Adam(loss.parameters(), lr=3e-3)
    before = [p.detach().clone() for p in critic.parameters()]

    collector = Collector(env, policy, frames_per_batch=120, total_frames=360)
    iterations = 0
    for data in collector:
        # every action the policy took was legal: the env flags an illegal one in its infos
        assert not data["next", G, "info", "illegal"].any()
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
    assert iterations == 3
    assert any(not torch.equal(b, p) for b, p in zip(before, critic.parameters(), strict=True))  # it learned
