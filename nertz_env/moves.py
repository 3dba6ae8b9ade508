"""Move features: for each action, a short vector that says what the move does, read from the seat's observation
alone (no hidden card), for a move-scoring policy. The slices and what they mean: docs/env/nertz.md, "Move
features". Compiled with numba; the policy's numpy forward calls the same row function (:func:`write_move`).
"""

from __future__ import annotations

import functools

import numpy as np

import nertz_env.observation
from nertz_env.actions import FLIP, JOKER_LAKE, KIND_NAMES, LAKE, RUN, TUCK, action_table
from nertz_env.config import NertzConfig
from nertz_env.engine._cache import keyed_jit
from nertz_env.engine.rules import (
    can_stack,
    card_colour,
    card_rank,
    exposed_value,
    fixed_value,
    joker_rank,
    lake_takes,
    suit_is_red,
    write_card,
)
from nertz_env.observation import (
    CARD_FEATURES,
    O_LAKE,
    O_LAST,
    O_NCOUNT,
    O_NTOP,
    O_SCOUNT,
    O_WCNT,
    O_WCOUNT,
    O_WEXP,
    O_WORK,
    O_WTOP,
    named_slices,
    obs_layout,
)

FLAGS = ("empties", "reveals", "to_lake", "frees_nertz", "frees_waste", "blocks_nertz", "recycles", "undo")
# Slots of MoveLayout.offsets, the integers the kernel reads.
M_KIND, M_SRC, M_DST, M_CARD, M_RED, M_LEN, M_DTOP, M_DEMPTY, M_UNCOVER, M_FLAGS, M_SIZE = range(11)
# Slots of the kernel's parameter array.
K_NS, K_DECK, K_FIRST, K_ACTIONS, K_LAST = range(5)


class MoveLayout:
    """Named slices of a move's feature vector for one config (docs/env/nertz.md, "Move features").

    :func:`move_layout` makes one per config and shares it: ``offsets`` is read-only.
    """

    def __init__(self, config: NertzConfig) -> None:
        self.config = config
        w = config.work_piles
        sizes = [
            ("kind", len(KIND_NAMES)),
            ("source", 3 + w),
            ("dest", 2 + w),
            ("card", CARD_FEATURES),
            ("red", 1),
            ("length", 1),
            ("dest_top", CARD_FEATURES),
            ("dest_empty", 1),
            ("uncovers", CARD_FEATURES),
            *((f, 1) for f in FLAGS),
        ]
        self.slices = named_slices(sizes)
        self.size = sum(n for _, n in sizes)
        # the kernel's arrays: these offsets (M_*; the flags' start), the action table's columns, the
        # parameters (K_*) and the observation's offsets
        self.offsets = np.array(
            [sl.start for sl in list(self.slices.values())[: M_FLAGS + 1]] + [self.size], np.int64
        )
        t, obs = action_table(config), obs_layout(config)
        self.columns = np.stack(
            [t.arrays()[f].astype(np.int64) for f in ("kind", "src", "dst", "length", "suit")], 1
        )
        last = obs.offsets[O_LAST] if config.last_moves else -1
        self.params = np.array(
            [config.nertz_size, config.deck_size, config.empty_pile_from_nertz_first, t.n, last], np.int64
        )
        self.obs_offsets = obs.offsets.astype(np.int64)
        for arr in (self.offsets, self.columns, self.params, self.obs_offsets):
            arr.flags.writeable = False

    @property
    def kernel(self) -> tuple[np.ndarray, ...]:
        """The arrays :func:`write_move` reads after ``last``: obs offsets, action columns, params, offsets."""
        return self.obs_offsets, self.columns, self.params, self.offsets


@functools.cache
def move_layout(config: NertzConfig) -> MoveLayout:
    """The move feature layout of a config, built once per config and shared."""
    return MoveLayout(config)


# numba's options of a compiled call, and of its helpers
KERNEL = {"nogil": True, "error_model": "numpy", "no_cfunc_wrapper": True}
inline = keyed_jit({**KERNEL, "no_cpython_wrapper": True, "forceinline": True}, cache=False)


read_card = inline(nertz_env.observation.read_card)  # the observation's card decoder, compiled


