"""The compiled kernels of the scripted agents: the own layout read from the observation, the seat's moves
applied to a copy of it, the heuristic's priorities and the search with its stock memory.

They are cached on disk keyed on every source they come from (``nertz_env.engine._cache.keyed_jit``): a
cached function carries compiled copies of the functions it calls (the card helpers imported from the engine
are inlined) and of the constants of ``actions``, ``observation`` and ``cards``, and numba's own
``cache=True`` would notice only edits to this file.


Agents see only their observation, its mask and the config's action table. Decoding the observation with
:func:`nertz_env.decode` on every tick is too slow for big tournaments, so this module reads the few slices
an agent needs straight from the vector (offsets from :class:`~nertz_env.observation.ObsLayout`) into one
small integer array, the *state*. The same state is what the search agent plans on: own moves (lake plays,
Nertz and waste plays, runs, tucks, flips) are applied to copies. A card that a move turns face up is
``UNKNOWN`` unless the seat has seen it before: the observation shows only the waste's top, so
:func:`read_state` leaves the rest of the stock and waste unknown, and an agent that remembers what its
stock and waste hold (the search agent does) writes that into the state before planning. The functions are numba-compiled like the engine (cached on disk; ``NUMBA_DISABLE_JIT=1`` runs them
as plain Python), and the card rules come from the engine's own helpers so that there is one copy of them.

State vector (int64, ``STATE_SIZE`` values; card codes of :mod:`nertz_env.cards`)::

    S_NTOP        Nertz pile's top card (-1 empty, UNKNOWN after the model played the top)
    S_NCOUNT      cards in the Nertz pile
    S_WTOP        waste's top card (-1 empty, UNKNOWN after the model played the top)
    S_WCOUNT      cards in the waste
    S_SCOUNT      cards in the stock
    S_NPLAYED     Nertz cards the model played (to the lake, a work pile or under one)
    S_LPLAYED     own cards the model played to the lake
    S_WPLAYED     waste cards the model played (to the lake or a work pile)
    S_RECYCLE     1 if a flip on an empty stock may turn the waste over (redeals left)
    S_WLEN + j    cards in work pile j (MAX_W slots, the unused ones stay 0)
    S_WORK + 13j  work pile j, bottom (highest rank) to top (exposed card); -1 beyond its length
    S_LAKE + c    foundations whose top is the real card c (0 .. 51)
    S_STOCK + k   the stock, bottom to top (S_SCOUNT cards; the last is the next flipped), UNKNOWN if unseen
    S_WASTE + k   the waste, bottom to top (S_WCOUNT cards; the last is S_WTOP), UNKNOWN if unseen
    S_NERTZ + k   the Nertz pile, bottom to top (S_NCOUNT cards; the last is S_NTOP), UNKNOWN below the top

Parameter vector ``params`` (int64, ``P_SIZE``; built once per config by :func:`table_params`): the config
values the rules need (``P_*`` slots), the observation offsets (``P_OFF + O_*``) and the action table layout
(``P_ACT + L_*``). ``columns`` (int64, 5 x actions) is the action table as kind / src / dst / length / suit rows.
"""

from __future__ import annotations

import numpy as np

from nertz_env.actions import (
    CALL,
    FLIP,
    JOKER_LAKE,
    L_JLAKE,
    L_LAKE,
    L_RUN,
    L_TOWORK,
    L_TUCK,
    LAKE,
    ROTATE,
    RUN,
    TO_WORK,
    TUCK,
    WAIT,
    action_table,
)
from nertz_env.cards import JOKER
from nertz_env.config import NertzConfig
from nertz_env.engine._cache import keyed_jit
from nertz_env.engine.rules import can_stack, card_colour, card_rank, exposed_value, joined
from nertz_env.observation import (
    O_LAKE,
    O_NCOUNT,
    O_NTOP,
    O_SCOUNT,
    O_STATUS,
    O_WCNT,
    O_WCOUNT,
    O_WJOKER,
    O_WORK,
    O_WTOP,
    ObsLayout,
)

# The kernels run without numba's reference counting (``_nrt=False``), like the engine's rules: they allocate
# nothing, the rollouts' scratch arrays come from the caller (:func:`rollout_workspace`), and array copies are
# plain loops (a slice assignment between arrays may allocate a temporary). Measured on the search agent's
# own calls, side by side with the reference-counted build: 1.30 -> 1.04 ms per decision, the same values.
# They also release the GIL (``nogil``): the search agent spends ~92% of a decision in ``rollout_values``, so
# agents at different seats or tables can decide side by side in Python threads (``opponent_threads`` of
# ``nertz_env.train.vec.NertzVecEnv``); each agent owns its scratch arrays and random state.
# No cfunc wrapper (only first-class function calls use one; it cost compile time on a cold cache).
_KERNEL_OPTIONS: dict = {"_nrt": False, "nogil": True, "no_cfunc_wrapper": True}  # a dict: numba's stubs omit _nrt
_kernel = keyed_jit(_KERNEL_OPTIONS)
_allocating = keyed_jit({"no_cfunc_wrapper": True})  # hidden_cards: one small count array per decision, not worth a parameter

