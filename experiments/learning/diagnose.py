"""Lab (issue 34): what a candidate does with its ticks against three `heuristic` seats.

Plays DEALS duplicate deals (the candidate in each of the four seats) and prints, per round of the candidate:
its score minus the other three's mean, ticks, waits, flips, lake plays, run moves, undos (a run move that
puts back the run its previous move moved), and the mean entropy of its policy over its decisions (policy
agents only). Opponent streams depend on (deal, seat) only, so two candidates pair deal by deal.

Usage: python diagnose.py CANDIDATE DEALS SEED [OUT.jsonl]      (CANDIDATE: an agent spec, e.g. run/policy.zip)
"""
import json
import sys
import time

import numpy as np

import nertz_env
from nertz_env.actions import FLIP, LAKE, RUN, WAIT, action_table
from nertz_env.agents import make_agent
from nertz_env.agents.policy import PolicyAgent

cand, deals, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = open(sys.argv[4], "w") if len(sys.argv) > 4 else None  # noqa: SIM115 (closed at exit)
env = nertz_env.parallel_env(num_players=4)
cfg = env.config
rows = action_table(cfg).rows
kind = np.array([r.kind for r in rows])
NAMES = {WAIT: "wait", FLIP: "flip", LAKE: "lake", RUN: "run"}
totals: list[dict] = []
t0 = time.perf_counter()
for d in range(deals):
    for seat in range(4):
        obs, _ = env.reset(seed=seed + d)
        agents = [make_agent(cand if p == seat else "heuristic") for p in range(4)]
        for p, a in enumerate(agents):
            a.reset(cfg, p, (seed + d) * 64 + seat * 8 + p)
        me = env.possible_agents[seat]
        c = dict(ticks=0, wait=0, flip=0, lake=0, run=0, undo=0, entropy=0.0)
        last = None  # the candidate's previous move other than wait
        while env.agents:
            acts = {n: int(agents[p].act(obs[n]["observation"], obs[n]["action_mask"])) for p, n in enumerate(env.agents)}
            a = acts[me]
            if isinstance(agents[seat], PolicyAgent):
                o = obs[me]["observation"] if agents[seat].memory is None else None
                if o is not None:
                    pr = agents[seat].probabilities(o[None], obs[me]["action_mask"][None])[0]
                    pr = pr[pr > 0] / pr.sum()
                    c["entropy"] += float(-(pr * np.log(pr)).sum())
            c["ticks"] += 1
            name = NAMES.get(int(kind[a]), "other")
            c[name] = c.get(name, 0) + 1
            if kind[a] == RUN and last is not None and kind[last] == RUN and rows[last].src - 2 == rows[a].dst \
                    and rows[a].src - 2 == rows[last].dst and rows[last].length == rows[a].length:
                c["undo"] += 1
            if a != 0:
                last = a
            obs, _, _, _, infos = env.step(acts)
            if infos[me].get("round_end"):
                c["diff"] = infos[me]["score"] - float(np.mean([infos[n]["score"] for n in infos if n != me]))
        c["entropy"] /= max(c["ticks"], 1)
        totals.append(c)
        if out:
            out.write(json.dumps(dict(deal=seed + d, seat=seat, **c)) + "\n")
keys = ["diff", "ticks", "wait", "flip", "lake", "run", "undo", "entropy"]
m = {k: np.array([t.get(k, 0) for t in totals], dtype=float) for k in keys}
ci = 1.96 * m["diff"].reshape(deals, 4).mean(1).std(ddof=1) / np.sqrt(deals) if deals > 1 else float("nan")
print(f"{cand}: {deals} deals x 4 seats vs 3 heuristic, seed {seed}, {time.perf_counter() - t0:.0f} s")
print("  " + "  ".join(f"{k} {m[k].mean():.3f}" for k in keys) + f"  diff_ci95 {ci:.2f}"
      + f"  rounds_with_undo {(m['undo'] > 0).mean():.3f}")
