"""Other card and board game environments, timed with the same random masked play as nertz-env.

Each function takes ``(seconds, seed)``, plays uniformly random legal actions for about ``seconds`` and
returns ``{"name", "agent_steps", "seconds", "steps_per_s"}``. One agent-step is one action chosen by a
player: chance nodes (cards dealt or revealed by the game) and PettingZoo's ``None`` steps for finished
agents are not counted, though the time they take is. Observations are built at every decision, as the
nertz environments build theirs. When the competitor is not installed the function raises ``ImportError``
with the reason (``pip install ".[bench]"`` installs all of them).

- ``openspiel_solitaire``: OpenSpiel's Klondike solitaire (the nearest single-player relative of Nertz),
  one ``observation_tensor()`` per decision.
- ``pettingzoo_leduc``, ``pettingzoo_connect_four``: PettingZoo classic card/board games through the AEC
  loop.
- ``pettingzoo_gin_rummy``: PettingZoo's ``gin_rummy_v4`` (the card game closest to Nertz it had). PettingZoo
  1.27 no longer ships it and it does not run beside this project's dependencies, so it runs in a venv of its
  own (``bash bench/setup_gin_venv.sh`` makes ``.venv-gin`` with pettingzoo 1.24.3 and rlcard; or set
  ``NERTZ_GIN_PYTHON`` to an interpreter that has them): the same loop, in a subprocess, in the same run.
- ``pgx_leduc_1024``: pgx's Leduc hold'em, 1,024 games batched with ``jax.vmap`` in one jit-compiled step
  that also samples the actions and resets finished games; compile time is excluded.

Run one directly: ``python bench/competitors.py [--seconds 5] [name ...]``.
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

from common import MaskedSampler, fmt, timed_loop

PGX_BATCH = 1024


def _result(name: str, agent_steps: int, seconds: float) -> dict[str, Any]:
    return {
        "name": name,
        "agent_steps": agent_steps,
        "seconds": seconds,
        "steps_per_s": agent_steps / seconds,
    }


def openspiel_solitaire(seconds: float, seed: int) -> dict[str, Any]:
    """OpenSpiel ``solitaire``: random legal moves, chance outcomes drawn by their probabilities."""
    try:
        import pyspiel
    except ImportError as e:
        raise ImportError(f"open_spiel is not installed ({e})") from e

    game = pyspiel.load_game("solitaire")
    sample = MaskedSampler(seed)
    chance_rng = np.random.default_rng(seed + 1)
    holder = {"state": game.new_initial_state()}

    def settle(state: Any) -> Any:
        """Resolve chance nodes (not agent-steps) and start a new game at the end of one."""
        while True:
            if state.is_terminal():
                state = game.new_initial_state()
            elif state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                cum = np.cumsum(probs)
                k = min(
                    int(np.searchsorted(cum, chance_rng.random() * cum[-1], side="right")), len(outcomes) - 1
                )
                state.apply_action(outcomes[k])
            else:
                return state

    holder["state"] = settle(holder["state"])

    def step() -> int:
        state = holder["state"]
        state.observation_tensor()  # what an agent would be shown, built every decision
        state.apply_action(sample.choice(state.legal_actions()))
        holder["state"] = settle(state)
        return 1

    n, dt = timed_loop(step, seconds)
    return _result("OpenSpiel solitaire (1 player)", n, dt)


def _pettingzoo_aec(make: Callable[[], Any], name: str, seconds: float, seed: int) -> dict[str, Any]:
    env = make()
    env.reset(seed=seed)
    sample = MaskedSampler(seed)

    def step() -> int:
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            counted = 0
        else:
            env.step(sample(obs["action_mask"]))
            counted = 1
        if not env.agents:
            env.reset()
        return counted

    n, dt = timed_loop(step, seconds)
    return _result(name, n, dt)


def pettingzoo_leduc(seconds: float, seed: int) -> dict[str, Any]:
    """PettingZoo ``leduc_holdem_v4`` (RLCard underneath), AEC loop, 2 players."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    try:
        from pettingzoo.classic import leduc_holdem_v4
    except ImportError as e:  # needs rlcard and pygame
        raise ImportError(f"pettingzoo leduc_holdem_v4 cannot be imported ({e})") from e
    return _pettingzoo_aec(leduc_holdem_v4.env, "PettingZoo leduc_holdem_v4 AEC (2 players)", seconds, seed)