UNKNOWN = -2
MAX_W = 6
MAX_DECK = 54
S_NTOP, S_NCOUNT, S_WTOP, S_WCOUNT, S_SCOUNT, S_NPLAYED, S_LPLAYED, S_WPLAYED, S_RECYCLE = range(9)
S_WLEN = 9
S_WORK = S_WLEN + MAX_W
S_LAKE = S_WORK + MAX_W * 13
S_STOCK = S_LAKE + 52
S_WASTE = S_STOCK + MAX_DECK
S_NERTZ = S_WASTE + MAX_DECK
STATE_SIZE = S_NERTZ + 13

P_W, P_P, P_NS, P_D, P_NERTZFIRST, P_TUCK, P_JOKERS, P_MANUAL, P_DRAW, P_SHUFFLE = range(10)
P_OFF = 10
P_ACT = P_OFF + 15
P_SIZE = P_ACT + 9


def table_params(config: NertzConfig) -> tuple[np.ndarray, np.ndarray]:
    """The ``params`` vector and the ``columns`` of the action table of ``config`` (see the module doc)."""
    table = action_table(config)
    params = np.zeros(P_SIZE, dtype=np.int64)
    params[P_W] = config.work_piles
    params[P_P] = config.num_players
    params[P_NS] = config.nertz_size
    params[P_D] = config.deck_size
    params[P_NERTZFIRST] = config.empty_pile_from_nertz_first
    params[P_TUCK] = config.allow_tuck
    params[P_JOKERS] = config.jokers
    params[P_MANUAL] = config.call_mode == "manual"
    params[P_DRAW] = config.draw
    params[P_SHUFFLE] = config.recycle == "shuffle"
    params[P_OFF : P_OFF + 15] = ObsLayout(config).offsets
    params[P_ACT : P_ACT + 9] = table.layout
    cols = table.arrays()
    columns = np.stack([cols[f].astype(np.int64) for f in ("kind", "src", "dst", "length", "suit")])
    return params, columns


# ---------------------------------------------------------------- reading the observation
@_kernel
def read_card(obs, base):
    """Card code of an 18-wide card block (see nertz_env.observation); -1 for an empty block."""
    rank = -1
    for r in range(13):
        if obs[base + r] > 0.5:
            rank = r
    if obs[base + 17] > 0.5:  # a joker: no rank yet, or fixed on a work pile as a rank and colour
        if rank < 0:
            return JOKER
        red = 1 if obs[base + 14] > 0.25 or obs[base + 15] > 0.25 else 0
        return 53 + rank * 2 + red
    if rank < 0:
        return -1
    for u in range(4):
        if obs[base + 13 + u] > 0.5:
            return u * 13 + rank
    return -1


@_kernel
def read_state(obs, params, s):
    """Fill state ``s`` from one observation vector of the seat."""
    for k in range(s.shape[0]):
        s[k] = 0
    w, np_, ns, d = params[P_W], params[P_P], params[P_NS], params[P_D]
    off = params[P_OFF:P_ACT]
    s[S_NTOP] = read_card(obs, off[O_NTOP])
    s[S_NCOUNT] = np.int64(obs[off[O_NCOUNT]] * ns + 0.5)
    s[S_WTOP] = read_card(obs, off[O_WTOP])
    s[S_WCOUNT] = np.int64(obs[off[O_WCOUNT]] * d + 0.5)
    s[S_SCOUNT] = np.int64(obs[off[O_SCOUNT]] * d + 0.5)
    s[S_RECYCLE] = 1 if obs[off[O_STATUS] + 4] > 0.0 else 0  # redeals left (1.0 when unlimited)
    for k in range(s[S_SCOUNT]):
        s[S_STOCK + k] = UNKNOWN
    for k in range(s[S_WCOUNT]):
        s[S_WASTE + k] = UNKNOWN
    if s[S_WCOUNT] > 0:
        s[S_WASTE + s[S_WCOUNT] - 1] = s[S_WTOP]
    for k in range(s[S_NCOUNT]):
        s[S_NERTZ + k] = UNKNOWN
    if s[S_NCOUNT] > 0:
        s[S_NERTZ + s[S_NCOUNT] - 1] = s[S_NTOP]
    for j in range(MAX_W):
        for k in range(13):
            s[S_WORK + 13 * j + k] = -1
    for j in range(w):
        n = np.int64(obs[off[O_WCNT] + j] * 13 + 0.5)
        base = off[O_WORK] + 52 * j
        k = 0
        for r in range(12, -1, -1):  # a work pile is a run: highest rank at the bottom
            for u in range(4):
                v = obs[base + u * 13 + r]
                if v > 0.75:
                    s[S_WORK + 13 * j + k] = u * 13 + r
                    k += 1
                    break
                if v > 0.25:  # a fixed joker sets 0.5 on both suits of its colour
                    s[S_WORK + 13 * j + k] = 53 + r * 2 + (1 if u == 1 or u == 2 else 0)
                    k += 1
                    break
        if k < n and obs[off[O_WJOKER] + j] > 0.5:  # a joker with no value lies on top (or alone)
            s[S_WORK + 13 * j + k] = JOKER
            k += 1
        s[S_WLEN + j] = k
    for c in range(52):
        s[S_LAKE + c] = np.int64(obs[off[O_LAKE] + c] * (np_ * (1 + params[P_JOKERS])) + 0.5)


