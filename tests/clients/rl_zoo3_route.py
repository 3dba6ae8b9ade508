"""RL Zoo 3's own command on the Gymnasium id (docs/clients/routes.md) trains and saves a PPO, which plays
unmasked: illegal actions are applied as flagged waits. Run by tests/test_clients.py; prints a JSON line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium
from stable_baselines3 import PPO

import nertz_env  # noqa: F401  (registers the ids for the episode below)

cmd = [sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", "nertz_env/Nertz-v0", "--gym-packages",
       "nertz_env", "-n", "128", "--seed", "0", "--env-kwargs", "num_players:2", "max_ticks:60",
       "--hyperparams", "n_steps:64", "batch_size:64", "n_envs:1", "--eval-freq", "-1", "--log-folder", "logs"]
proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
if proc.returncode != 0:
    raise SystemExit(f"rl_zoo3.train failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
(saved,) = Path("logs/ppo").glob("nertz_env-Nertz-v0_*/nertz_env-Nertz-v0.zip")
model = PPO.load(saved)
env = gymnasium.make("nertz_env/Nertz-v0", num_players=2, max_ticks=60)
obs, _ = env.reset(seed=0)
decisions = illegal = 0
done = False
while not done:
    action, _ = model.predict(obs, deterministic=False)
    obs, _reward, term, trunc, info = env.step(action)
    decisions += 1
    illegal += bool(info["illegal"])
    done = term or trunc
print(json.dumps({"saved": saved.name, "decisions": decisions, "illegal": illegal,
                  "trained": "total_timesteps" in proc.stdout or "Saving to" in proc.stdout}))