@inline
def _code_at(x, off, j, n, depth):
    """The code of work pile ``j``'s card ``depth`` below its exposed one (``n`` cards), -1 for none. The pile is
    a run, so that card's rank is the exposed one's plus ``depth`` (a wild joker on top stands one below the
    lowest card under it)."""
    if depth < 0 or depth >= n:
        return -1
    top = read_card(x, off[O_WEXP] + j * CARD_FEATURES)
    if depth == 0:
        return top
    base = off[O_WORK] + j * 52
    r = card_rank(top)
    if r < 0:
        r = 13
        for rank in range(12, -1, -1):
            for u in range(4):
                if x[base + u * 13 + rank] > 0.0:
                    r = rank
        r -= 1
    r += depth
    if r > 12:
        return -1
    for u in range(4):
        if x[base + u * 13 + r] > 0.75:
            return u * 13 + r
    return fixed_value(r, 1 if x[base + 13 + r] > 0.0 else 0)


@inline
def _put(out, dst, c):
    """The observation's card block of code ``c`` at ``out[dst:]`` (the engine's encoder, on a row)."""
    write_card(out.reshape((1, 1, out.shape[0])), 0, 0, dst, c)


@inline
def _takes(value, upper):
    """May card ``upper`` (-1: none) go onto a work pile of stacking value ``value`` (-1: empty)?"""
    return upper >= 0 and (value < 0 or can_stack(upper, value))


@inline
def _lakeable(x, off, c):
    """May card ``c`` (never a wild joker; -1: none) go to the lake now (a fixed joker as a suit of its colour)?"""
    if c < 52:
        return lake_takes(x, off[O_LAKE], c)
    for u in range(4):
        if (1 if suit_is_red(u) else 0) == card_colour(c) and joker_rank(x, off[O_LAKE], c, u) >= 0:
            return True
    return False


@inline
def write_move(x, a, last, off, cols, params, mo, out):
    """Write action ``a``'s features for the observation ``x`` into ``out`` (zeroed, ``MoveLayout.size``);
    ``last``: the seat's last move (-1: none or unknown; the ``last_moves`` slice wins when present). Stacking
    and the lake follow the engine's own rules."""
    kind, src, dst, length, suit = cols[a, 0], cols[a, 1], cols[a, 2], cols[a, 3], cols[a, 4]
    out[mo[M_KIND] + kind] = 1.0
    f = mo[M_FLAGS]
    if kind == FLIP:
        stock = x[off[O_SCOUNT]] > 0.0
        out[f + 1] = 1.0 if stock else 0.0
        out[f + 6] = 0.0 if stock else 1.0
        return
    if src < 0:
        return
    ntop = read_card(x, off[O_NTOP])
    n_nertz = int(x[off[O_NCOUNT]] * params[K_NS] + 0.5)
    moved = max(length, 1)
    # the source: its kind and index, the card that moves, what the move leaves there
    if src < 2:
        out[mo[M_SRC] + src] = 1.0
        card = ntop if src == 0 else read_card(x, off[O_WTOP])
        left = n_nertz if src == 0 else int(x[off[O_WCOUNT]] * params[K_DECK] + 0.5)
        out[f] = 1.0 if left == 1 else 0.0
        out[f + 1] = 1.0 if left > 1 else 0.0
    else:
        i = src - 2
        out[mo[M_SRC] + 2] = 1.0
        out[mo[M_SRC] + 3 + i] = 1.0
        n = int(x[off[O_WCNT] + i] * 13.0 + 0.5)
        card = _code_at(x, off, i, n, moved - 1)
        left = _code_at(x, off, i, n, moved)  # what the pile shows after the move (-1: empty)
        _put(out, mo[M_UNCOVER], left)
        nertz_first = params[K_FIRST] != 0 and n_nertz > 0
        out[f] = 1.0 if left < 0 else 0.0
        out[f + 2] = 1.0 if left >= 0 and _lakeable(x, off, left) else 0.0
        out[f + 3] = 1.0 if _takes(left, ntop) else 0.0
        frees_waste = _takes(left, read_card(x, off[O_WTOP])) and not (nertz_first and left < 0)
        out[f + 4] = 1.0 if frees_waste else 0.0
    _put(out, mo[M_CARD], card)
    if kind == JOKER_LAKE:
        out[mo[M_CARD] + 13 + suit] = 1.0
    out[mo[M_RED]] = 1.0 if out[mo[M_CARD] + 14] + out[mo[M_CARD] + 15] > 0.0 else 0.0
    out[mo[M_LEN]] = moved / 13.0
    # the destination
    if kind == LAKE or kind == JOKER_LAKE:
        out[mo[M_DST]] = 1.0
        return
    out[mo[M_DST] + 1] = 1.0
    out[mo[M_DST] + 2 + dst] = 1.0
    nd = int(x[off[O_WCNT] + dst] * 13.0 + 0.5)
    out[mo[M_DEMPTY]] = 1.0 if nd == 0 else 0.0
    top = _code_at(x, off, dst, nd, nd - 1 if kind == TUCK else 0)
    _put(out, mo[M_DTOP], top)
    if kind == TUCK:
        return
    if src != 0:
        value = exposed_value(top, _code_at(x, off, dst, nd, 1)) if nd > 0 else -1
        out[f + 5] = 1.0 if _takes(value, ntop) else 0.0
    if kind == RUN:
        if params[K_LAST] >= 0:
            last = -1
            for b in range(params[K_ACTIONS]):
                if x[params[K_LAST] + b] > 0.0:
                    last = b
        back = cols[last, 1] == dst + 2 and cols[last, 2] == src - 2 and cols[last, 3] == length
        if last >= 0 and cols[last, 0] == RUN and back:
            out[f + 7] = 1.0