# ---------------------------------------------------------------- the layout
@_kernel
def pile_len(s, j):
    return s[S_WLEN + j]


@_kernel
def pile_card(s, j, k):
    """Card ``k`` (from the bottom) of work pile ``j``."""
    return s[S_WORK + 13 * j + k]


@_kernel
def exposed(s, j):
    """Exposed card of work pile ``j``, -1 when it is empty."""
    n = s[S_WLEN + j]
    return s[S_WORK + 13 * j + n - 1] if n > 0 else -1


@_kernel
def stack_value(s, j):
    """Stacking value of work pile ``j``'s exposed card (the engine's ``exposed_value``: a wild joker on a
    card counts as the card that continues the run), -1 when it is empty."""
    n = s[S_WLEN + j]
    if n == 0:
        return -1
    return exposed_value(s[S_WORK + 13 * j + n - 1], s[S_WORK + 13 * j + n - 2] if n > 1 else -1)


@_kernel
def top_of(s, src):
    """Playable card of a source (0 Nertz, 1 waste, 2 + i work pile i); -1 empty, UNKNOWN unknown."""
    if src == 0:
        return s[S_NTOP]
    if src == 1:
        return s[S_WTOP]
    return exposed(s, src - 2)


@_kernel
def empty_piles(s, w):
    n = 0
    for j in range(w):
        if s[S_WLEN + j] == 0:
            n += 1
    return n


@_kernel
def lake_playable(s, c):
    """Can the real card ``c`` go to the lake now (an ace, or its predecessor tops a foundation)?"""
    if c < 0 or c >= 52:
        return False
    return c % 13 == 0 or s[S_LAKE + c - 1] > 0


@_kernel
def joker_lake_card(s, c, u):
    """The real card a joker ``c`` declared as suit ``u`` stands for in the lake, or -1 when it cannot go.

    A joker with no value goes on the tallest unfinished foundation of the suit, else starts a new ace (the
    engine's rule); a fixed joker keeps its rank and needs a suit of its colour."""
    if c == JOKER:
        best = -1
        for r in range(12):  # a foundation topped by rank r < K can take rank r + 1
            if s[S_LAKE + u * 13 + r] > 0:
                best = r
        return u * 13 + best + 1
    r = card_rank(c)
    red = 1 if u == 1 or u == 2 else 0
    if card_colour(c) != red:
        return -1
    if r == 0 or s[S_LAKE + u * 13 + r - 1] > 0:
        return u * 13 + r
    return -1


@_kernel
def fits_somewhere(s, c, w, nertz_first_src):
    """Can card ``c`` (known) go onto one of the work piles (stacking, or an empty pile)?"""
    if c < 0:
        return False
    for j in range(w):
        n = s[S_WLEN + j]
        if n == 0:
            if nertz_first_src:
                return True
        elif can_stack(c, stack_value(s, j)):
            return True
    return False


# ---------------------------------------------------------------- moves on the model
@_kernel
def _pop(s, src):
    if src == 0:
        n = s[S_NCOUNT] - 1
        s[S_NCOUNT] = n
        s[S_NTOP] = s[S_NERTZ + n - 1] if n > 0 else -1
        s[S_NPLAYED] += 1
    elif src == 1:
        n = s[S_WCOUNT] - 1
        s[S_WCOUNT] = n
        s[S_WTOP] = s[S_WASTE + n - 1] if n > 0 else -1
        s[S_WPLAYED] += 1
    else:
        j = src - 2
        n = s[S_WLEN + j] - 1
        s[S_WORK + 13 * j + n] = -1
        s[S_WLEN + j] = n


