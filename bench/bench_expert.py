"""The learned players' cost: time per decision of a flat network alone (``ppo_imitation``: numpy beside torch, on the
same observations), of ``best`` (and of ``search`` beside it, same games), and what the network would cost
inside the rollouts (the design the planner did not take).

Run: ``python bench/bench_expert.py [--games 20] [--spec best] [--network ppo_imitation]``. Prints three tables, writes
``bench/out/bench_expert.json``. The budgets on this machine: 50 µs a decision for the network alone, 2 ms for
``best``.

Table 0 plays 4-player games of ``--network`` (as ``make_agent`` builds it: one compiled call) in seat 0
against three ``search`` seats; at every decision of seat 0 the same network decides three ways on the same
observation: the compiled call, the dense numpy layers (the route before it) and torch (``probabilities``
then ``argmax``, the route before that). The order rotates by decision and a route is timed only when it goes
first, right after the search seats (which evict the weights from the caches), as in play; the choices are
compared. Each decision is timed in wall time and in the CPU time of the thread (``time.thread_time``): on a busy host the wall time includes waiting for a core, the CPU
time does not, and the budget is checked on the CPU time.

Table 1 plays 4-player games with the measured agent in seat 0 and three ``search`` seats, and times every
``act`` of seat 0 and of seat 1 (a ``search``), in the same games: the ratio is measured side by side.

Table 2 times one forward pass of the shipped network's actor (numpy, one thread) on a batch of
``rollouts x candidates`` observations, the pass that rollouts played by the network would make on every
simulated tick, and multiplies by the horizon: the network's share of one such decision, before any engine
work.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np

from common import load_average, print_table, save


def _warm_up(env: Any, agents: list[Any], seed: int, also: tuple[Callable[[Any, Any], Any], ...] = ()) -> None:
    """One whole untimed game (the network loads, numba compiles or loads its cache on the first rollout, torch
    makes its first calls); each of ``also`` decides on seat 0's observation every tick too."""
    obs, _ = env.reset(seed=seed + 1_000_000)
    for s, a in enumerate(agents):
        a.reset(env.config, s, s)
    while env.agents:
        o0 = obs[env.agents[0]]
        for f in also:
            f(o0["observation"], o0["action_mask"])
        obs, *_ = env.step({n: agents[s].act(obs[n]["observation"], obs[n]["action_mask"])
                            for s, n in enumerate(env.agents)})


def _deal(env: Any, agents: list[Any], seed: int, g: int) -> Any:
    """Game ``g``'s deal, every seat reset for it; returns the observations."""
    obs, _ = env.reset(seed=seed + g)
    for s, a in enumerate(agents):
        a.reset(env.config, s, seed + g * 4 + s)
    return obs


def per_decision(spec: str, games: int, seed: int) -> dict:
    """Seat 0 plays ``spec``, seats 1-3 ``search``: microseconds per ``act`` of seat 0 and of seat 1."""
    import nertz_env
    from nertz_env.agents import make_agent

    env = nertz_env.parallel_env(num_players=4)
    agents = [make_agent(spec)] + [make_agent("search") for _ in range(3)]
    spent = [0.0] * 4
    calls = 0
    _warm_up(env, agents, seed)  # the first rollout, which the first tick may not reach, compiles or loads
    for g in range(games):
        obs = _deal(env, agents, seed, g)
        while env.agents:
            acts = {}
            for s, n in enumerate(env.agents):
                t = time.perf_counter()
                acts[n] = agents[s].act(obs[n]["observation"], obs[n]["action_mask"])
                spent[s] += time.perf_counter() - t
            calls += 1
            obs, *_ = env.step(acts)
    return {"agent": spec, "games": games, "decisions": calls, "us_per_act": spent[0] / calls * 1e6,
            "search_us_per_act": spent[1] / calls * 1e6}


