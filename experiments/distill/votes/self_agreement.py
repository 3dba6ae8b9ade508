"""Lab (issue 24): how often does `best` agree with itself (the same state, another random stream; a deep copy of the
agent decides)? The ceiling of imitating its first choices. Seat 0 best (and ppo asked too), seats 1-3 heuristic."""
import copy
import sys

import numpy as np

import nertz_env
from nertz_env.agents import make_agent

games = int(sys.argv[1]) if len(sys.argv) > 1 else 10
same = diff = ppo_same_a = ppo_same_b = total = 0
both_differ = 0
for g in range(games):
    env = nertz_env.parallel_env(num_players=4)
    obs, _ = env.reset(seed=1000 + g)
    cfg = env.unwrapped.config if hasattr(env.unwrapped, "config") else env.config
    agents = [make_agent("best")] + [make_agent("heuristic") for _ in range(3)]
    ppo = make_agent("ppo")
    for i, a in enumerate(agents):
        a.reset(cfg, i, 77 * g + i)
    ppo.reset(cfg, 0, 5)
    while env.agents:
        acts = {}
        for i, name in enumerate(env.agents):
            o, m = obs[name]["observation"], obs[name]["action_mask"]
            if i == 0:
                twin = copy.deepcopy(agents[0])
                twin.rng = np.random.default_rng(12345 + total)
                b = twin.act(o, m)
                a = agents[0].act(o, m)
                p = ppo.act(o, m)
                total += 1
                same += a == b
                ppo_same_a += p == a
                ppo_same_b += p == b
                both_differ += (p != a) and (p != b)
                acts[name] = a
            else:
                acts[name] = agents[i].act(o, m)
        obs, *_ = env.step(acts)
print(f"decisions {total}: best vs best(other rng) {same/total:.4f}; ppo vs best {ppo_same_a/total:.4f} / {ppo_same_b/total:.4f}; ppo differs from both {both_differ/total:.4f}")