@_kernel
def _to_lake(s, declared):
    if declared % 13 > 0:
        s[S_LAKE + declared - 1] -= 1
    s[S_LAKE + declared] += 1
    s[S_LPLAYED] += 1


@_kernel
def _place(s, j, c):
    n = s[S_WLEN + j]
    if n > 0:
        c, lower = joined(c, stack_value(s, j))
        s[S_WORK + 13 * j + n - 1] = lower
    s[S_WORK + 13 * j + n] = c
    s[S_WLEN + j] = n + 1


@_kernel
def can_flip(s):
    """Is a flip legal on the model (cards in the stock, or a waste to turn over with redeals left)?"""
    return s[S_SCOUNT] > 0 or (s[S_WCOUNT] > 0 and s[S_RECYCLE] != 0)


@_kernel
def apply_flip(s, params):
    """Flip ``draw`` cards of the stock onto the waste (the deepest becomes the top), or turn the waste over
    as the new stock when the stock is empty (its order unknown when recycle="shuffle")."""
    n = s[S_SCOUNT]
    wl = s[S_WCOUNT]
    if n == 0:
        for k in range(wl):
            s[S_STOCK + k] = UNKNOWN if params[P_SHUFFLE] else s[S_WASTE + wl - 1 - k]
        s[S_SCOUNT] = wl
        s[S_WCOUNT] = 0
        s[S_WTOP] = -1
        return
    k = min(params[P_DRAW], n)
    for x in range(k):
        s[S_WASTE + wl + x] = s[S_STOCK + n - 1 - x]
    s[S_SCOUNT] = n - k
    s[S_WCOUNT] = wl + k
    s[S_WTOP] = s[S_WASTE + wl + k - 1]


@_kernel
def apply_move(s, a, columns, params):
    """Apply the seat's action ``a`` to state ``s`` (the caller checked it is legal on the model).

    Returns False for moves the model does not simulate (wait, call, rotate): ``s`` is unchanged."""
    kind = columns[0, a]
    if kind == FLIP:
        apply_flip(s, params)
        return True
    src = columns[1, a]
    dst = columns[2, a]
    if kind == LAKE:
        c = top_of(s, src)
        _to_lake(s, c)
        _pop(s, src)
        return True
    if kind == JOKER_LAKE:
        c = top_of(s, src)
        _to_lake(s, joker_lake_card(s, c, columns[4, a]))
        _pop(s, src)
        return True
    if kind == TO_WORK:
        c = top_of(s, src)
        _pop(s, src)
        _place(s, dst, c)
        return True
    if kind == RUN:
        i = src - 2
        length = columns[3, a]
        ni = s[S_WLEN + i]
        start = ni - length
        nj = s[S_WLEN + dst]
        bottom = s[S_WORK + 13 * i + start]
        if nj > 0:
            bottom, lower = joined(bottom, stack_value(s, dst))
            s[S_WORK + 13 * dst + nj - 1] = lower
        s[S_WORK + 13 * dst + nj] = bottom
        for x in range(1, length):
            s[S_WORK + 13 * dst + nj + x] = s[S_WORK + 13 * i + start + x]
        for x in range(length):
            s[S_WORK + 13 * i + start + x] = -1
        s[S_WLEN + dst] = nj + length
        s[S_WLEN + i] = start
        return True
    if kind == TUCK:
        c = top_of(s, src)
        _pop(s, src)
        n = s[S_WLEN + dst]
        base, c = joined(s[S_WORK + 13 * dst], c)
        for x in range(n - 1, 0, -1):
            s[S_WORK + 13 * dst + x + 1] = s[S_WORK + 13 * dst + x]
        s[S_WORK + 13 * dst + 1] = base
        s[S_WORK + 13 * dst] = c
        s[S_WLEN + dst] = n + 1
        return True
    return False


