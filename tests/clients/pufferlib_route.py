"""pufferlib-core's PettingZoo route (docs/clients/routes.md): masked play, the mask read through the struct
view, alone and in ``pufferlib.vector``. Run by tests/test_clients.py; prints a JSON line."""

from __future__ import annotations

import json

import numpy as np
import pufferlib.emulation
import pufferlib.vector

import nertz_env


def make(buf=None, seed=0):  # type: ignore[no-untyped-def]
    return pufferlib.emulation.PettingZooPufferEnv(env=nertz_env.parallel_env(num_players=2, max_ticks=30), buf=buf, seed=seed)


env = make()
env.reset(seed=0)
rng = np.random.default_rng(0)
steps = illegal = episodes = 0
while episodes < 3:
    masks = env.observations.view(env.obs_dtype)["action_mask"].reshape(env.num_agents, -1)  # (agents, A)
    actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
    _obs, _rew, _term, _trunc, infos = env.step(actions)
    illegal += sum(bool(i.get("illegal")) for i in infos.values() if isinstance(i, dict))
    steps += 1
    if env.done:
        episodes += 1
        env.reset()

vec = pufferlib.vector.make(make, num_envs=2, backend=pufferlib.vector.Serial)
obs, _ = vec.reset(seed=0)
vec_steps = 0
for _ in range(40):
    masks = obs.view(env.obs_dtype)["action_mask"].reshape(len(obs), -1)  # (envs x agents, A)
    obs, _rew, _term, _trunc, _infos = vec.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
    vec_steps += 1
vec.close()
print(json.dumps({
    "steps": steps, "episodes": episodes, "illegal": illegal, "obs_bytes": int(env.observations.shape[1]),
    "fields": list(env.obs_dtype.names), "vec_obs_rows": int(obs.shape[0]), "vec_steps": vec_steps,
    "action_space": str(vec.single_action_space),
}))
