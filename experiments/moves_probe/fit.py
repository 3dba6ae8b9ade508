"""Lab (issue 40 probe): clone `search`'s decisions with the flat head and the moves head from random weights.

For each number of training states N, head (flat, moves) and memory (on, off): fit the actor by cross-entropy on
the first N records of TRAIN (whole games), early-stopped on the last 10% of those N, then measure agreement with
`search` on HELDOUT (other deals) and save the clone as a policy file. One JSON line per fit to OUT.

    python fit.py TRAIN.npz HELDOUT.npz OUT.jsonl N[,N...] [head,...] [mem,...]
"""
import json
import os
import sys
import time

import gymnasium
import numpy as np
import torch

from nertz_env.actions import action_table
from nertz_env.agents.meta import make_meta
from nertz_env.config import make_config
from nertz_env.observation import MEMORY_SLICES, obs_layout
from nertz_env.train.imitate import Demonstrations, fit
from nertz_env.train.trainer import save_policy

torch.set_num_threads(1)
train_path, held_path, out = sys.argv[1:4]
sizes = [int(x) for x in sys.argv[4].split(",")]
heads = sys.argv[5].split(",") if len(sys.argv) > 5 else ["flat", "moves"]
mems = [m == "on" for m in sys.argv[6].split(",")] if len(sys.argv) > 6 else [True, False]
MAX_SAMPLES = 3_000_000  # gradient samples per fit at most (10 epochs of 300k)
CHUNK = 60_000  # samples between two validations (whole epochs, at least one)
PATIENCE = 3  # validations without a new best before stopping

full = make_config(num_players=4, memory=True, last_moves=1)
mem_cols = np.concatenate([np.arange(obs_layout(full).slices[s].start, obs_layout(full).slices[s].stop)
                           for s in MEMORY_SLICES])
keep_nomem = np.setdiff1d(np.arange(obs_layout(full).size), mem_cols)
tr, he = np.load(train_path), np.load(held_path)


def data(z, n, mem):
    obs = z["obs"][:n] if mem else z["obs"][:n][:, keep_nomem]
    return obs, z["masks"][:n], z["actions"][:n]


def build(head, config):
    obs_space = gymnasium.spaces.Box(0.0, 1.0, (obs_layout(config).size,), np.float32)
    act_space = gymnasium.spaces.Discrete(action_table(config).n)
    kwargs = {"net_arch": {"pi": [256, 256], "vf": [64]}, "activation_fn": torch.nn.ReLU}
    if head == "flat":
        from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy as cls
    else:
        from nertz_env.train.moves import MovesPolicy as cls
        kwargs.update(rules=config.to_dict(), move_arch=[128])
    torch.manual_seed(0)
    return cls(obs_space, act_space, lambda _: 3e-4, **kwargs), kwargs


def agreement(policy, obs, masks, acts):
    hits = 0
    with torch.no_grad():
        for i in range(0, len(acts), 4096):
            d = policy.get_distribution(torch.as_tensor(obs[i:i + 4096]), action_masks=masks[i:i + 4096])
            hits += int((d.distribution.probs.argmax(-1).numpy() == acts[i:i + 4096]).sum())
    return hits / len(acts)


for n in sizes:
    for mem in mems:
        config = make_config(num_players=4, memory=mem, last_moves=1)
        obs, masks, acts = data(tr, n, mem)
        cut = int(n * 0.9)
        demos = Demonstrations(obs[:cut], masks[:cut], acts[:cut], np.zeros(cut, np.float32), 0, 0.0)
        h_obs, h_masks, h_acts = data(he, len(he["actions"]), mem)
        for head in heads:
            policy, kwargs = build(head, config)
            actor = [p for name, p in policy.named_parameters() if "value" not in name and "vf" not in name]
            weights = sum(p.numel() for p in actor)
            t0 = time.perf_counter()
            best, best_state, since, epochs = -1.0, None, 0, 0
            per_chunk = max(1, round(CHUNK / cut))
            while epochs * cut < MAX_SAMPLES and since < PATIENCE:
                for _ in range(per_chunk):
                    fit(policy, demos, epochs=1, batch_size=1024, lr=3e-4, vf_coef=0.0, seed=epochs,
                        log=lambda *_: None)
                    epochs += 1
                val = agreement(policy, obs[cut:], masks[cut:], acts[cut:])
                if val > best:
                    best, best_state, since = val, {k: v.clone() for k, v in policy.state_dict().items()}, 0
                else:
                    since += 1
            policy.load_state_dict(best_state)
            fit_s = time.perf_counter() - t0
            held = agreement(policy, h_obs, h_masks, h_acts)
            path = os.path.abspath(f"clones/{head}_{'mem' if mem else 'nomem'}_{n}.zip")
            save_policy(policy, kwargs, path, make_meta(config, num_timesteps=0, mode="imitation", n_envs=1))
            row = {"n": n, "head": head, "memory": mem, "actor_weights": weights, "epochs": epochs,
                   "val_agreement": best, "heldout_agreement": held, "heldout_states": len(h_acts),
                   "fit_s": round(fit_s, 1), "policy": path}
            print(json.dumps(row), flush=True)
            with open(out, "a") as f:
                f.write(json.dumps(row) + "\n")
