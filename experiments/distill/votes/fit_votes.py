"""Lab (issue 24): can the shipped network learn the decisions of `best` it does not already make, once the
teacher's own randomness is voted out of the labels?

Records come from ``collect_votes.py`` (best labels each state 4 times). Fits start from the shipped ``ppo``,
train on TRAIN and are scored on HELDOUT (other seeds' games): ``share`` is the mean fraction of best's votes
the network's first choice got (its expected agreement with one sample of best), ``majority`` its agreement
with the most-voted action. Variants:

- ``soft:LR:ANCHOR:EPOCHS:TEMP``: cross-entropy to the vote distribution (+ KL anchor to the start);
- ``hinge:LR:MARGIN:EPOCHS``: a multiclass hinge on the unanimous states only (the cleanest labels).

Run: ``python fit_votes.py TRAIN.npz HELDOUT.npz VARIANT...`` (seconds each, one thread)."""
import copy
import json
import sys
import time

import numpy as np
import torch

torch.set_num_threads(1)
from nertz_env.agents.policy import load_policy, policy_probabilities  # noqa: E402
from nertz_env.agents.registry import shipped_models  # noqa: E402


def load(path):
    z = np.load(path)
    v = z["votes"]
    soft = np.zeros((len(v), z["masks"].shape[1]), np.float32)
    for k in range(v.shape[1]):
        np.add.at(soft, (np.arange(len(v)), v[:, k]), 1.0 / v.shape[1])
    return z["obs"], z["masks"], soft


def logits(policy, o):
    return policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(o, policy.pi_features_extractor)))


def score(pol, data):
    o, m, s = data
    a = policy_probabilities(pol, o, m).argmax(1)
    return {"share": round(float(s[np.arange(len(a)), a].mean()), 5), "majority": round(float((a == s.argmax(1)).mean()), 5)}


def fit(pol, start, data, kind, params, batch=512):
    o, m, s = (torch.as_tensor(x) for x in data)
    if kind == "hinge":
        keep = s.max(1).values == 1.0
        o, m, s = o[keep], m[keep], s[keep]
        lr, margin, epochs = float(params[0]), float(params[1]), int(params[2])
    else:
        lr, anchor, epochs, temp = float(params[0]), float(params[1]), int(params[2]), float(params[3])
    gen = torch.Generator().manual_seed(0)
    weights = list(pol.mlp_extractor.policy_net.parameters()) + list(pol.action_net.parameters())
    opt = torch.optim.Adam(weights, lr=lr)
    for _ in range(epochs):
        perm = torch.randperm(len(o), generator=gen)
        for i in range(0, len(o), batch):
            idx = perm[i : i + batch]
            z = logits(pol, o[idx])
            if kind == "hinge":
                y = s[idx].argmax(1)
                zy = z.gather(1, y[:, None]).squeeze(1)
                other = z.masked_fill(~m[idx], -1e9).scatter(1, y[:, None], -1e9)
                loss = torch.relu(margin + other.max(1).values - zy).mean()
            else:
                z = z.masked_fill(~m[idx], -1e9)
                loss = -(s[idx] * torch.log_softmax(z / temp, -1)).sum(-1).mean()
                if anchor > 0:
                    with torch.no_grad():
                        zr = logits(start, o[idx]).masked_fill(~m[idx], -1e9)
                    pr = torch.softmax(zr, -1)
                    loss = loss + anchor * (pr * (torch.log_softmax(zr, -1) - torch.log_softmax(z, -1))).sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(weights, 0.5)
            opt.step()


def main():
    train, heldout = load(sys.argv[1]), load(sys.argv[2])
    for name, (o, _m, s) in (("train", train), ("heldout", heldout)):
        print(json.dumps({"set": name, "records": len(o), "unanimous": round(float((s.max(1) == 1.0).mean()), 5),
                          "ceiling_share": round(float(s.max(1).mean()), 5)}), flush=True)
    start, _ = load_policy(shipped_models()["ppo"])
    print(json.dumps({"variant": "shipped ppo", "train": score(start, train), "heldout": score(start, heldout)}), flush=True)
    for v in sys.argv[3:]:
        kind, *params = v.split(":")
        t = time.time()
        pol = copy.deepcopy(start)
        pol.set_training_mode(True)
        fit(pol, start, train, kind, params)
        pol.set_training_mode(False)
        print(json.dumps({"variant": v, "train": score(pol, train), "heldout": score(pol, heldout),
                          "seconds": round(time.time() - t, 1)}), flush=True)


if __name__ == "__main__":
    main()
