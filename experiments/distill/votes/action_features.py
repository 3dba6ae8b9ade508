"""Lab (issue 24): do features of each legal action, read from the observation alone, let a small head on top
of the shipped network learn the decisions of `best` it does not make?

The states and `best`'s four votes per state come from ``collect_votes.py``. For every legal action the
features say what it does and what it uncovers, all from the observation (no hidden card, no simulation):
its kind and source, the moved card's rank, whether the work pile it leaves shows a card that can go to
the lake now or can take the Nertz top or the waste top (or is left empty), whether its destination was a
place the Nertz top could have gone, the run's length, the stock's and waste's counts for a flip. The head
adds ``g(features) + a * base`` to the shipped network's logits (``a`` and ``g`` fitted, ``g`` starts at 0),
trained on TRAIN's vote distributions and scored on HELDOUT as ``fit_votes.py`` scores ("share": the mean
fraction of the votes the first choice gets; "majority": agreement with the most-voted action).

Run: ``python action_features.py TRAIN.npz HELDOUT.npz [WIDTH] [EPOCHS] [LR] [soft or a hinge margin] [--hidden]``
(a minute, one thread). ``--hidden`` adds :func:`hidden_features` (records made with ``collect_votes.py ... state``).
"""
import json
import sys

import numpy as np
import torch

from nertz_env.actions import FLIP, LAKE, RUN, TO_WORK, WAIT, ActionTable
from nertz_env.agents.forward import NumpyActor
from nertz_env.agents.registry import shipped_models
from nertz_env.config import NertzConfig
from nertz_env.observation import obs_layout

torch.set_num_threads(1)
CFG = NertzConfig(num_players=4)
LAYOUT = obs_layout(CFG)
ROWS = ActionTable(CFG).rows
W = CFG.work_piles
RED = np.array([0, 1, 1, 0])  # C D H S


def _card(v: np.ndarray) -> tuple[int, int]:
    """(rank 0-12, suit 0-3) of an 18-wide card block, or (-1, -1) for an empty slot."""
    if not v[:13].any():
        return -1, -1
    return int(np.argmax(v[:13])), int(np.argmax(v[13:17]))


def _takes(top: tuple[int, int], card: tuple[int, int]) -> bool:
    """Whether a work pile whose exposed card is ``top`` (-1: empty) takes ``card`` as the next one."""
    if card[0] < 0:
        return False
    if top[0] < 0:
        return True
    return card[0] == top[0] - 1 and RED[card[1]] != RED[top[1]]