@_kernel
def model_moves(s, params, out):
    """Write the indices of the moves the model can simulate and that are legal on ``s`` into ``out``.

    Lake plays, joker lake plays, Nertz / waste plays onto work piles, runs and tucks, in the engine's
    legality rules (flip, wait, call and rotate are left out: their outcome is unknown or not a move of the
    layout). Returns how many were written; ``out`` needs room for every action of the table."""
    w = params[P_W]
    act = params[P_ACT:]
    n_out = 0
    nertz_first = params[P_NERTZFIRST] != 0 and s[S_NCOUNT] > 0
    any_empty = empty_piles(s, w) > 0
    for src in range(2 + w):
        c = top_of(s, src)
        if c < 0:
            continue
        if c < 52:
            if lake_playable(s, c):
                out[n_out] = act[L_LAKE] + src
                n_out += 1
        elif act[L_JLAKE] >= 0:
            for u in range(4):
                if joker_lake_card(s, c, u) >= 0:
                    out[n_out] = act[L_JLAKE] + src * 4 + u
                    n_out += 1
        if src < 2:
            for j in range(w):
                n = s[S_WLEN + j]
                if n == 0:
                    if not (nertz_first and src != 0):
                        out[n_out] = act[L_TOWORK] + src * w + j
                        n_out += 1
                elif can_stack(c, stack_value(s, j)):
                    out[n_out] = act[L_TOWORK] + src * w + j
                    n_out += 1
            if act[L_TUCK] >= 0 and any_empty and not (nertz_first and src != 0):
                for j in range(w):
                    n = s[S_WLEN + j]
                    if 0 < n < 13 and can_stack(s[S_WORK + 13 * j], c):
                        other_empty = False
                        for k in range(w):
                            if k != j and s[S_WLEN + k] == 0:
                                other_empty = True
                        if other_empty:
                            out[n_out] = act[L_TUCK] + src * w + j
                            n_out += 1
    for i in range(w):
        ni = s[S_WLEN + i]
        if ni == 0:
            continue
        base_i = s[S_WORK + 13 * i]
        top_i = s[S_WORK + 13 * i + ni - 1]
        for j in range(w):
            if j == i:
                continue
            first = act[L_RUN] + (i * (w - 1) + (j if j < i else j - 1)) * 13
            nj = s[S_WLEN + j]
            if nj == 0:
                if not nertz_first:
                    for length in range(1, ni + 1):
                        out[n_out] = first + length - 1
                        n_out += 1
                continue
            lower = stack_value(s, j)
            if lower == JOKER:
                for k in range(ni):
                    if can_stack(s[S_WORK + 13 * i + k], lower):
                        out[n_out] = first + ni - k - 1
                        n_out += 1
                continue
            if top_i == JOKER and can_stack(top_i, lower):  # a wild joker on top moves alone
                out[n_out] = first
                n_out += 1
            if base_i != JOKER:
                k = card_rank(base_i) - (card_rank(lower) - 1)
                if 0 <= k < ni:
                    c = s[S_WORK + 13 * i + k]
                    if c != JOKER and card_colour(c) != card_colour(lower):
                        out[n_out] = first + ni - k - 1
                        n_out += 1
    return n_out


# ---------------------------------------------------------------- the heuristic (see agents.scripted)
# Priorities of the heuristic (higher first; -1 = never).
PRIO_CALL = 1000
PRIO_NERTZ_LAKE = 900
PRIO_NERTZ_STACK = 800
PRIO_NERTZ_EMPTY = 780
PRIO_WORK_LAKE = 700
PRIO_USEFUL_BONUS = 20
PRIO_WASTE_LAKE = 650
PRIO_RUN_FREES_NERTZ = 620
PRIO_RUN_EXPOSES_LAKE = 610
PRIO_RUN_EMPTIES = 600
PRIO_WASTE_HELPS = 560
PRIO_RUN_TO_EMPTY = 500
PRIO_WASTE_ANY = 300
PRIO_FLIP = 100
PRIO_ROTATE = 50
PRIO_WAIT = 0
NEVER = -1

WASTE_POLICIES = ("never", "nertz", "dig", "always")


@_kernel
def pick_best(values, mask, u):
    """The legal index with the highest value, ties broken by ``u`` in [0, 1)."""
    best = -1e300
    count = 0
    for a in range(values.shape[0]):
        if mask[a]:
            v = values[a]
            if v > best + 1e-9:
                best = v
                count = 1
            elif v > best - 1e-9:
                count += 1
    k = int(u * count)
    for a in range(values.shape[0]):
        if mask[a] and values[a] > best - 1e-9:
            if k == 0:
                return a
            k -= 1
    return 0


@_kernel
def _useful_exposure(s, e, w):
    """Is ``e`` (a newly exposed card, -1 for a pile just emptied) useful: the Nertz top fits on it or an
    empty pile, or the lake takes it?"""
    ntop = s[S_NTOP]
    if e < 0:
        return s[S_NCOUNT] > 0
    if ntop >= 0 and can_stack(ntop, e):
        return True
    return lake_playable(s, e)


