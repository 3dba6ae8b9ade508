"""Lab (issue 24): where does the network's tempo go? Seat a candidate against three `search` on duplicate
deals (each deal played with the candidate in every seat) and count, for the candidate's seat, what it does
with its ticks: lake plays, moves to work piles, run moves, flips, waits; a lake play or a Nertz-pile move it
had and did not take; a run move that undoes its own previous move; lake plays that lost their slot.

The same deals are played twice, with ``ppo`` and with an identical copy of ``search`` (the control) in the
candidate's seat, so each figure is read as ppo minus the control, paired by (deal, seat).

Usage: python tempo.py OUT.jsonl CANDIDATE SEED DEALS   (one process per candidate; minutes)
"""
import json
import sys
import time

import numpy as np

import nertz_env
from nertz_env.actions import FLIP, LAKE, RUN, SRC_NERTZ, TO_WORK, WAIT, action_table
from nertz_env.agents import make_agent
from nertz_env.observation import obs_layout

out, cand, seed, deals = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
env = nertz_env.parallel_env(num_players=4)
cfg = env.config
rows = action_table(cfg).rows
kind = np.array([r.kind for r in rows])
src = np.array([r.src for r in rows])
from_nertz = src == SRC_NERTZ
S = obs_layout(cfg).slices
t0 = time.perf_counter()
with open(out, "w") as f:
    for d in range(deals):
        for seat in range(4):
            obs, _ = env.reset(seed=seed + d)
            agents = [make_agent(cand if p == seat else "search") for p in range(4)]
            for p, a in enumerate(agents):
                # the opponents' streams depend on (deal, seat) only, not on the candidate
                a.reset(cfg, p, (seed + d) * 64 + seat * 8 + p)
            c = dict(ticks=0, wait=0, flip=0, turn_over=0, lake=0, lake_nertz=0, to_work=0, to_work_nertz=0, run=0,
                     lake_missed=0, nertz_missed=0, undo=0, lost_race=0, illegal=0)
            prev = None
            me = env.possible_agents[seat]
            while env.agents:
                acts = {}
                for p, name in enumerate(env.agents):
                    acts[name] = int(agents[p].act(obs[name]["observation"], obs[name]["action_mask"]))
                o, m, a = obs[me]["observation"], obs[me]["action_mask"].astype(bool), acts[me]
                k = kind[a]
                c["ticks"] += 1
                c[{WAIT: "wait", FLIP: "flip", LAKE: "lake", TO_WORK: "to_work", RUN: "run"}.get(int(k), "wait")] += 1
                if k == FLIP and o[S["stock_count"]][0] == 0:
                    c["turn_over"] += 1
                if k == LAKE and from_nertz[a]:
                    c["lake_nertz"] += 1
                if k == TO_WORK and from_nertz[a]:
                    c["to_work_nertz"] += 1
                if k != LAKE and (m & (kind == LAKE)).any():
                    c["lake_missed"] += 1
                if not from_nertz[a] and (m & from_nertz).any():
                    c["nertz_missed"] += 1
                if k == RUN and prev is not None and kind[prev] == RUN and rows[prev].src - 2 == rows[a].dst \
                        and rows[a].src - 2 == rows[prev].dst and rows[prev].length == rows[a].length:
                    c["undo"] += 1
                prev = a
                obs, _, _, _, infos = env.step(acts)
                i = infos.get(me, {})
                c["lost_race"] += int(i.get("lost_race", False))
                c["illegal"] += int(i.get("illegal", False))
                if i.get("round_end"):
                    c.update(score=i["score"], score_lake=i["score_lake"], nertz_left=i["nertz_left"],
                             round_end=i["round_end"],
                             others=float(np.mean([infos[n]["score"] for n in infos if n != me])))
            f.write(json.dumps(dict(deal=seed + d, seat=seat, cand=cand, **c)) + "\n")
        f.flush()
        if d % 10 == 9:
            print(f"{d + 1} deals, {time.perf_counter() - t0:.0f} s", flush=True)
print(f"done: {deals} deals x 4 seats, {time.perf_counter() - t0:.0f} s")
