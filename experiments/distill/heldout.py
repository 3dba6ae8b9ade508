"""Held-out agreement with best (lab script, 2026-11-25): fit variants from round_00 on round 1's records of
``runs/distill1``, scored on round 2's records. Run from the repository root:
``python experiments/distill/heldout.py 5e-5:0.1:2 1e-5:1.0:2 1e-5:0:1`` (lr:anchor:epochs per variant)."""

import copy
import json
import sys
import time

import torch

from nertz_env.agents.policy import load_policy
from nertz_env.train.distill import _agreement
from nertz_env.train.imitate import Demonstrations, fit

torch.set_num_threads(1)
RUN = "runs/distill1"
r1 = Demonstrations.load(f"{RUN}/records/round_01.npz")
r2 = Demonstrations.load(f"{RUN}/records/round_02.npz")
start, _ = load_policy(f"{RUN}/rounds/round_00.zip")
print(json.dumps({"variant": "start (ppo)", "train_agree": _agreement(start, r1),
                  "heldout_agree": _agreement(start, r2)}), flush=True)
for lr, anchor, epochs in [(float(a), float(b), int(c)) for a, b, c in (v.split(":") for v in sys.argv[1:])]:
    t = time.time()
    pol = copy.deepcopy(start)
    fit(pol, r1, epochs=epochs, batch_size=1024, lr=lr, seed=0, log=lambda *_: None, anchor=start,
        anchor_coef=anchor)
    print(json.dumps({"variant": f"lr={lr} anchor={anchor} epochs={epochs}", "train_agree": _agreement(pol, r1),
                      "heldout_agree": _agreement(pol, r2), "seconds": round(time.time() - t)}), flush=True)