@_kernel
def heuristic_priorities(s, mask, params, columns, waste_policy, banned, prio):
    """Priority of every action (see the module doc); ``NEVER`` for illegal and avoided ones."""
    w = params[P_W]
    ntop = s[S_NTOP]
    ncount = s[S_NCOUNT]
    nertz_fits = fits_somewhere(s, ntop, w, True)
    for a in range(mask.shape[0]):
        prio[a] = NEVER
        if not mask[a]:
            continue
        kind = columns[0, a]
        src = columns[1, a]
        dst = columns[2, a]
        if kind == WAIT:
            prio[a] = PRIO_WAIT
        elif kind == FLIP:
            prio[a] = PRIO_FLIP
        elif kind == ROTATE:
            prio[a] = PRIO_ROTATE
        elif kind == CALL:
            if ncount == 0:
                prio[a] = PRIO_CALL
        elif kind == LAKE or kind == JOKER_LAKE:
            if src == 0:
                p = PRIO_NERTZ_LAKE
            elif src == 1:
                p = PRIO_WASTE_LAKE
            else:
                p = PRIO_WORK_LAKE
                j = src - 2
                n = s[S_WLEN + j]
                e = pile_card(s, j, n - 2) if n >= 2 else -1
                if _useful_exposure(s, e, w):
                    p += PRIO_USEFUL_BONUS
            if kind == JOKER_LAKE:  # prefer declaring a card whose successor we hold face up
                d = joker_lake_card(
                    s,
                    s[S_NTOP] if src == 0 else (s[S_WTOP] if src == 1 else exposed(s, src - 2)),
                    columns[4, a],
                )
                if d >= 0 and d % 13 < 12:
                    nxt = d + 1
                    held = s[S_NTOP] == nxt or s[S_WTOP] == nxt
                    for j in range(w):
                        if exposed(s, j) == nxt:
                            held = True
                    if held:
                        p += 1
            prio[a] = p
        elif kind == TO_WORK or kind == TUCK:
            if src == 0:
                if kind == TUCK or s[S_WLEN + dst] > 0:
                    prio[a] = PRIO_NERTZ_STACK
                else:
                    prio[a] = PRIO_NERTZ_EMPTY
            else:  # the waste onto a non-empty work pile, by policy (see WASTE_POLICIES)
                n = s[S_WLEN + dst]
                if kind == TO_WORK and n > 0 and waste_policy > 0:
                    lower = stack_value(s, dst)
                    upper = exposed_value(s[S_WTOP], lower)  # a joker stays wild, valued as it lies
                    if ncount > 0 and ntop >= 0 and not nertz_fits and can_stack(ntop, upper):
                        prio[a] = PRIO_WASTE_HELPS
                    elif waste_policy == 3 or (
                        waste_policy == 2
                        and s[S_WCOUNT] > 1
                        and not lake_playable(s, lower)
                        and not (ntop >= 0 and can_stack(ntop, lower))
                    ):
                        prio[a] = PRIO_WASTE_ANY
        elif kind == RUN:
            if a == banned:
                continue
            i = src - 2
            length = columns[3, a]
            ni = s[S_WLEN + i]
            whole = length == ni
            e = pile_card(s, i, ni - length - 1) if not whole else -1
            if s[S_WLEN + dst] == 0:
                if not whole and _useful_exposure(s, e, w):
                    prio[a] = PRIO_RUN_TO_EMPTY
            elif whole:
                if ncount > 0:
                    prio[a] = PRIO_RUN_EMPTIES
            elif ntop >= 0 and can_stack(ntop, e):
                prio[a] = PRIO_RUN_FREES_NERTZ
            elif lake_playable(s, e):
                prio[a] = PRIO_RUN_EXPOSES_LAKE


# ---------------------------------------------------------------- the search (see agents.search)
@_kernel
def _gain(child, parent, value):
    """Points a move earned: ``value[0]`` per card that left the Nertz pile, ``value[1]`` per own lake card."""
    return value[0] * (child[S_NPLAYED] - parent[S_NPLAYED]) + value[1] * (
        child[S_LPLAYED] - parent[S_LPLAYED]
    )


# ---------------------------------------------------------------- memory of the own stock and waste
@_kernel
def _counts_fit(mem, s):
    if mem[S_SCOUNT] != s[S_SCOUNT] or mem[S_WCOUNT] != s[S_WCOUNT]:
        return False
    return mem[S_WTOP] == UNKNOWN or mem[S_WTOP] == s[S_WTOP]


