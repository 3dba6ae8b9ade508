"""Lab (issue 34): is the network's wasted tempo what it loses on? The same policy, most probable action,
against three `heuristic` on the same deals, played as it is and with two moves taken from it: `wait` while it
has another legal action, and the run move that puts back its previous run move.

Usage: python forced.py POLICY.zip DEALS SEED        (the policy trained with last_moves=1)
"""
import sys

import numpy as np

import nertz_env
from nertz_env.actions import RUN, action_table
from nertz_env.agents import make_agent

path, deals, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
env = nertz_env.parallel_env(num_players=4, last_moves=1)
cfg = env.config
rows = action_table(cfg).rows
policy = make_agent(path)
policy.reset(cfg, 0, 0)


def reverse(a: int, b: int) -> bool:
    ra, rb = rows[a], rows[b]
    return ra.kind == RUN == rb.kind and ra.src - 2 == rb.dst and rb.src - 2 == ra.dst and ra.length == rb.length


for forced in (False, True):
    diffs = []
    for d in range(deals):
        per_deal = []
        for seat in range(4):
            obs, _ = env.reset(seed=seed + d)
            others = {p: make_agent("heuristic") for p in range(4) if p != seat}
            for p, a in others.items():
                a.reset(cfg, p, (seed + d) * 64 + seat * 8 + p)
            me = env.possible_agents[seat]
            last = None
            while env.agents:
                acts = {n: int(others[p].act(obs[n]["observation"], obs[n]["action_mask"]))
                        for p, n in enumerate(env.agents) if p != seat}
                m = obs[me]["action_mask"].copy()
                if forced:
                    if m[1:].any():
                        m[0] = 0
                    if last is not None:
                        for i in np.flatnonzero(m):
                            if reverse(int(i), last) and m.sum() > 1:
                                m[i] = 0
                pr = policy.probabilities(obs[me]["observation"][None], m[None])[0]
                acts[me] = int(np.argmax(pr))
                if acts[me] != 0:
                    last = acts[me]
                obs, _, _, _, infos = env.step(acts)
                if infos[me].get("round_end"):
                    per_deal.append(infos[me]["score"] - np.mean([infos[n]["score"] for n in infos if n != me]))
        diffs.append(np.mean(per_deal))
    diffs = np.array(diffs)
    print(f"{'forced' if forced else 'as is '}: {diffs.mean():+.2f} ± {1.96 * diffs.std(ddof=1) / np.sqrt(deals):.2f}"
          f" over {deals} deals (seed {seed})", flush=True)
