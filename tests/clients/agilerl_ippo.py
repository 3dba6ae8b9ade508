"""AgileRL's IPPO on its AsyncPettingZooVecEnv over ``parallel_env(obs_key=None)`` (the mask in the infos), as
its IPPO page's training loop shows it, shortened. Run by tests/test_clients.py in a venv of its own: pins
AgileRL 2.58's own bug, trains a few learn steps with the one-line workaround, prints a JSON line."""

from __future__ import annotations

import json

import numpy as np
import torch
from agilerl.algorithms import IPPO
from agilerl.vector.pz_async_vec_env import AsyncPettingZooVecEnv

import nertz_env

torch.set_num_threads(1)


def make_env():  # a module-level function: AsyncPettingZooVecEnv pickles it into worker processes
    return nertz_env.parallel_env(obs_key=None, num_players=2, max_ticks=25)


def masks(info):
    """The workaround for AgileRL 2.58 (ippo.py:466 tests ``None in group_masks``, ambiguous on its arrays):
    each agent's mask as a flat list of ints, the infos' ``_player_0``-style arrays left out."""
    return {a: {"action_mask": i["action_mask"].ravel().tolist()} for a, i in info.items() if isinstance(i, dict)}


def main() -> dict:
    num_envs = 2
    env = AsyncPettingZooVecEnv([make_env for _ in range(num_envs)])
    try:
        env.reset(seed=0)
        agent = IPPO(
            observation_spaces=[env.single_observation_space(a) for a in env.agents],
            action_spaces=[env.single_action_space(a) for a in env.agents],
            agent_ids=list(env.agents),
            batch_size=32,
            learn_step=64,
            net_config={"encoder_config": {"hidden_size": [32]}},
        )
        obs, info = env.reset(seed=0)
        bug = None
        try:
            agent.get_action(obs=obs, infos=info)
        except ValueError as e:
            bug = str(e)
        before = [p.detach().clone() for p in agent.actors["player"].parameters()]
        illegal = decisions = episodes = learns = 0
        for _ in range(2):  # two learn steps of AgileRL's loop
            states, actions, log_probs, rewards, dones, values = ({a: [] for a in agent.agent_ids} for _ in range(6))
            done = {a: np.zeros(num_envs) for a in agent.agent_ids}
            for _ in range(-(agent.learn_step // -num_envs)):
                action, log_prob, _entropy, value = agent.get_action(obs=obs, infos=masks(info))
                legal = [info[a]["action_mask"][np.arange(num_envs), action[a]] for a in action]
                next_obs, reward, termination, truncation, info = env.step(action)
                illegal += int(sum((m == 0).sum() for m in legal))
                decisions += sum(len(m) for m in legal)
                for a in obs:
                    states[a].append(obs[a])
                    rewards[a].append(reward[a])
                    actions[a].append(action[a])
                    log_probs[a].append(log_prob[a])
                    values[a].append(value[a])
                    dones[a].append(done[a])
                done = {a: np.logical_or(termination[a], truncation[a]).astype(float) for a in termination}
                episodes += int(done["player_0"].sum())
                obs = next_obs
            agent.learn((states, actions, log_probs, rewards, dones, values, next_obs, done))
            learns += 1
        changed = any(not torch.equal(a, b) for a, b in zip(before, agent.actors["player"].parameters(), strict=True))
        return {"bug": bug, "learns": learns, "decisions": decisions, "illegal": illegal, "episodes": episodes,
                "changed": changed}
    finally:
        env.close()


if __name__ == "__main__":
    print(json.dumps(main()))
