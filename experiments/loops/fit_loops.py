"""Lab (issue 24): fine-tune the shipped network so that it stops undoing its own moves (collect_loops.py's
records): cross-entropy to `search`'s move on the undo states, and to the network's own move on a sample of
its other states (the anchor), only the policy head's layers trained.

Usage: python fit_loops.py TRAIN.npz[,MORE.npz] HELDOUT.npz LR EPOCHS UNDO_WEIGHT OUT.zip [head]   (a minute,
one thread; ``head``: train the last layer, ``action_net``, alone)
Prints, before and after: on the held-out undo states the share where the network still plays the undo and
the share where it plays `search`'s move; on the held-out other states the share where it keeps its own move."""
import copy
import json
import sys
import time

import numpy as np
import torch

torch.set_num_threads(1)
from stable_baselines3.common.save_util import load_from_zip_file  # noqa: E402

from nertz_env.agents.meta import make_meta  # noqa: E402
from nertz_env.agents.policy import load_policy, policy_probabilities  # noqa: E402
from nertz_env.agents.registry import shipped_models  # noqa: E402
from nertz_env.config import NertzConfig  # noqa: E402
from nertz_env.train.trainer import save_policy  # noqa: E402


def load(paths: str) -> dict[str, np.ndarray]:
    zs = [np.load(p) for p in paths.split(",")]
    return {k: np.concatenate([z[k] for z in zs]) for k in ("obs", "masks", "label", "played", "undo")}


def logits(policy, o):
    return policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(o, policy.pi_features_extractor)))


def score(pol, d):
    a = policy_probabilities(pol, d["obs"], d["masks"]).argmax(1)
    u = d["undo"]
    return {"undo_states": int(u.sum()), "still_undoes": round(float((a[u] == d["played"][u]).mean()), 4),
            "plays_search": round(float((a[u] == d["label"][u]).mean()), 4),
            "other_states": int((~u).sum()), "keeps_own": round(float((a[~u] == d["played"][~u]).mean()), 5)}


def main() -> None:
    train, held = load(sys.argv[1]), load(sys.argv[2])
    lr, epochs, w, out = float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
    path = shipped_models()["ppo"]
    start, _ = load_policy(path)
    print(json.dumps({"fit": "shipped ppo", "train": score(start, train), "heldout": score(start, held)}), flush=True)
    pol = copy.deepcopy(start)
    pol.set_training_mode(True)
    o, m = torch.as_tensor(train["obs"]), torch.as_tensor(train["masks"])
    y = torch.as_tensor(train["label"]).long()
    wt = torch.where(torch.as_tensor(train["undo"]), w, 1.0)
    head = len(sys.argv) > 7 and sys.argv[7] == "head"
    params = ([] if head else list(pol.mlp_extractor.policy_net.parameters())) + list(pol.action_net.parameters())
    opt = torch.optim.Adam(params, lr=lr)
    gen = torch.Generator().manual_seed(0)
    t = time.time()
    for _ in range(epochs):
        perm = torch.randperm(len(o), generator=gen)
        for i in range(0, len(o), 512):
            idx = perm[i : i + 512]
            z = logits(pol, o[idx]).masked_fill(~m[idx], -1e9)
            loss = (torch.nn.functional.cross_entropy(z, y[idx], reduction="none") * wt[idx]).sum() / wt[idx].sum()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 0.5)
            opt.step()
    pol.set_training_mode(False)
    print(json.dumps({"fit": {"lr": lr, "epochs": epochs, "undo_weight": w, "head": head}, "seconds": round(time.time() - t, 1),
                      "train": score(pol, train), "heldout": score(pol, held)}), flush=True)
    data, _, _ = load_from_zip_file(path, device="cpu", load_data=True, print_system_info=False)
    kwargs = dict((data or {}).get("policy_kwargs") or {})
    save_policy(pol, kwargs, out, make_meta(NertzConfig(num_players=4), num_timesteps=0,
                mode="distillation", n_envs=1, distill={"lab": "fit_loops", "train": sys.argv[1], "lr": lr,
                                                        "epochs": epochs, "undo_weight": w, "head": head}))
    print(f"saved {out}")


if __name__ == "__main__":
    main()
