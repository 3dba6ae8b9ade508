"""Lab (issue 24): collect DAgger records where `best` labels each state K times (its own decision and K-1 twins with other
random streams): the vote counts are soft targets free of most of the teacher's rollout noise.

Seat 0 is played by the student (the shipped ppo) and labelled by best (told the move played); seats 1-3 are
search, the opponents of the bar. Usage: python collect_votes.py OUT.npz DECISIONS SEED K [state]

With ``state``, each record also keeps seat 0's cards from the global state (``env.state()``: every card of its
deck, where it lies and how deep), for the hidden-card upper bound of ``action_features.py``; never an input of
the player."""
import copy
import sys
import time

import numpy as np

import nertz_env
from nertz_env.agents import make_agent

out, n, seed, K = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
keep_state = len(sys.argv) > 5 and sys.argv[5] == "state"
obs_l, mask_l, votes_l, game_l, state_l = [], [], [], [], []
t0 = time.perf_counter()
g = 0
env = nertz_env.parallel_env(num_players=4)
layout = nertz_env.state_layout(env.config)
student = make_agent("ppo")
while len(obs_l) < n:
    obs, _ = env.reset(seed=seed + g)
    labeler = make_agent("best")
    opps = [make_agent("search") for _ in range(3)]
    labeler.reset(env.config, 0, seed * 7 + g * 16)
    student.reset(env.config, 0, 0)
    for i, a in enumerate(opps, start=1):
        a.reset(env.config, i, seed * 7 + g * 16 + i)
    rs = np.random.default_rng(seed * 1000 + g)
    while env.agents:
        names = list(env.agents)
        o, m = obs[names[0]]["observation"], obs[names[0]]["action_mask"]
        vs = []
        for _ in range(K - 1):
            twin = copy.deepcopy(labeler)
            twin.rng = np.random.default_rng(rs.integers(2**63))
            vs.append(int(twin.act(o, m)))
        own = int(labeler.act(o, m))
        vs.append(own)
        played = int(student.act(o, m))
        if played != own:
            labeler.played(played)
        if keep_state:
            state_l.append(layout.cards(env.state())[0].copy())
        obs_l.append(o.copy())
        mask_l.append(m.astype(bool))
        votes_l.append(vs)
        game_l.append(g)
        acts = {names[0]: played}
        for i, name in enumerate(names[1:], start=1):
            acts[name] = opps[i - 1].act(obs[name]["observation"], obs[name]["action_mask"])
        obs, *_ = env.step(acts)
    g += 1
np.savez_compressed(out, obs=np.asarray(obs_l, np.float32), masks=np.asarray(mask_l, bool),
                    votes=np.asarray(votes_l, np.int64), games=np.asarray(game_l, np.int64),
                    **({"own_cards": np.asarray(state_l, np.float32)} if keep_state else {}),
                    seconds=time.perf_counter() - t0)
print(f"{len(obs_l)} decisions, {g} games, {time.perf_counter() - t0:.0f} s")
