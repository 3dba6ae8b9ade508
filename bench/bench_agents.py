"""Scripted agents and the tournament harness: time per decision of each ladder rung, the wall time of a
1,000-game, 4-player tournament of heuristic players (duplicate deals, both cores), and the training env's
step rate with search opponents deciding in one thread or two (``opponent_threads``). Then the trained
networks' numpy forward per decision (the shipped ``ppo``, and a flat and a move-scoring policy of
``nertz-train``'s default sizes; target: at most 50 µs), and what move features cost a policy's forward.

Run: ``python bench/bench_agents.py [--games 1000] [--workers 2] [--networks-only]``. Prints its tables,
writes ``bench/out/bench_agents.json`` (``bench_agents_networks.json`` with ``--networks-only``). The
tournament's target on a 2-core machine is under 2 minutes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import fmt, print_table, save, timed_loop


def per_decision(spec: str, games: int, seed: int) -> dict:
    """Four ``spec`` agents at one table, in this process: microseconds per ``act`` and per env tick."""
    import nertz_env
    from nertz_env.agents import make_agent

    env = nertz_env.parallel_env(num_players=4)
    agents = [make_agent(spec) for _ in range(4)]
    obs, _ = env.reset(seed=seed)  # warm up (numba loads its cache on the first calls)
    for s, a in enumerate(agents):
        a.reset(env.config, s, s)
        a.act(obs[f"player_{s}"]["observation"], obs[f"player_{s}"]["action_mask"])
    ticks = 0
    acting = cpu = 0.0
    t0 = time.perf_counter()
    for g in range(games):
        obs, _ = env.reset(seed=seed + g)
        for s, a in enumerate(agents):
            a.reset(env.config, s, seed + g * 4 + s)
        while env.agents:
            t, c = time.perf_counter(), time.thread_time()
            acts = {
                n: agents[s].act(obs[n]["observation"], obs[n]["action_mask"])
                for s, n in enumerate(env.agents)
            }
            acting += time.perf_counter() - t
            cpu += time.thread_time() - c
            obs, *_ = env.step(acts)
            ticks += 1
    total = time.perf_counter() - t0
    return {
        "agent": spec,
        "games": games,
        "ticks_per_game": ticks / games,
        "us_per_act": acting / (4 * ticks) * 1e6,
        "cpu_us_per_act": cpu / (4 * ticks) * 1e6,  # this thread's CPU time: less of the machine's load
        "us_per_tick": total / ticks * 1e6,
        "games_per_s": games / total,
    }


def tournament(games: int, workers: int, seed: int) -> dict:
    """``games`` games of four heuristic players: games / 4 deals, each played in all 4 seat rotations."""
    from nertz_env.eval import run_tournament

    t0 = time.perf_counter()
    res = run_tournament(["heuristic"] * 4, num_players=4, deals=games // 4, seed=seed, workers=workers)
    wall = time.perf_counter() - t0
    return {"games": len(res.games), "workers": workers, "wall_s": wall, "games_per_s": len(res.games) / wall}


def opponent_threads(threads: int, seconds: float, tables: int = 64, seed: int = 0) -> dict:
    """Learner transitions/s of ``NertzVecEnv``: ``tables`` tables of one learner (random legal moves, no
    network) and three ``search`` opponents deciding in ``threads`` threads: the env side of a training run
    against search (configs/dagger_finetune.toml draws search for most seats)."""
    import numpy as np

    from nertz_env.train.vec import NertzVecEnv

    env = NertzVecEnv(tables, num_players=4, learners_per_table=1, opponents=["search"], seed=seed,
                      opponent_threads=threads)
    env.reset()
    rng = np.random.default_rng(seed)

    def step() -> int:
        masks = env.action_masks()
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        env.step(acts)
        return tables

    n, dt = timed_loop(step, seconds, warmup=5)
    env.close()
    return {"threads": threads, "tables": tables, "transitions": n, "seconds": dt, "per_s": n / dt}


def networks(games: int, seed: int) -> list[dict]:
    """Per-decision times of trained networks through ``make_agent`` (their numpy forward, one thread): the
    shipped networks, and each head of nertz-train's default sizes (net_arch 256,256; move_arch 128) with random
    weights, saved as nertz-train saves a policy."""
    import torch

    import nertz_env
    from nertz_env.agents.meta import make_meta
    from nertz_env.train.imitate import build_policy
    from nertz_env.train.trainer import save_policy

    config = nertz_env.make_config(num_players=4)
    torch.manual_seed(seed)
    rows = [
        {**per_decision(name, games, seed), "network": f"{name} ({head}, shipped)"}
        for name, head in (("ppo", "moves"), ("scratch", "moves"), ("ppo_imitation", "flat"))
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for head, move_arch in (("flat", None), ("moves", [128])):
            policy, kwargs = build_policy(config, [256, 256], move_arch=move_arch)
            path = save_policy(policy, kwargs, os.path.join(tmp, f"{head}.zip"), make_meta(config, mode="bench"))
            actor_weights = sum(p.numel() for n, p in policy.named_parameters() if "value" not in n)
            rows.append({**per_decision(path, games, seed), "network": f"{head}, random weights",
                         "actor_weights": actor_weights})
    return rows


def feature_costs(n: int, seed: int) -> dict:
    """Microseconds per decision of the move features of ``n`` observations of heuristic play: the legal moves
    packed (what the moves policy's forward computes), every action, and, for the design choice, a fixed
    gather in torch of every action's source and destination card blocks (a part of the features)."""
    import numpy as np
    import torch

    import nertz_env
    from nertz_env.actions import action_table
    from nertz_env.agents import make_agent
    from nertz_env.moves import legal_moves, move_features
    from nertz_env.observation import CARD_FEATURES, obs_layout

    torch.set_num_threads(1)
    env = nertz_env.parallel_env(num_players=4)
    agents = [make_agent("heuristic") for _ in range(4)]
    obs_l, mask_l, g = [], [], seed
    while len(obs_l) < n:
        obs, _ = env.reset(seed=g)
        for s, a in enumerate(agents):
            a.reset(env.config, s, g + s)
        g += 1
        while env.agents and len(obs_l) < n:
            obs_l += [v["observation"] for v in obs.values()]
            mask_l += [v["action_mask"] for v in obs.values()]
            obs, *_ = env.step({k: agents[s].act(v["observation"], v["action_mask"]) for s, (k, v) in enumerate(obs.items())})
    o, m = np.array(obs_l), np.array(mask_l)
    s, rows = obs_layout(env.config).slices, action_table(env.config).rows
    zero = [o.shape[1]] * CARD_FEATURES  # a zero column appended to the observations

    def block(name: str, k: int = 0) -> list[int]:
        return list(range(s[name].start + k * CARD_FEATURES, s[name].start + (k + 1) * CARD_FEATURES))

    src = [block("nertz_top") if r.src == 0 else block("waste_top") if r.src == 1 else
           block("work_exposed", r.src - 2) if r.src >= 2 else zero for r in rows]
    index = torch.tensor([a + (block("work_exposed", r.dst) if r.dst >= 0 else zero) for a, r in zip(src, rows, strict=True)])
    x = torch.as_tensor(o)

    def gather() -> None:
        torch.cat([x, x.new_zeros(len(x), 1)], 1)[:, index]

    def per_decision_us(fn: object, repeat: int) -> float:
        """The fastest of ``repeat`` calls, in CPU time of this thread (the machine's other load counts less)."""
        fn()  # type: ignore[operator]
        best = float("inf")
        for _ in range(repeat):
            t0 = time.thread_time()
            fn()  # type: ignore[operator]
            best = min(best, time.thread_time() - t0)
        return best / n * 1e6

    return {"observations": n, "legal_per_decision": float(m.sum(1).mean()),
            "packed_us": per_decision_us(lambda: legal_moves(o, m, env.config), 20),
            "every_action_us": per_decision_us(lambda: move_features(o, env.config), 5),
            "torch_gather_us": per_decision_us(gather, 5)}


def network_tables(args: argparse.Namespace) -> tuple[str, dict]:
    nets = networks(args.decision_games, args.seed)
    table = print_table(
        "Trained networks through make_agent (numpy forward, one thread), 4 of a kind at one table",
        ["network", "actor weights", "µs per decision", "CPU µs per decision", "ticks per game", "target: at most 50 µs"],
        [[r["network"], fmt(r["actor_weights"]) if "actor_weights" in r else "", f"{r['us_per_act']:.1f}",
          f"{r['cpu_us_per_act']:.1f}", f"{r['ticks_per_game']:.0f}", "met" if r["us_per_act"] <= 50 else "MISSED"]
         for r in nets],
    )
    f = feature_costs(4096, args.seed)
    table += "\n\n" + print_table(
        f"Move features of {f['observations']:,} observations of heuristic play "
        f"({f['legal_per_decision']:.1f} legal moves a decision), one thread",
        ["what", "CPU µs per decision"],
        [["legal moves, packed (nertz_env.moves.legal_moves: the moves policy's forward)", f"{f['packed_us']:.2f}"],
         ["every action (nertz_env.move_features)", f"{f['every_action_us']:.1f}"],
         ["every action, torch fixed gather of the source and destination card blocks only", f"{f['torch_gather_us']:.1f}"]],
    )
    return table, {"networks": nets, "features": f}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=1000, help="games in the timed tournament (default 1000)")
    ap.add_argument("--workers", type=int, default=2, help="processes of the tournament (default 2)")
    ap.add_argument(
        "--decision-games", type=int, default=20, help="games per agent for the per-decision times"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--env-seconds", type=float, default=10.0,
                    help="seconds per measurement of the training env with search opponents (default 10)")
    ap.add_argument("--env-tables", type=int, default=64,
                    help="tables of the training env with search opponents (default 64)")
    ap.add_argument("--networks-only", action="store_true",
                    help="time only the trained networks and the move features (needs the train extra)")
    args = ap.parse_args(argv)
    for flag, value in (("--games", args.games), ("--workers", args.workers), ("--decision-games", args.decision_games),
                        ("--env-tables", args.env_tables)):
        if value < 1:
            ap.error(f"{flag} must be at least 1, got {value}")
    if args.networks_only:
        table, data = network_tables(args)
        payload = {**data, "table": table, "time": time.time()}
        save("bench_agents_networks", payload)
        return payload
    from nertz_env.agents import LADDER

    per = [per_decision(spec, args.decision_games, args.seed) for spec in LADDER]
    rows = [
        [
            p["agent"],
            f"{p['us_per_act']:.1f}",
            f"{p['ticks_per_game']:.0f}",
            f"{p['us_per_tick']:.0f}",
            f"{p['games_per_s']:.1f}",
        ]
        for p in per
    ]
    table1 = print_table(
        "Scripted agents, 4 of a kind at one table, one process",
        ["agent", "µs per decision", "ticks per game", "µs per tick (4 decisions + env)", "games/s"],
        rows,
    )
    t = tournament(args.games, args.workers, args.seed)
    verdict = "under" if t["wall_s"] < 120 else "OVER"
    table2 = print_table(
        "Tournament harness (nertz_env.eval.run_tournament), 4 heuristic players, duplicate deals",
        ["games", "workers", "wall time (s)", "games/s", "target: 1,000 games under 120 s"],
        [[t["games"], t["workers"], f"{t['wall_s']:.1f}", f"{t['games_per_s']:.1f}", verdict]],
    )
    # side by side, alternating, twice each: the host's speed drifts within minutes
    runs = [opponent_threads(k, args.env_seconds / 2, tables=args.env_tables, seed=args.seed) for k in (1, 2, 1, 2)]
    env_rows = []
    for k in (1, 2):
        mine = [r for r in runs if r["threads"] == k]
        rate = sum(r["transitions"] for r in mine) / sum(r["seconds"] for r in mine)
        env_rows.append({"threads": k, "per_s": rate})
    base = env_rows[0]["per_s"]
    table3 = print_table(
        f"Training env (NertzVecEnv, {args.env_tables} tables, 1 random learner + 3 search opponents a table), "
        "opponent_threads",
        ["opponent_threads", "learner transitions/s", "vs 1 thread"],
        [[r["threads"], fmt(r["per_s"]), f"{r['per_s'] / base:.2f}x"] for r in env_rows],
    )
    payload = {"per_decision": per, "tournament": t, "opponent_threads": env_rows, "opponent_thread_runs": runs,
               "table": table1 + "\n\n" + table2 + "\n\n" + table3, "time": time.time()}
    save("bench_agents", payload)
    return payload


if __name__ == "__main__":
    main()