def features(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(172, F) features of one state's actions (zeros for illegal ones). Columns 12-14 mean different things
    by kind (the kind's one-hot comes first): for a flip the stock's count, the waste's count and "the stock is
    empty"; for a move, column 13 is "it takes a place the Nertz top could have used" and, for a Nertz card
    onto a work pile, column 14 the Nertz pile's count."""
    s = LAYOUT.slices
    lake = obs[s["lake_tops"]] > 0

    def lakeable(c: tuple[int, int]) -> bool:
        return c[0] == 0 or (c[0] > 0 and bool(lake[c[1] * 13 + c[0] - 1]))

    nertz, waste = _card(obs[s["nertz_top"]]), _card(obs[s["waste_top"]])
    grid = obs[s["work_cards"]].reshape(W, 4, 13)
    piles = []  # each pile's cards from the exposed one down: [(rank, suit), ...]
    for j in range(W):
        cells = [(r, int(np.argmax(grid[j, :, r]))) for r in range(13) if grid[j, :, r].max() > 0.75]
        piles.append(cells)  # ascending rank = from the exposed card down
    stock = float(obs[s["stock_count"]][0])
    wcount = float(obs[s["waste_count"]][0])
    ncount = float(obs[s["nertz_count"]][0])
    out = np.zeros((len(ROWS), 16), np.float32)
    for a in np.flatnonzero(mask):
        r = ROWS[a]
        f = out[a]
        exposed = None  # what the source work pile shows after the action, if it is a work pile
        moved = (-1, -1)
        if r.kind == WAIT:
            f[0] = 1
        elif r.kind == FLIP:
            f[1] = 1
            f[12] = stock
            f[13] = wcount
            f[14] = float(stock == 0)
        elif r.kind in (LAKE, TO_WORK):
            src = r.src
            base = 2 if r.kind == LAKE else 5
            f[base + min(src, 2)] = 1
            if src == 0:
                moved = nertz
            elif src == 1:
                moved = waste
            else:
                pile = piles[src - 2]
                moved = pile[0] if pile else (-1, -1)
                exposed = pile[1] if len(pile) > 1 else (-1, -1)
        elif r.kind == RUN:
            f[7] = 1
            pile = piles[r.src - 2]
            moved = pile[r.length - 1] if len(pile) >= r.length else (-1, -1)
            exposed = pile[r.length] if len(pile) > r.length else (-1, -1)
            f[15] = r.length / 13
        f[8] = (moved[0] + 1) / 13
        if exposed is not None:
            f[9] = float(lakeable(exposed) if exposed[0] >= 0 else 0)
            f[10] = float(_takes(exposed, nertz))
            f[11] = float(_takes(exposed, waste)) if r.kind != FLIP else 0
        if r.kind in (TO_WORK, RUN) and r.dst >= 0 and r.src != 0:
            dpile = piles[r.dst]
            dtop = dpile[0] if dpile else (-1, -1)
            f[13] = float(_takes(dtop, nertz))  # the move takes a place the Nertz top could have used
        if r.kind == TO_WORK and r.src == 0:
            f[14] = ncount
    return out


def hidden_features(own: np.ndarray, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(172, 6) features of the one own hidden card an action would show (from the global state, never a
    player's input; more than a player knows of the Nertz pile, less than a memory of the whole stock): for a
    waste play, the card under the waste top; for a Nertz play, the card under the Nertz top; for a flip, the
    next waste top. Each: it exists, it can go to the lake now, some work pile takes it now."""
    s = LAYOUT.slices
    lake = obs[s["lake_tops"]] > 0
    grid = obs[s["work_cards"]].reshape(W, 4, 13)
    tops = []
    for j in range(W):
        ranks = [r for r in range(13) if grid[j, :, r].max() > 0.75]
        tops.append((ranks[0], int(np.argmax(grid[j, :, ranks[0]]))) if ranks else (-1, -1))

    def pile(loc: int) -> list[tuple[int, int]]:
        idx = np.flatnonzero(own[:52, loc] > 0.5)
        idx = idx[np.argsort(own[idx, -1])]  # from the top down
        return [(int(i) % 13, int(i) // 13) for i in idx]

    def describe(c: tuple[int, int] | None) -> list[float]:
        if c is None:
            return [0.0, 0.0, 0.0]
        lk = c[0] == 0 or bool(lake[c[1] * 13 + c[0] - 1])
        return [1.0, float(lk), float(any(_takes(t, c) for t in tops))]

    nertz, stock, waste = pile(0), pile(1), pile(2)
    under_waste = waste[1] if len(waste) > 1 else None
    under_nertz = nertz[1] if len(nertz) > 1 else None
    next_top = stock[min(CFG.draw, len(stock)) - 1] if stock else None
    out = np.zeros((len(ROWS), 6), np.float32)
    for a in np.flatnonzero(mask):
        r = ROWS[a]
        if r.kind == FLIP:
            out[a, :3] = describe(next_top)
        elif r.kind in (LAKE, TO_WORK) and r.src == 1:
            out[a, 3:] = describe(under_waste)
        elif r.kind in (LAKE, TO_WORK) and r.src == 0:
            out[a, 3:] = describe(under_nertz)
    return out


def load(path: str) -> tuple[np.ndarray, ...]:
    z = np.load(path)
    v = z["votes"]
    soft = np.zeros((len(v), z["masks"].shape[1]), np.float32)
    for k in range(v.shape[1]):
        np.add.at(soft, (np.arange(len(v)), v[:, k]), 1.0 / v.shape[1])
    feats = np.stack([features(o, m) for o, m in zip(z["obs"], z["masks"], strict=True)])
    if HIDDEN:
        hidden = np.stack([hidden_features(c, o, m) for c, o, m in zip(z["own_cards"], z["obs"], z["masks"], strict=True)])
        feats = np.concatenate([feats, hidden], axis=-1)
    base = NumpyActor.load(shipped_models()["ppo"]).logits(z["obs"]).astype(np.float32)
    return base, feats, z["masks"], soft


def score(z: np.ndarray, m: np.ndarray, s: np.ndarray) -> dict[str, float]:
    a = np.where(m, z, -np.inf).argmax(1)
    return {"share": round(float(s[np.arange(len(a)), a].mean()), 5),
            "majority": round(float((a == s.argmax(1)).mean()), 5)}


class Head(torch.nn.Module):
    def __init__(self, nf: int, hidden: int) -> None:
        super().__init__()
        self.g = torch.nn.Sequential(torch.nn.Linear(nf, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
        torch.nn.init.zeros_(self.g[2].weight)
        torch.nn.init.zeros_(self.g[2].bias)
        self.a = torch.nn.Parameter(torch.ones(()))

    def forward(self, base: torch.Tensor, feats: torch.Tensor) -> torch.Tensor:
        return self.a * base + self.g(feats).squeeze(-1)


HIDDEN = "--hidden" in sys.argv
if HIDDEN:
    sys.argv.remove("--hidden")


def main() -> None:
    train, held = load(sys.argv[1]), load(sys.argv[2])
    hidden = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    epochs = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    lr = float(sys.argv[5]) if len(sys.argv) > 5 else 3e-3
    print(json.dumps({"fit": "none (the shipped ppo)", "train": score(train[0], train[2], train[3]),
                      "heldout": score(held[0], held[2], held[3])}))
    torch.manual_seed(0)
    head = Head(train[1].shape[-1], hidden)
    loss_kind = sys.argv[6] if len(sys.argv) > 6 else "soft"
    if loss_kind != "soft":  # hinge on the unanimous states, the shipped network's scale kept
        head.a.requires_grad_(False)
    opt = torch.optim.Adam(head.parameters(), lr=lr)
    b, f, m, s = (torch.as_tensor(x) for x in train)
    gen = torch.Generator().manual_seed(0)
    for epoch in range(epochs):
        perm = torch.randperm(len(b), generator=gen)
        for i in range(0, len(b), 256):
            idx = perm[i : i + 256]
            z = head(b[idx], f[idx]).masked_fill(~m[idx], -1e9)
            if loss_kind == "soft":
                loss = -(s[idx] * torch.log_softmax(z, -1)).sum(-1).mean()
            else:
                keep = s[idx].max(1).values == 1.0
                y = s[idx].argmax(1)
                zy = z.gather(1, y[:, None]).squeeze(1)
                other = z.scatter(1, y[:, None], -1e9).max(1).values
                loss = (torch.relu(float(loss_kind) + other - zy) * keep).sum() / keep.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if epoch % 5 == 4 or epoch == epochs - 1:
            with torch.no_grad():
                zt = head(b, f).numpy()
                zh = head(torch.as_tensor(held[0]), torch.as_tensor(held[1])).numpy()
            print(json.dumps({"fit": f"head h{hidden} lr{lr}", "epoch": epoch + 1, "a": round(float(head.a.detach()), 3),
                              "train": score(zt, train[2], train[3]), "heldout": score(zh, held[2], held[3])}))


if __name__ == "__main__":
    main()
