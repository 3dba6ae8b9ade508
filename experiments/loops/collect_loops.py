"""Lab (issue 24): states where the shipped network undoes its own last move (a run moved from work pile A to
B, then straight back from B to A), labelled by `search`, plus a sample of the network's other states
labelled by the network itself (the anchor that keeps what it already does).

Seat ``g % 4`` of game ``g`` is the network (deterministic) against three `search`; a fourth `search` for that
seat labels every state and is told the move played (so its memory of the stock follows the game).
Usage: python collect_loops.py OUT.npz GAMES SEED [ANCHOR_SHARE]   (one process; minutes)"""
import sys
import time

import numpy as np

import nertz_env
from nertz_env.actions import RUN, action_table
from nertz_env.agents import make_agent

out, games, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
share = float(sys.argv[4]) if len(sys.argv) > 4 else 0.1
env = nertz_env.parallel_env(num_players=4)
cfg = env.config
rows = action_table(cfg).rows


def undoes(prev: int | None, a: int) -> bool:
    if prev is None or rows[a].kind != RUN or rows[prev].kind != RUN:
        return False
    p, q = rows[prev], rows[a]
    return p.src - 2 == q.dst and q.src - 2 == p.dst and p.length == q.length


rec: dict[str, list] = {k: [] for k in ("obs", "masks", "label", "played", "undo", "game")}
rng = np.random.default_rng(seed)
student = make_agent("ppo")
t0 = time.perf_counter()
for g in range(games):
    seat = g % 4
    obs, _ = env.reset(seed=seed + g)
    agents = [make_agent("search") for _ in range(4)]
    teacher = make_agent("search")
    for p, a in enumerate(agents):
        a.reset(cfg, p, (seed + g) * 8 + p)
    teacher.reset(cfg, seat, (seed + g) * 8 + 5)
    student.reset(cfg, seat, 0)
    me, prev = env.possible_agents[seat], None
    while env.agents:
        o, m = obs[me]["observation"], obs[me]["action_mask"]
        label = int(teacher.act(o, m))
        played = int(student.act(o, m))
        if played != label:
            teacher.played(played)
        u = undoes(prev, played)
        if (u and label != played) or (not u and rng.random() < share):
            rec["obs"].append(o.copy())
            rec["masks"].append(m.astype(bool))
            rec["label"].append(label if u else played)  # an undo: search's move; otherwise the network's own
            rec["played"].append(played)
            rec["undo"].append(u)
            rec["game"].append(seed + g)
        prev = played
        acts = {me: played}
        for p, name in enumerate(env.agents):
            if name != me:
                acts[name] = int(agents[p].act(obs[name]["observation"], obs[name]["action_mask"]))
        obs, *_ = env.step(acts)
    if g % 200 == 199:
        print(f"{g + 1} games, {sum(rec['undo'])} undo states, {time.perf_counter() - t0:.0f} s", flush=True)
np.savez_compressed(out, obs=np.asarray(rec["obs"], np.float32), masks=np.asarray(rec["masks"], bool),
                    label=np.asarray(rec["label"]), played=np.asarray(rec["played"]), undo=np.asarray(rec["undo"]),
                    game=np.asarray(rec["game"]), seconds=time.perf_counter() - t0)
print(f"{games} games, {len(rec['obs'])} records ({sum(rec['undo'])} undo states), {time.perf_counter() - t0:.0f} s")
