"""Lab (issue 40 probe): record `search`'s decisions at one seat against three `heuristic` seats.

Each record is the search seat's observation with ``memory`` and ``last_moves = 1`` on (the variants without
them are slices of it), its action mask and the action `search` chose. The search seat rotates over the
seats, one deal a game, deals ``seed``, ``seed + 1``, ...

    python collect.py OUT.npz DECISIONS SEED
"""
import sys
import time

import numpy as np

import nertz_env
from nertz_env.agents import make_agent

out, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
env = nertz_env.parallel_env(num_players=4, memory=True, last_moves=1)
obs_l, mask_l, act_l, game_l = [], [], [], []
t0 = time.perf_counter()
g = 0
while len(obs_l) < n:
    obs, _ = env.reset(seed=seed + g)
    names = list(env.agents)
    me = g % 4
    players = [make_agent("search" if s == me else "heuristic") for s in range(4)]
    for s, p in enumerate(players):
        p.reset(env.config, s, (seed + g) * 16 + s)
    while env.agents:
        acts = {}
        for s, name in enumerate(names):
            o, m = obs[name]["observation"], obs[name]["action_mask"]
            a = int(players[s].act(o, m))
            acts[name] = a
            if s == me:
                obs_l.append(o.copy())
                mask_l.append(m.astype(bool))
                act_l.append(a)
                game_l.append(g)
        obs, *_ = env.step(acts)
    g += 1
seconds = time.perf_counter() - t0
np.savez_compressed(out, obs=np.asarray(obs_l, np.float32), masks=np.asarray(mask_l, bool),
                    actions=np.asarray(act_l, np.int64), games=np.asarray(game_l, np.int64), seed=seed,
                    seconds=seconds)
print(f"{len(obs_l)} decisions, {g} games, {seconds:.0f} s")