@_kernel
def _stall(mem):
    """The stall rule on a remembered stock and waste: the waste goes under the stock (turned over), then
    the stock's top card moves to its bottom."""
    wl = mem[S_WCOUNT]
    sl = mem[S_SCOUNT]
    for k in range(sl - 1, -1, -1):
        mem[S_STOCK + k + wl] = mem[S_STOCK + k]
    for k in range(wl):
        mem[S_STOCK + k] = mem[S_WASTE + wl - 1 - k]
    n = sl + wl
    if n >= 2:
        top = mem[S_STOCK + n - 1]
        for k in range(n - 1, 0, -1):
            mem[S_STOCK + k] = mem[S_STOCK + k - 1]
        mem[S_STOCK] = top
    mem[S_SCOUNT] = n
    mem[S_WCOUNT] = 0
    mem[S_WTOP] = -1


@_kernel
def recall(s, predicted, before, stalled):
    """Write the remembered stock and waste into ``s`` (just read from the observation) when they fit it.

    ``predicted`` is the memory after the agent's last action as planned, ``before`` the memory before it
    (the action may have failed: a lost lake race); ``stalled`` says the stall rule acted after that tick (the
    observation's stall count went up). Returns True when the memory fit; otherwise ``s`` keeps what the
    observation alone proves."""
    if stalled:
        _stall(predicted)
        _stall(before)
    if _counts_fit(predicted, s):
        mem = predicted
    elif _counts_fit(before, s):
        mem = before
    else:
        return False
    for k in range(s[S_SCOUNT]):
        s[S_STOCK + k] = mem[S_STOCK + k]
    for k in range(s[S_WCOUNT]):
        s[S_WASTE + k] = mem[S_WASTE + k]
    if s[S_WCOUNT] > 0:
        s[S_WASTE + s[S_WCOUNT] - 1] = s[S_WTOP]
    return True


@_kernel
def _rand(rng):
    """Next 64-bit output of a splitmix64 generator kept in ``rng[0]`` (uint64)."""
    z = rng[0] + np.uint64(0x9E3779B97F4A7C15)
    rng[0] = z
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@_kernel
def _below(rng, n):
    return np.int64((_rand(rng) >> np.uint64(33)) % np.uint64(n))


@_allocating
def hidden_cards(s, params, lake_own, out):
    """The seat's own cards it cannot place (deck minus the lake cards it played, its work piles, and every
    known card of its Nertz pile, stock and waste) into ``out``; returns how many, or -1 when that does not
    match the number of unknown slots (the memory is out of step)."""
    count = np.zeros(53, np.int64)
    for c in range(52):
        count[c] = 1
    count[52] = params[P_JOKERS]
    for c in range(53):
        count[c] -= lake_own[c]
    for j in range(params[P_W]):
        for k in range(s[S_WLEN + j]):
            c = s[S_WORK + 13 * j + k]
            count[c if c < 52 else 52] -= 1
    slots = 0
    for base, n in ((S_NERTZ, s[S_NCOUNT]), (S_STOCK, s[S_SCOUNT]), (S_WASTE, s[S_WCOUNT])):
        for k in range(n):
            c = s[base + k]
            if c == UNKNOWN:
                slots += 1
            else:
                count[c if c < 52 else 52] -= 1
    n = 0
    for c in range(53):
        if count[c] < 0:
            return -1
        for _ in range(count[c]):
            out[n] = c if c < 52 else JOKER
            n += 1
    return n if n == slots else -1


@_kernel
def determinize(s, cards, n, rng):
    """Fill the unknown slots of ``s`` with a random arrangement of the ``n`` hidden ``cards``."""
    for k in range(n - 1, 0, -1):
        x = _below(rng, k + 1)
        cards[k], cards[x] = cards[x], cards[k]
    i = 0
    for base, m in ((S_NERTZ, s[S_NCOUNT]), (S_STOCK, s[S_SCOUNT]), (S_WASTE, s[S_WCOUNT])):
        for k in range(m):
            if s[base + k] == UNKNOWN:
                s[base + k] = cards[i]
                i += 1
    s[S_NTOP] = s[S_NERTZ + s[S_NCOUNT] - 1] if s[S_NCOUNT] > 0 else -1
    s[S_WTOP] = s[S_WASTE + s[S_WCOUNT] - 1] if s[S_WCOUNT] > 0 else -1


@_kernel
def model_mask(s, params, mask, moves):
    """The legal-action mask of the model: wait, flip, and the moves of ``model_moves``."""
    for k in range(mask.shape[0]):
        mask[k] = 0
    mask[0] = 1
    if can_flip(s):
        mask[1] = 1
    n = model_moves(s, params, moves)
    for k in range(n):
        mask[moves[k]] = 1