def network_alone(spec: str, games: int, seed: int) -> dict:
    """Seat 0 plays ``spec`` (a network agent as ``make_agent`` builds it), seats 1-3 ``search``; every decision
    of seat 0 is made three ways on the same observation: the compiled call ``make_agent``'s agent makes, the
    dense numpy layers (the route before it), and torch. The order rotates by decision and each route is timed
    only when it goes first, right after the env step and the search seats, as in play (the second and third
    find the weights in the caches the first filled): microseconds of each, and how often they agree."""
    import nertz_env
    from nertz_env.agents import make_agent
    from nertz_env.agents.policy import PolicyAgent

    env = nertz_env.parallel_env(num_players=4)
    agents = [make_agent(spec)] + [make_agent("search") for _ in range(3)]
    fast = agents[0]
    if not isinstance(fast, PolicyAgent) or fast.actor is None:
        raise ValueError(f"{spec!r} does not play through the numpy forward (a deterministic network agent does)")
    actor = fast.actor
    # the torch route: the same network and record, no numpy actor (what every decision cost before)
    slow = PolicyAgent(fast.policy, fast.meta, deterministic=True, name=f"{spec} (torch)")

    def dense(o: np.ndarray, m: np.ndarray) -> int:
        return int(np.argmax(np.where(np.asarray(m).astype(bool), actor.logits(o), -np.inf)))

    routes = [fast.act, dense, slow.act]
    wall = [0.0, 0.0, 0.0]  # wall time, and this thread's CPU time (what a busy host does not inflate: time
    cpu = [0.0, 0.0, 0.0]   # spent waiting for a core is not counted), of each route when it went first
    firsts = [0, 0, 0]
    calls = same_dense = same_torch = 0
    slow.reset(env.config, 0, 0)
    _warm_up(env, agents, seed, also=(slow.act, dense))
    for g in range(games):
        obs = _deal(env, agents, seed, g)
        slow.reset(env.config, 0, seed + g * 4)
        while env.agents:
            acts = {}
            o, m = obs[env.agents[0]]["observation"], obs[env.agents[0]]["action_mask"]
            chosen = [0, 0, 0]
            for k in range(3):
                r = (calls + k) % 3
                t, c = time.perf_counter(), time.thread_time()
                chosen[r] = routes[r](o, m)
                if k == 0:
                    wall[r] += time.perf_counter() - t
                    cpu[r] += time.thread_time() - c
                    firsts[r] += 1
            calls += 1
            same_dense += int(chosen[0] == chosen[1])
            same_torch += int(chosen[0] == chosen[2])
            acts[env.agents[0]] = chosen[0]
            for s, n in enumerate(env.agents[1:], start=1):
                acts[n] = agents[s].act(obs[n]["observation"], obs[n]["action_mask"])
            obs, *_ = env.step(acts)
    us = [w / max(1, f) * 1e6 for w, f in zip(wall, firsts, strict=True)]
    cpu_us = [c / max(1, f) * 1e6 for c, f in zip(cpu, firsts, strict=True)]
    return {"agent": spec, "games": games, "decisions": calls, "timed_first": firsts,
            "compiled_us_per_act": us[0], "numpy_us_per_act": us[1], "torch_us_per_act": us[2],
            "compiled_cpu_us_per_act": cpu_us[0], "numpy_cpu_us_per_act": cpu_us[1], "torch_cpu_us_per_act": cpu_us[2],
            "same_action_numpy": same_dense, "same_action": same_torch, "load_before": load_average()[0]}


