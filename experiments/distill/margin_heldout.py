"""Held-out agreement with best for a multiclass hinge (margin) fit: fit on round 1's records, score on round 2's.

Only a margin violation moves the weights (max(0, m + max_{legal a != y} z_a - z_y)), so states where the
network already agrees with the teacher by the margin give no gradient, unlike cross-entropy."""
import copy
import json
import sys
import time

import torch

torch.set_num_threads(1)
from nertz_env.agents.policy import load_policy  # noqa: E402
from nertz_env.train.distill import _agreement  # noqa: E402
from nertz_env.train.imitate import Demonstrations  # noqa: E402

run = "runs/distill1"  # the distillation run of ../README (its records are 10 MB, not committed)
r1 = Demonstrations.load(f"{run}/records/round_01.npz")
r2 = Demonstrations.load(f"{run}/records/round_02.npz")
start, _ = load_policy(f"{run}/rounds/round_00.zip")
print(json.dumps({"variant": "start (ppo)", "train_agree": _agreement(start, r1), "heldout_agree": _agreement(start, r2)}), flush=True)


def logits(policy, o):
    feats = policy.extract_features(o, policy.pi_features_extractor)
    lat = policy.mlp_extractor.forward_actor(feats)
    return policy.action_net(lat)


def fit_margin(policy, demos, epochs, lr, margin, anchor_coef, batch=1024, seed=0):
    gen = torch.Generator().manual_seed(seed)
    obs = torch.as_tensor(demos.obs)
    masks = torch.as_tensor(demos.masks)
    acts = torch.as_tensor(demos.actions)
    params = list(policy.mlp_extractor.policy_net.parameters()) + list(policy.action_net.parameters())
    opt = torch.optim.Adam(params, lr=lr)
    n = obs.shape[0]
    for _ in range(epochs):
        perm = torch.randperm(n, generator=gen)
        for i in range(0, n, batch):
            idx = perm[i:i + batch]
            o, m, a = obs[idx], masks[idx], acts[idx]
            z = logits(policy, o)
            zy = z.gather(1, a[:, None]).squeeze(1)
            other = z.masked_fill(~m, -1e9).scatter(1, a[:, None], -1e9)
            loss = torch.relu(margin + other.max(1).values - zy).mean()
            if anchor_coef > 0:
                with torch.no_grad():
                    zr = logits(start, o).masked_fill(~m, -1e9)
                lp = torch.log_softmax(z.masked_fill(~m, -1e9), -1)
                pr = torch.softmax(zr, -1)
                loss = loss + anchor_coef * (pr * (torch.log_softmax(zr, -1) - lp)).sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 0.5)
            opt.step()


for v in sys.argv[1:]:
    lr, margin, anchor, epochs = v.split(":")
    t = time.time()
    pol = copy.deepcopy(start)
    pol.set_training_mode(True)
    fit_margin(pol, r1, int(epochs), float(lr), float(margin), float(anchor))
    pol.set_training_mode(False)
    print(json.dumps({"variant": v, "train_agree": _agreement(pol, r1), "heldout_agree": _agreement(pol, r2),
                      "seconds": round(time.time() - t)}), flush=True)