@_kernel
def others_play(s, params, rate, rng):
    """The other players' lake plays during one tick of a rollout: about ``rate`` cards (a binomial over the
    opponents), each the next card of a random foundation or a new ace (while a suit has aces left)."""
    opponents = params[P_P] - 1
    p = rate / opponents if opponents > 0 else 0.0
    for _ in range(opponents):
        if (_rand(rng) >> np.uint64(11)) * (1.0 / 9007199254740992.0) >= p:
            continue
        n = 0
        for c in range(52):
            r = c % 13
            if (r == 0 and s[S_LAKE + c] + _ace_count_above(s, c) < params[P_P]) or (
                r > 0 and s[S_LAKE + c - 1] > 0
            ):
                n += 1
        if n == 0:
            return
        k = _below(rng, n)
        for c in range(52):
            r = c % 13
            if (r == 0 and s[S_LAKE + c] + _ace_count_above(s, c) < params[P_P]) or (
                r > 0 and s[S_LAKE + c - 1] > 0
            ):
                if k == 0:
                    if r > 0:
                        s[S_LAKE + c - 1] -= 1
                    s[S_LAKE + c] += 1
                    break
                k -= 1


@_kernel
def _ace_count_above(s, ace):
    """Foundations of the ace's suit that have grown past the ace (their tops are higher cards)."""
    n = 0
    for r in range(1, 13):
        n += s[S_LAKE + ace + r]
    return n


@_kernel
def _copy(dst, src):
    for k in range(src.shape[0]):
        dst[k] = src[k]


def rollout_workspace(n_actions: int) -> tuple[np.ndarray, ...]:
    """Scratch arrays for :func:`rollout_values` (its arguments after ``values``, in order): the two
    generator states, three layouts and the rollouts' mask, moves and priorities."""
    return (
        np.zeros(1, np.uint64),
        np.zeros(1, np.uint64),
        np.zeros(STATE_SIZE, np.int64),
        np.zeros(STATE_SIZE, np.int64),
        np.zeros(STATE_SIZE, np.int64),
        np.zeros(n_actions, np.int8),
        np.zeros(n_actions, np.int64),
        np.zeros(n_actions, np.int64),
    )


@_kernel
def rollout(s, params, columns, reverse_run, horizon, waste_policy, discount, value, rate, rng, mask, moves, prio, before):
    """Play the heuristic on the model of the own layout for ``horizon`` ticks, the other players adding
    about ``rate`` cards a tick to the lake (first, so they win the races), and return the discounted points
    (see ``_gain``). ``mask``, ``moves``, ``prio`` and ``before`` are scratch space (see rollout_workspace)."""
    banned = -1
    total = 0.0
    f = 1.0
    for _ in range(horizon):
        model_mask(s, params, mask, moves)
        heuristic_priorities(s, mask, params, columns, waste_policy, banned, prio)
        u = (_rand(rng) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
        a = pick_best(prio, mask, u)
        if a == 0:
            break
        if rate > 0.0:
            others_play(s, params, rate, rng)
            if not mask[a] or not _still_legal(s, a, params, columns, moves):
                continue
        _copy(before, s)
        apply_move(s, a, columns, params)
        total += f * _gain(s, before, value)
        f *= discount
        banned = reverse_run[a]
    return total


@_kernel
def _still_legal(s, a, params, columns, moves):
    """Is ``a`` still legal after the other players' plays of this tick (they only take lake slots)?"""
    if columns[0, a] != LAKE and columns[0, a] != JOKER_LAKE:
        return True
    n = model_moves(s, params, moves)
    for k in range(n):
        if moves[k] == a:
            return True
    return False


@_kernel
def rollout_values(
    s,
    candidates,
    nc,
    params,
    columns,
    reverse_run,
    cards,
    ncards,
    samples,
    horizon,
    waste_policy,
    discount,
    value,
    rate,
    seed,
    values,
    rng,
    stream,
    world,
    child,
    before,
    mask,
    moves,
    prio,
):
    """Mean rollout value of each candidate action over ``samples`` deals of the hidden cards; every candidate
    sees the same deals and the same tie-breaking streams (common random numbers). The arguments after
    ``values`` are scratch space, :func:`rollout_workspace`'s arrays in order."""
    rng[0] = seed
    for c in range(nc):
        values[c] = 0.0
    for _ in range(samples):
        _copy(world, s)
        determinize(world, cards, ncards, rng)
        start = _rand(rng)
        for c in range(nc):
            _copy(child, world)
            apply_move(child, candidates[c], columns, params)
            stream[0] = start
            g = _gain(child, world, value)
            values[c] += g + discount * rollout(
                child, params, columns, reverse_run, horizon, waste_policy, discount, value, rate, stream, mask, moves, prio, before
            )
    for c in range(nc):
        values[c] /= samples