def rollout_forward(path: str, batch: int, horizon: int, repeats: int = 50) -> dict:
    """Microseconds of one batched actor forward pass on ``batch`` observations, and that times ``horizon``."""
    from nertz_env.agents.policy import numpy_actor

    actor = numpy_actor(path)
    rng = np.random.default_rng(0)
    obs = rng.random((batch, actor.obs_size), dtype=np.float32)

    def forward() -> np.ndarray:
        return actor.logits(obs)

    forward()
    t0 = time.perf_counter()
    for _ in range(repeats):
        forward()
    us = (time.perf_counter() - t0) / repeats * 1e6
    return {"batch": batch, "horizon": horizon, "us_per_forward": us, "us_per_decision": us * horizon}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--games", type=int, default=20, help="games timed (default 20)")
    ap.add_argument("--spec", default="best", help="the agent timed against search (default best)")
    ap.add_argument("--network", default="ppo_imitation",
                    help="the flat network timed alone, numpy beside torch (default ppo_imitation; 'none' skips it)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.games < 1:
        ap.error(f"--games must be at least 1, got {args.games}")
    from nertz_env.agents import AgentSpecError, make_agent
    from nertz_env.agents.registry import shipped_models
    from nertz_env.threads import limit_threads

    limit_threads(1)
    from nertz_env.config import make_config

    try:
        agent = make_agent(args.spec)
        agent.reset(make_config(num_players=4), 0, 0)  # a network for another table fails here, not mid-run
    except (AgentSpecError, FileNotFoundError, ValueError) as e:
        ap.error(str(e))
    table0 = ""
    alone = None
    if args.network != "none":
        try:
            net_agent = make_agent(args.network)
            net_agent.reset(make_config(num_players=4), 0, 0)
            alone = network_alone(args.network, args.games, args.seed)
        except (AgentSpecError, FileNotFoundError, ValueError) as e:
            ap.error(str(e))
        assert alone is not None
        tc = alone["torch_cpu_us_per_act"]
        n_dec = alone["decisions"]

        def row(label: str, key: str, same: str) -> list:
            c = alone[f"{key}_cpu_us_per_act"]
            return [label, f"{alone[f'{key}_us_per_act']:.1f}", f"{c:.1f}", f"{c / tc:.2f}x",
                    "under" if c <= 50 else "OVER", same]

        table0 = print_table(
            f"The network alone: {args.network} in seat 0 against three search, {args.games} games, "
            f"{n_dec:,} decisions, each made three ways on the same observation, each route timed on the third "
            f"of the decisions where it went first (one process, one thread; load average "
            f"{alone['load_before']:.1f} on {os.cpu_count()} cores)",
            ["route", "µs per decision (wall)", "µs per decision (CPU of the thread)", "vs torch (CPU)",
             "budget (50 µs, CPU)", "same action as torch"],
            [
                row(f"compiled ({args.network} as make_agent builds it: one numba call)", "compiled",
                    f"{alone['same_action']:,} of {n_dec:,}"),
                row("numpy dense layers (the route before)", "numpy",
                    f"{alone['same_action_numpy']:,} of {n_dec:,} (as the compiled call)"),
                row("torch (probabilities, then argmax)", "torch", ""),
            ],
        )
    d = per_decision(args.spec, args.games, args.seed)
    table1 = print_table(
        f"Time per decision, {args.spec} in seat 0 and search in seat 1 of the same {args.games} games "
        "(4 players, one process, one thread)",
        ["agent", "µs per decision", "vs search", "budget (2,000 µs)"],
        [
            [args.spec, f"{d['us_per_act']:.0f}", f"{d['us_per_act'] / d['search_us_per_act']:.2f}x",
             "under" if d["us_per_act"] <= 2000 else "OVER"],
            ["search", f"{d['search_us_per_act']:.0f}", "1.00x", "under" if d["search_us_per_act"] <= 2000 else "OVER"],
        ],
    )
    spec_net = getattr(agent, "policy_spec", "ppo_imitation")  # the network the timed planner holds (best's for search)
    net = shipped_models().get(spec_net, spec_net)
    fw = [rollout_forward(net, b, h) for b, h in ((160, 20), (40, 10), (1, 1))]
    table2 = print_table(
        f"The network inside the rollouts: one batched actor pass ({os.path.basename(net)}, numpy, one thread)",
        ["observations a pass (rollouts x candidates)", "passes a decision (horizon)", "µs a pass",
         "µs a decision (network only)"],
        [[f["batch"], f["horizon"], f"{f['us_per_forward']:.0f}", f"{f['us_per_decision']:.0f}"] for f in fw],
    )
    result = {"network_alone": alone, "per_decision": d, "rollout_forward": fw,
              "table": "\n".join(t for t in (table0, table1, table2) if t)}
    save("bench_expert", result)
    return result


if __name__ == "__main__":
    main()