@keyed_jit(KERNEL)
def _fill(obs, mask, last, off, cols, params, mo, rows, acts, out):
    """Features of every action ``mask`` allows, packed: row ``k`` of ``out`` is action ``acts[k]`` of
    observation ``rows[k]``. Returns how many were written."""
    k = 0
    for n in range(obs.shape[0]):
        for a in range(mask.shape[1]):
            if mask[n, a] != 0:
                out[k, :] = 0.0
                write_move(obs[n], a, last[n], off, cols, params, mo, out[k])
                rows[k] = n
                acts[k] = a
                k += 1
    return k


def legal_moves(
    observations: np.ndarray, masks: np.ndarray, config: NertzConfig, last_move: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The features of the legal moves of a batch, packed: ``(rows, actions, features)``, one entry per legal
    action (``rows`` indexes the batch). ``masks``: ``(N, A)``, any dtype; ``last_move``: ``(N,)`` or None."""
    obs = np.ascontiguousarray(observations, dtype=np.float32).reshape(-1, obs_layout(config).size)
    m = np.asarray(masks)
    m = m.view(np.int8) if m.dtype == np.bool_ else (m != 0).astype(np.int8)
    m = np.ascontiguousarray(m).reshape(len(obs), -1)
    layout = move_layout(config)
    if m.shape[1] != layout.columns.shape[0]:
        raise ValueError(f"masks have {m.shape[1]} actions; this config has {layout.columns.shape[0]}")
    last = np.full(len(obs), -1, np.int64) if last_move is None else np.asarray(last_move, np.int64)
    last = last.reshape(len(obs))
    k = int(np.count_nonzero(m))
    rows, acts = np.empty(k, np.int64), np.empty(k, np.int64)
    out = np.empty((k, layout.size), np.float32)
    _fill(obs, m, last, *layout.kernel, rows, acts, out)
    return rows, acts, out


def move_features(
    observation: np.ndarray,
    config: NertzConfig,
    mask: np.ndarray | None = None,
    last_move: int | np.ndarray | None = None,
) -> np.ndarray:
    """The features of every action (``(A, F)``; ``(N, A, F)`` for a batch of observations), laid out as
    :func:`move_layout` says. With ``mask``, the rows of masked-out actions are zero. ``last_move``: the seat's
    last move (an action index, -1 or None: unknown), read only when the observation has no ``last_moves``
    slice. See docs/env/nertz.md ("Move features")."""
    obs = np.asarray(observation, dtype=np.float32)
    size = obs_layout(config).size
    if obs.shape[-1:] != (size,) or obs.ndim > 2:
        raise ValueError(
            f"move_features takes observations of shape ({size},) or (N, {size}), not {obs.shape}"
        )
    batch = obs.reshape(-1, size)
    a = move_layout(config).columns.shape[0]
    m = np.ones((len(batch), a), np.int8) if mask is None else np.asarray(mask).reshape(len(batch), a)
    last = None if last_move is None else np.broadcast_to(np.asarray(last_move, np.int64), (len(batch),))
    rows, acts, feats = legal_moves(batch, m, config, last)
    out = np.zeros((len(batch), a, move_layout(config).size), np.float32)
    out[rows, acts] = feats
    return out.reshape(*obs.shape[:-1], a, -1)