def pettingzoo_connect_four(seconds: float, seed: int) -> dict[str, Any]:
    """PettingZoo ``connect_four_v3``, AEC loop, 2 players."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    try:
        from pettingzoo.classic import connect_four_v3
    except ImportError as e:  # needs pygame
        raise ImportError(f"pettingzoo connect_four_v3 cannot be imported ({e})") from e
    return _pettingzoo_aec(connect_four_v3.env, "PettingZoo connect_four_v3 AEC (2 players)", seconds, seed)


def pgx_leduc_1024(seconds: float, seed: int) -> dict[str, Any]:
    """pgx ``leduc_holdem``: 1,024 games per jit-compiled, vmapped step; 1,024 agent-steps per step."""
    try:
        import jax
        import jax.numpy as jnp
        import pgx
    except ImportError as e:
        raise ImportError(f"pgx and jax are not installed ({e})") from e

    env = pgx.make("leduc_holdem")
    batch = PGX_BATCH
    v_init = jax.vmap(env.init)
    v_step = jax.vmap(env.step)

    def tick(state: Any, key: Any) -> tuple[Any, Any]:
        key, k_act, k_step, k_reset = jax.random.split(key, 4)
        # uniform over the legal actions: categorical on log(mask) gives -inf to the illegal ones
        logits = jnp.log(state.legal_action_mask.astype(jnp.float32))
        action = jax.random.categorical(k_act, logits, axis=-1)
        state = v_step(state, action, jax.random.split(k_step, batch))
        done = state.terminated | state.truncated
        fresh = v_init(jax.random.split(k_reset, batch))

        def pick(new: Any, old: Any) -> Any:
            return jnp.where(done.reshape(done.shape + (1,) * (old.ndim - 1)), new, old)

        return jax.tree_util.tree_map(pick, fresh, state), key

    tick_jit = jax.jit(tick)
    key = jax.random.PRNGKey(seed)
    key, k0 = jax.random.split(key)
    state = jax.jit(v_init)(jax.random.split(k0, batch))
    for _ in range(20):  # compile and warm up, not timed
        state, key = tick_jit(state, key)
    jax.block_until_ready(state)

    chunk = 64
    n = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(chunk):
            state, key = tick_jit(state, key)
        jax.block_until_ready(state)
        n += chunk * batch
        now = time.perf_counter()
        if now >= deadline:
            return _result(f"pgx leduc_holdem, {batch:,} games (jax.vmap, jit)", n, now - t0)


GIN_PYTHON_DEFAULT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".venv-gin", "bin", "python")


def _gin_rummy_here(seconds: float, seed: int) -> dict[str, Any]:
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    from pettingzoo.classic import gin_rummy_v4

    return _pettingzoo_aec(gin_rummy_v4.env, "PettingZoo gin_rummy_v4 AEC (2 players; pettingzoo 1.24.3)", seconds, seed)


def pettingzoo_gin_rummy(seconds: float, seed: int) -> dict[str, Any]:
    """PettingZoo ``gin_rummy_v4`` (RLCard underneath), AEC loop, 2 players, in the gin venv's interpreter."""
    import json
    import subprocess

    python = os.environ.get("NERTZ_GIN_PYTHON", GIN_PYTHON_DEFAULT)
    if not os.path.exists(python):
        raise ImportError(f"no interpreter with gin_rummy_v4 at {python} (run: bash bench/setup_gin_venv.sh)")
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import competitors; "
        "print(json.dumps(competitors._gin_rummy_here(float(sys.argv[2]), int(sys.argv[3]))))"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run(
        [python, "-c", code, here, str(seconds), str(seed)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise ImportError(f"gin_rummy_v4 failed under {python}: {done.stderr.strip().splitlines()[-1:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


ALL = {
    "openspiel_solitaire": openspiel_solitaire,
    "pettingzoo_leduc": pettingzoo_leduc,
    "pettingzoo_connect_four": pettingzoo_connect_four,
    "pettingzoo_gin_rummy": pettingzoo_gin_rummy,
    "pgx_leduc_1024": pgx_leduc_1024,
}


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("names", nargs="*", help=f"competitors to run (default: all): {', '.join(ALL)}")
    args = ap.parse_args(argv)
    unknown = [n for n in args.names if n not in ALL]
    if unknown:
        ap.error(f"unknown competitor(s) {', '.join(unknown)}; known: {', '.join(ALL)}")
    results = []
    for name in args.names or list(ALL):
        try:
            r = ALL[name](args.seconds, args.seed)
        except ImportError as e:
            print(f"  {name}: skipped: {e}", flush=True)
            continue
        results.append(r)
        print(
            f"  {r['name']}: {fmt(r['steps_per_s'])} agent-steps/s ({r['agent_steps']:,} in {r['seconds']:.1f} s)",
            flush=True,
        )
    return results


if __name__ == "__main__":
    main()
