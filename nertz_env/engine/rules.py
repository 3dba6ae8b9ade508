"""The rules of Nertz on arrays: deal, legal masks, moves, one tick, scoring, observations.

Everything here is compiled by numba (``NUMBA_DISABLE_JIT=1`` runs it as plain Python) and works on one table
``t`` of a :class:`~nertz_env.engine.state.TableState`; :mod:`nertz_env.engine.batch` loops over tables. It
imports numpy and numba only (plus the integer constants of ``cards``, ``actions``, ``observation``). A tick
(``step_table``) in words: docs/env/rules.md, "A tick, in the engine's words".
"""

from __future__ import annotations

import numpy as np

from nertz_env.actions import L_CALL, L_JLAKE, L_LAKE, L_NUM, L_ROTATE, L_RUN, L_TOWORK, L_TUCK
from nertz_env.cards import FIXED_JOKER_BASE, JOKER, LAKE_JOKER_FLAG
from nertz_env.engine import _abi  # noqa: F401  (the state's calling convention: part of this module's cache key)
from nertz_env.engine._cache import keyed_jit
from nertz_env.engine.state import (
    C_BONUS,
    C_D,
    C_DRAW,
    C_FALSEPEN,
    C_JOKERS,
    C_MANUAL,
    C_MAXREDEALS,
    C_MAXROUNDS,
    C_MAXTICKS,
    C_NERTZFIRST,
    C_NS,
    C_P,
    C_PENALTY,
    C_ROUNDS,
    C_SHUFFLE,
    C_STALL,
    C_TARGET,
    C_TURN,
    C_W,
    DONE_NO,
    DONE_TERMINATED,
    DONE_TRUNCATED,
    END_MAX_TICKS,
    END_NERTZ,
    END_NONE,
    END_STALL,
    MAX_PILE,
    MEM_KNOWN,
    MEM_SEEN,
    MEM_UNSEEN,
)
from nertz_env.observation import (
    O_LAKE,
    O_LAST,
    O_MEM,
    O_NCOUNT,
    O_NTOP,
    O_OCOUNT,
    O_OTEAM,
    O_OTOP,
    O_SCOUNT,
    O_STATUS,
    O_WCNT,
    O_WCOUNT,
    O_WEXP,
    O_WJOKER,
    O_WORK,
    O_WTOP,
)


def _jit(inline: bool = False, python: bool = False, ir_inline: bool = False):
    """``numba.njit`` for the rules: without the GIL and without reference counting (the rules never allocate).

    ``inline``: LLVM inlines it into its callers; ``ir_inline``: numba inlines its IR (large functions with one
    or two call sites); ``python``: called from Python, so a CPython wrapper and the disk cache. Why:
    docs/experiments/design-measurements.md."""
    opts: dict = {"_nrt": False, "nogil": True, "error_model": "numpy", "no_cfunc_wrapper": True}
    if ir_inline:
        opts["inline"] = "always"
    elif inline:
        opts["forceinline"] = True
    if not python:
        opts["no_cpython_wrapper"] = True
    return keyed_jit(opts, cache=python)


# Result bits of apply_action.
R_PROGRESS, R_LOST, R_CALL, R_FALSE_CALL = 1, 2, 4, 8

# ---------------------------------------------------------------- the table's generator (splitmix64)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S27, _S30, _S31, _S32 = np.uint64(27), np.uint64(30), np.uint64(31), np.uint64(32)


@_jit()
def rng_next(rng, t):
    """Next 64-bit output of table ``t``'s splitmix64 generator."""
    z = rng[t] + _GOLDEN
    rng[t] = z
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@_jit(python=True)
def rng_below(rng, t, n):
    """Uniform integer in ``[0, n)`` for ``1 <= n < 2**32`` (multiply-shift; bias below 2**-26 for n <= 64)."""
    x = rng_next(rng, t) >> _S32
    return np.int64((x * np.uint64(n)) >> _S32)


# ---------------------------------------------------------------- cards (see nertz_env.cards)
@_jit(inline=True, python=True)
def card_rank(c):
    """Rank 0..12 of a real card or fixed joker, -1 for a joker without value."""
    if c < 52:
        return c % 13
    if c >= FIXED_JOKER_BASE:
        return (c - FIXED_JOKER_BASE) >> 1
    return -1


@_jit(inline=True, python=True)
def card_colour(c):
    """1 red, 0 black, -1 for a joker without value."""
    if c < 52:
        s = c // 13
        return 1 if s == 1 or s == 2 else 0
    if c >= FIXED_JOKER_BASE:
        return (c - FIXED_JOKER_BASE) & 1
    return -1


@_jit(inline=True)
def can_stack(upper, lower):
    """May ``upper`` go onto a work pile whose exposed value is ``lower`` (one rank lower, other colour)?

    ``lower`` is the pile's :func:`exposed_value`: ``JOKER`` only for a joker alone on its pile, which takes
    any card below a king; a joker goes on any card above an ace."""
    if lower == JOKER:
        return upper != JOKER and card_rank(upper) <= 11
    if upper == JOKER:
        return card_rank(lower) >= 1
    return card_rank(upper) == card_rank(lower) - 1 and card_colour(upper) != card_colour(lower)


@_jit(inline=True)
def fixed_value(rank, colour):
    return FIXED_JOKER_BASE + rank * 2 + colour


@_jit(inline=True)
def exposed_value(top, below):
    """Stacking value of a work pile's exposed card ``top`` lying on ``below`` (-1: nothing below). An uncovered
    joker on a card continues the run (one rank lower, other colour than ``below``); alone it stays ``JOKER``."""
    if top == JOKER and below >= 0:
        return fixed_value(card_rank(below) - 1, 1 - card_colour(below))
    return top


@_jit(inline=True)
def joined(upper, lower):
    """The two cards after ``upper`` was stacked on a pile of exposed value ``lower`` (:func:`exposed_value`):
    a covered joker is fixed (alone on its pile, at the value ``upper`` continues); ``upper`` stays as it is."""
    if lower == JOKER:
        return upper, fixed_value(card_rank(upper) + 1, 1 - card_colour(upper))
    return upper, lower


@_jit(inline=True)
def lake_declared(code):
    """The real card a lake cell stands for (a joker's declared card)."""
    return code - LAKE_JOKER_FLAG if code >= LAKE_JOKER_FLAG else code


@_jit(inline=True)
def suit_is_red(u):
    return u == 1 or u == 2


# ---------------------------------------------------------------- layout helpers
@_jit(inline=True)
def source_top(state, t, p, src):
    """Top card of a source (0 Nertz, 1 waste, 2 + i work pile i), or -1 when it is empty."""
    if src == 0:
        n = state.nertz_len[t, p]
        return state.nertz[t, p, n - 1] if n > 0 else -1
    if src == 1:
        n = state.waste_len[t, p]
        return state.waste[t, p, n - 1] if n > 0 else -1
    i = src - 2
    n = state.work_len[t, p, i]
    return state.work[t, p, i, n - 1] if n > 0 else -1


@_jit(inline=True)
def pile_value(state, t, p, j):
    """Stacking value of work pile ``j``'s exposed card (:func:`exposed_value`), or -1 when it is empty."""
    n = state.work_len[t, p, j]
    if n == 0:
        return -1
    return exposed_value(state.work[t, p, j, n - 1], state.work[t, p, j, n - 2] if n > 1 else -1)


@_jit(inline=True)
def pop_source(state, t, p, src):
    if src == 0:
        state.nertz_len[t, p] -= 1
    elif src == 1:
        state.waste_len[t, p] -= 1
    else:
        state.work_len[t, p, src - 2] -= 1


@_jit(inline=True)
def turn_player(state, t):
    """The seat whose turn it is in ``turn_based`` play (rotates every tick, first seat every round)."""
    return (state.tick[t] + state.round_idx[t]) % state.cfg[C_P]


@_jit(inline=True)
def has_empty_pile_besides(state, t, p, j):
    for k in range(state.cfg[C_W]):
        if k != j and state.work_len[t, p, k] == 0:
            return True
    return False


# ---------------------------------------------------------------- the lake
@_jit(inline=True)
def lake_find(state, t, top):
    """A foundation whose top is the real card ``top``, or -1."""
    if state.lake_tops[t, top] == 0:
        return -1
    for f in range(state.lake_n[t]):
        n = state.lake_len[t, f]
        if n > 0 and lake_declared(state.lake[t, f, n - 1]) == top:
            return f
    return -1


@_jit(inline=True)
def lake_add(state, t, f, code, owner):
    """Put lake cell ``code`` from seat ``owner`` on foundation ``f`` (a new one when ``f`` is lake_n)."""
    if f == state.lake_n[t]:
        state.lake_n[t] += 1
    n = state.lake_len[t, f]
    if n > 0:
        state.lake_tops[t, lake_declared(state.lake[t, f, n - 1])] -= 1
    state.lake[t, f, n] = code
    state.lake_owner[t, f, n] = owner
    state.lake_len[t, f] = n + 1
    state.lake_tops[t, lake_declared(code)] += 1
    state.lake_played[t, owner] += 1
    state.rewards[t, owner] += 1.0  # +1 the moment an own card reaches the lake


@_jit(inline=True)
def lake_takes(tops, base, c):
    """May card ``c`` go to the lake: a real card that is an ace, or whose predecessor tops a foundation?
    ``tops[base + x]`` counts the foundations whose top is the real card ``x`` (``lake_tops``, or an agent's copy)."""
    return 0 <= c < 52 and (c % 13 == 0 or tops[base + c - 1] > 0)


@_jit(inline=True)
def joker_rank(tops, base, c, u):
    """The rank a joker ``c`` played as suit ``u`` takes in the lake, or -1 when it cannot go there (``tops``
    and ``base`` as in :func:`lake_takes`; jokers in the lake: docs/env/rules.md). Its colour is not checked."""
    if c == JOKER:
        best = 0
        for r in range(12):  # a foundation topped by rank r < K takes rank r + 1
            if tops[base + u * 13 + r] > 0:
                best = r + 1
        return best
    r = card_rank(c)
    if r == 0 or tops[base + u * 13 + r - 1] > 0:
        return r
    return -1


@_jit(inline=True)
def joker_target(state, t, c, u):
    """Foundation a joker ``c`` played as suit ``u`` lands on (lake_n: a new ace; -1: none), and its rank
    (:func:`joker_rank`; among foundations with the same top, the first started)."""
    r = joker_rank(state.lake_tops[t], 0, c, u)
    if r < 0:
        return -1, r
    if r == 0:
        return state.lake_n[t], 0
    return lake_find(state, t, u * 13 + r - 1), r


# ---------------------------------------------------------------- legal masks
# compute_mask writes a seat's whole mask. The helpers below each own a group of bits and write every bit of
# their group (0 or 1), so a tick can rewrite just the groups its moves touched (see observe_changes).


@_jit(inline=True)
def mask_flip(state, t, p):
    """The flip bit: a stock to turn, or a waste to turn over while redeals are left."""
    cfg = state.cfg
    ok = state.stock_len[t, p] > 0 or (
        state.waste_len[t, p] > 0 and (cfg[C_MAXREDEALS] < 0 or state.redeals[t, p] < cfg[C_MAXREDEALS])
    )
    state.mask[t, p, 1] = 1 if ok else 0


@_jit(inline=True)
def mask_lake(state, t, p, src, c):
    """The lake bits of source ``src`` whose top is ``c`` (-1: empty): its lake bit and, with jokers, its four
    declared-suit bits."""
    m = state.mask
    act = state.act
    m[t, p, act[L_LAKE] + src] = 1 if lake_takes(state.lake_tops[t], 0, c) else 0
    if act[L_JLAKE] >= 0:
        base = act[L_JLAKE] + src * 4
        for u in range(4):
            ok = 0
            if c == JOKER or (
                c >= 52
                and card_colour(c) == (1 if suit_is_red(u) else 0)
                and joker_rank(state.lake_tops[t], 0, c, u) >= 0
            ):
                ok = 1
            m[t, p, base + u] = ok


@_jit(inline=True)
def mask_hand(state, t, p, src, c, nertz_first, any_empty):
    """The bits of the Nertz top (``src`` 0) or waste top (1), ``c`` (-1: empty), onto or under a work pile."""
    m = state.mask
    act = state.act
    w = state.cfg[C_W]
    blocked = nertz_first and src != 0  # only the Nertz top may take an empty pile
    first = act[L_TOWORK] + src * w
    for j in range(w):
        ok = 0
        if c >= 0:
            if state.work_len[t, p, j] == 0:
                if not blocked:
                    ok = 1
            elif can_stack(c, pile_value(state, t, p, j)):
                ok = 1
        m[t, p, first + j] = ok
    if act[L_TUCK] >= 0:
        first = act[L_TUCK] + src * w
        tuck = c >= 0 and any_empty and not blocked
        for j in range(w):
            ok = 0
            n = state.work_len[t, p, j]
            if (
                tuck
                and 0 < n < MAX_PILE
                and has_empty_pile_besides(state, t, p, j)
                and can_stack(state.work[t, p, j, 0], c)
            ):
                ok = 1
            m[t, p, first + j] = ok


@_jit(inline=True)
def mask_runs(state, t, p, nertz_first):
    """The run bits between work piles, written over a zeroed run block."""
    m = state.mask
    act = state.act
    w = state.cfg[C_W]
    for i in range(w):
        ni = state.work_len[t, p, i]
        if ni == 0:
            continue
        base_i = state.work[t, p, i, 0]
        top_i = state.work[t, p, i, ni - 1]
        for j in range(w):
            if j == i:
                continue
            pair = i * (w - 1) + (j if j < i else j - 1)
            first = act[L_RUN] + pair * 13
            nj = state.work_len[t, p, j]
            if nj == 0:
                if not nertz_first:
                    for length in range(1, ni + 1):
                        m[t, p, first + length - 1] = 1
                continue
            lower = pile_value(state, t, p, j)
            if lower == JOKER:  # a joker alone on pile j takes the bottom of any run below a king
                for k in range(ni):
                    if can_stack(state.work[t, p, i, k], lower):
                        m[t, p, first + ni - k - 1] = 1
                continue
            if top_i == JOKER and can_stack(top_i, lower):  # a wild joker on top of pile i moves alone
                m[t, p, first] = 1
            if base_i != JOKER:  # (a joker at the bottom is alone on its pile, or fixed)
                k = card_rank(base_i) - (card_rank(lower) - 1)
                if 0 <= k < ni:
                    c = state.work[t, p, i, k]
                    if c != JOKER and card_colour(c) != card_colour(lower):
                        m[t, p, first + ni - k - 1] = 1


@_jit(inline=True)
def nertz_first_rule(state, t, p):
    """Does ``empty_pile_from_nertz_first`` bind now (the option is on and the Nertz pile has cards)?"""
    return state.cfg[C_NERTZFIRST] != 0 and state.nertz_len[t, p] > 0


@_jit(inline=True)
def any_empty_pile(state, t, p):
    return has_empty_pile_besides(state, t, p, -1)


@_jit(inline=True)
def mask_rotate(state, t, p):
    act = state.act
    if act[L_ROTATE] >= 0:
        state.mask[t, p, act[L_ROTATE]] = 1 if state.stock_len[t, p] >= 2 else 0


@_jit(inline=True)
def compute_mask(state, t, p):
    """Write seat ``p``'s whole legal-action mask (wait is always legal)."""
    m = state.mask  # indexed in full below: a view would touch the buffer's shared refcount from every thread
    for a in range(m.shape[2]):
        m[t, p, a] = 0
    m[t, p, 0] = 1
    cfg = state.cfg
    act = state.act
    if cfg[C_TURN] and turn_player(state, t) != p:
        return
    w = cfg[C_W]
    nertz_first = nertz_first_rule(state, t, p)
    any_empty = any_empty_pile(state, t, p)
    mask_flip(state, t, p)
    for src in range(2 + w):
        c = source_top(state, t, p, src)
        if c < 0:
            continue
        mask_lake(state, t, p, src, c)
        if src < 2:
            mask_hand(state, t, p, src, c, nertz_first, any_empty)
    mask_runs(state, t, p, nertz_first)
    if act[L_CALL] >= 0:
        m[t, p, act[L_CALL]] = 1
    mask_rotate(state, t, p)


@_jit(inline=True)
def mask_after_waste_move(state, t, p):
    """Rewrite the bits a flip, recycle or stock rotation can change: flip, rotate, and the waste top's."""
    mask_flip(state, t, p)
    mask_rotate(state, t, p)
    waste = np.int64(1)  # the source number, typed int64 as in compute_mask's loop (a literal 1 compiled a
    # second copy of each of the three functions below for the type Literal[int](1))
    c = source_top(state, t, p, waste)
    mask_lake(state, t, p, waste, c)
    nertz_first = nertz_first_rule(state, t, p)
    mask_hand(state, t, p, waste, c, nertz_first, any_empty_pile(state, t, p))


@_jit(inline=True)
def mask_after_lake_change(state, t, p):
    """Rewrite every source's lake bits (the lake's tops changed, the seat's layout did not)."""
    for src in range(2 + state.cfg[C_W]):
        mask_lake(state, t, p, src, source_top(state, t, p, src))


# ---------------------------------------------------------------- moves
@_jit(inline=True)
def place_on_work(state, t, p, j, c):
    """Put card ``c`` on work pile ``j`` (stacking rules already checked)."""
    n = state.work_len[t, p, j]
    if n > 0:
        c, lower = joined(c, pile_value(state, t, p, j))
        state.work[t, p, j, n - 1] = lower
    state.work[t, p, j, n] = c
    state.work_len[t, p, j] = n + 1


@_jit()
def recycle(state, t, p):
    """Turn the waste over as the new stock (shuffled when recycle="shuffle"; the seat's memory of each card goes
    with it, and a shuffle hides every place)."""
    remembers = state.memory.shape[3] > 0
    wl = state.waste_len[t, p]
    for k in range(wl):
        state.stock[t, p, k] = state.waste[t, p, wl - 1 - k]
        if remembers:
            state.memory[t, p, 0, k] = state.memory[t, p, 1, wl - 1 - k]
    if state.cfg[C_SHUFFLE]:
        for k in range(wl - 1, 0, -1):
            x = rng_below(state.rng, t, k + 1)
            tmp = state.stock[t, p, k]
            state.stock[t, p, k] = state.stock[t, p, x]
            state.stock[t, p, x] = tmp
            if remembers:
                tmp = state.memory[t, p, 0, k]
                state.memory[t, p, 0, k] = state.memory[t, p, 0, x]
                state.memory[t, p, 0, x] = tmp
        if remembers:
            for k in range(wl):
                state.memory[t, p, 0, k] = min(state.memory[t, p, 0, k], MEM_SEEN)
    state.stock_len[t, p] = wl
    state.waste_len[t, p] = 0
    state.redeals[t, p] += 1


@_jit(inline=True)
def rotate_stock(state, t, p):
    """Move the stock's top card to its bottom (with the seat's memory of it)."""
    n = state.stock_len[t, p]
    if n < 2:
        return
    top = state.stock[t, p, n - 1]
    for k in range(n - 1, 0, -1):
        state.stock[t, p, k] = state.stock[t, p, k - 1]
    state.stock[t, p, 0] = top
    if state.memory.shape[3] > 0:
        top = state.memory[t, p, 0, n - 1]
        for k in range(n - 1, 0, -1):
            state.memory[t, p, 0, k] = state.memory[t, p, 0, k - 1]
        state.memory[t, p, 0, 0] = top


@_jit(ir_inline=True)
def apply_action(state, t, p, a):
    """Apply legal action ``a`` of seat ``p``; returns R_* bits (progress, lost race, call, false call)."""
    cfg = state.cfg
    act = state.act
    w = cfg[C_W]
    if a == 0:
        return 0
    if a == 1:  # flip
        n = state.stock_len[t, p]
        if n == 0:
            recycle(state, t, p)
            return 0
        k = min(cfg[C_DRAW], n)
        wl = state.waste_len[t, p]
        for x in range(k):
            state.waste[t, p, wl + x] = state.stock[t, p, n - 1 - x]
        if state.memory.shape[3] > 0:
            for x in range(k):
                state.memory[t, p, 1, wl + x] = state.memory[t, p, 0, n - 1 - x]
        state.stock_len[t, p] = n - k
        state.waste_len[t, p] = wl + k
        return 0
    if a < act[L_TOWORK]:  # to the lake
        src = a - act[L_LAKE]
        c = source_top(state, t, p, src)
        if c % 13 == 0:
            f = state.lake_n[t]
        else:
            f = lake_find(state, t, c - 1)
            if f < 0:
                return R_LOST
        lake_add(state, t, f, c, p)
        pop_source(state, t, p, src)
        return R_PROGRESS
    if a < act[L_RUN]:  # Nertz or waste top onto a work pile
        k = a - act[L_TOWORK]
        src = k // w
        j = k % w
        c = source_top(state, t, p, src)
        pop_source(state, t, p, src)
        place_on_work(state, t, p, j, c)
        return R_PROGRESS if src == 0 else 0
    if a < act[L_RUN] + w * (w - 1) * 13:  # a run between work piles
        k = a - act[L_RUN]
        length = k % 13 + 1
        pair = k // 13
        i = pair // (w - 1)
        jj = pair % (w - 1)
        j = jj if jj < i else jj + 1
        ni = state.work_len[t, p, i]
        nj = state.work_len[t, p, j]
        start = ni - length
        bottom = state.work[t, p, i, start]
        if nj > 0:
            bottom, lower = joined(bottom, pile_value(state, t, p, j))
            state.work[t, p, j, nj - 1] = lower
        state.work[t, p, j, nj] = bottom
        for x in range(1, length):
            state.work[t, p, j, nj + x] = state.work[t, p, i, start + x]
        state.work_len[t, p, j] = nj + length
        state.work_len[t, p, i] = start
        return 0
    if a == act[L_CALL]:
        if state.nertz_len[t, p] == 0:
            return R_CALL
        state.false_calls[t, p] += 1
        state.rewards[t, p] -= cfg[C_FALSEPEN]
        return R_FALSE_CALL
    if act[L_TUCK] >= 0 and act[L_TUCK] <= a < act[L_TUCK] + 2 * w:
        k = a - act[L_TUCK]
        src = k // w
        j = k % w
        c = source_top(state, t, p, src)
        pop_source(state, t, p, src)
        n = state.work_len[t, p, j]
        base, c = joined(state.work[t, p, j, 0], c)
        for x in range(n - 1, 0, -1):
            state.work[t, p, j, x + 1] = state.work[t, p, j, x]
        state.work[t, p, j, 1] = base
        state.work[t, p, j, 0] = c
        state.work_len[t, p, j] = n + 1
        return R_PROGRESS if src == 0 else 0
    if a == act[L_ROTATE]:
        rotate_stock(state, t, p)
        return 0
    # a joker to the lake, declared as suit u
    k = a - act[L_JLAKE]
    src = k // 4
    u = k % 4
    c = source_top(state, t, p, src)
    f, r = joker_target(state, t, c, u)
    if f < 0:
        return R_LOST
    lake_add(state, t, f, LAKE_JOKER_FLAG + u * 13 + r, p)
    pop_source(state, t, p, src)
    return R_PROGRESS


# ---------------------------------------------------------------- deal, stall rule, round end
@_jit()
def deal_round(state, t):
    """Shuffle every player's deck with the table's generator and deal a fresh round (the lake empties)."""
    cfg = state.cfg
    np_, w, ns, d = cfg[C_P], cfg[C_W], cfg[C_NS], cfg[C_D]
    deck = state.stock  # each player's deck is shuffled in place in its stock row, then dealt from there
    for p in range(np_):
        for x in range(52):
            deck[t, p, x] = x
        for x in range(52, d):
            deck[t, p, x] = JOKER
        for x in range(d - 1, 0, -1):
            y = rng_below(state.rng, t, x + 1)
            tmp = deck[t, p, x]
            deck[t, p, x] = deck[t, p, y]
            deck[t, p, y] = tmp
        for x in range(ns):
            state.nertz[t, p, x] = deck[t, p, x]
        state.nertz_len[t, p] = ns
        for j in range(w):
            state.work[t, p, j, 0] = deck[t, p, ns + j]
            state.work_len[t, p, j] = 1
        n = d - ns - w
        for x in range(n):
            state.stock[t, p, x] = deck[t, p, ns + w + x]
        state.stock_len[t, p] = n
        for x in range(state.memory.shape[3]):
            state.memory[t, p, 0, x] = MEM_UNSEEN
        state.waste_len[t, p] = 0
        state.redeals[t, p] = 0
        state.lake_played[t, p] = 0
        state.false_calls[t, p] = 0
        for i in range(state.last_moves.shape[2]):
            state.last_moves[t, p, i] = -1
    state.lake_n[t] = 0
    for f in range(state.lake_len.shape[1]):
        state.lake_len[t, f] = 0
    for c in range(52):
        state.lake_tops[t, c] = 0
    state.tick[t] = 0
    state.since_progress[t] = 0
    state.stalls[t] = 0


@_jit(inline=True)
def stall_seat(state, t, p):
    """The stall rule on seat ``p``: the waste goes back under the stock (turned over), then the stock's top
    card moves to its bottom (the seat's memory of each card goes with it)."""
    wl = state.waste_len[t, p]
    sl = state.stock_len[t, p]
    for k in range(sl - 1, -1, -1):
        state.stock[t, p, k + wl] = state.stock[t, p, k]
    for k in range(wl):
        state.stock[t, p, k] = state.waste[t, p, wl - 1 - k]
    if state.memory.shape[3] > 0:
        for k in range(sl - 1, -1, -1):
            state.memory[t, p, 0, k + wl] = state.memory[t, p, 0, k]
        for k in range(wl):
            state.memory[t, p, 0, k] = state.memory[t, p, 1, wl - 1 - k]
    state.stock_len[t, p] = sl + wl
    state.waste_len[t, p] = 0
    rotate_stock(state, t, p)


@_jit()
def stall_shuffle(state, t):
    """The stall rule on every seat (:func:`stall_seat`)."""
    for p in range(state.cfg[C_P]):
        stall_seat(state, t, p)


@_jit()
def finish_round(state, t, end, candidates):
    """Score the round (rewards get the Nertz penalty and bonus), then end the match or deal the next round."""
    cfg = state.cfg
    np_ = cfg[C_P]
    best = -1
    for p in range(np_):
        if (candidates >> p) & 1 and state.lake_played[t, p] > best:
            best = state.lake_played[t, p]
    team_round = state.scratch  # [t, 0, team]: the round's team scores; [t, 1, team]: match totals
    for g in range(np_):
        team_round[t, 0, g] = 0
        team_round[t, 1, g] = 0
    for p in range(np_):
        bonus = cfg[C_BONUS] if ((candidates >> p) & 1 and state.lake_played[t, p] == best) else 0
        left = state.nertz_len[t, p]
        state.score_lake[t, p] = state.lake_played[t, p]
        state.score_nertz[t, p] = left
        state.score_bonus[t, p] = bonus
        state.score_false[t, p] = state.false_calls[t, p]
        score = (
            state.lake_played[t, p]
            - cfg[C_PENALTY] * left
            + bonus
            - cfg[C_FALSEPEN] * state.false_calls[t, p]
        )
        state.score_round[t, p] = score
        state.rewards[t, p] += bonus - cfg[C_PENALTY] * left
        state.match_score[t, p] += score
        team_round[t, 0, state.team[p]] += score
    state.round_end[t] = end
    played = state.round_idx[t] + 1
    over = False
    truncated = False
    if cfg[C_ROUNDS] > 0:
        over = played >= cfg[C_ROUNDS]
    elif cfg[C_TARGET] > 0:
        for p in range(np_):
            team_round[t, 1, state.team[p]] += state.match_score[t, p]
        top = -(1 << 40)
        count = 0
        for g in range(np_):
            if team_round[t, 1, g] >= cfg[C_TARGET]:
                if team_round[t, 0, g] > top:
                    top = team_round[t, 0, g]
                    count = 1
                elif team_round[t, 0, g] == top:
                    count += 1
        if count == 1:
            over = True
        elif played >= cfg[C_MAXROUNDS]:
            over = True
            truncated = True
    else:
        over = True
        truncated = end == END_MAX_TICKS
    if over:
        state.done[t] = DONE_TRUNCATED if truncated else DONE_TERMINATED
    else:
        state.round_idx[t] = played
        deal_round(state, t)


# ---------------------------------------------------------------- observations
# observe_player writes a seat's whole vector as four parts, each of which clears and rewrites its own slices:
# the own layout, the lake, the opponents, the status. A tick rewrites only the parts its moves touched.


@_jit(inline=True)
def write_card(o, t, p, base, c):
    """Card features (13 rank, 4 suit, joker flag) of card ``c`` at ``o[t, p, base:base + 18]`` (zeroed)."""
    if c < 0:
        return
    if c < 52:
        o[t, p, base + c % 13] = 1.0
        o[t, p, base + 13 + c // 13] = 1.0
        return
    o[t, p, base + 17] = 1.0
    if c >= FIXED_JOKER_BASE:
        o[t, p, base + card_rank(c)] = 1.0
        if card_colour(c) == 1:
            o[t, p, base + 14] = 0.5
            o[t, p, base + 15] = 0.5
        else:
            o[t, p, base + 13] = 0.5
            o[t, p, base + 16] = 0.5


@_jit(inline=True)
def clear_obs(o, t, p, lo, hi):
    """Zero ``o[t, p, lo:hi]``. (A slice assignment: numba vectorises it; the same loop written with ``lo``
    and ``hi`` from the offsets array runs element by element, several times slower.)"""
    o[t, p, lo:hi] = 0.0


@_jit(inline=True)
def observe_memory(state, t, p):
    """The seat's memory of its stock and waste (slices memory_*, with the ``memory`` option; layout in
    nertz_env.observation). The seat sees its waste top now, so from now on it knows that card."""
    d = state.memory.shape[3]
    if d == 0:
        return
    o = state.obs
    base = state.obs_off[O_MEM]
    clear_obs(o, t, p, base, base + 4 * d)
    most = d - state.cfg[C_NS] - state.cfg[C_W]  # the cards stock and waste hold at most
    draw = state.cfg[C_DRAW]
    n = state.waste_len[t, p]
    if n > 0:
        state.memory[t, p, 1, n - 1] = MEM_KNOWN
    joker = 52  # the next joker slot: known jokers take them in the order stock top to bottom, waste top to bottom
    hidden_jokers = 0  # where the seat does not know them: its deck's less those it sees, knows or played
    for pile in range(2):
        n = state.stock_len[t, p] if pile == 0 else state.waste_len[t, p]
        for i in range(n):  # i cards above it
            k = n - 1 - i
            c = state.stock[t, p, k] if pile == 0 else state.waste[t, p, k]
            m = state.memory[t, p, pile, k]
            if m == MEM_KNOWN:
                slot = c
                if c >= 52:
                    slot = joker
                    joker += 1
                o[t, p, base + 2 * d * pile + slot] = (i + 1) / most
                if pile == 0 and (i % draw == draw - 1 or i == n - 1):
                    o[t, p, base + d + slot] = 1.0
            elif c >= 52:
                hidden_jokers += 1
            elif m == MEM_UNSEEN:
                o[t, p, base + 3 * d + c] = 1.0
    for k in range(state.nertz_len[t, p] - 1):  # the Nertz pile below its top
        c = state.nertz[t, p, k]
        if c >= 52:
            hidden_jokers += 1
        else:
            o[t, p, base + 3 * d + c] = 1.0
    for x in range(hidden_jokers):
        o[t, p, base + 3 * d + 52 + x] = 1.0


@_jit(inline=True)
def observe_stock_waste(state, t, p):
    """The waste top, stock count and waste count (slices waste_top, stock_count, waste_count), and the memory."""
    off = state.obs_off
    o = state.obs
    d = state.cfg[C_D]
    clear_obs(o, t, p, off[O_WTOP], off[O_WTOP] + 18)
    n = state.waste_len[t, p]
    if n > 0:
        write_card(o, t, p, off[O_WTOP], state.waste[t, p, n - 1])
    o[t, p, off[O_SCOUNT]] = state.stock_len[t, p] / d
    o[t, p, off[O_WCOUNT]] = n / d
    observe_memory(state, t, p)


@_jit(inline=True)
def observe_own(state, t, p):
    """The seat's own layout: Nertz top and count, waste and stock, work piles (slices nertz_top .. work_count)."""
    cfg = state.cfg
    off = state.obs_off
    o = state.obs  # indexed in full, as in compute_mask (clear_obs's slice assignment is the one exception)
    clear_obs(o, t, p, off[O_NTOP], off[O_LAKE])
    n = state.nertz_len[t, p]
    if n > 0:
        write_card(o, t, p, off[O_NTOP], state.nertz[t, p, n - 1])
    o[t, p, off[O_NCOUNT]] = n / cfg[C_NS]
    observe_stock_waste(state, t, p)
    for j in range(cfg[C_W]):
        n = state.work_len[t, p, j]
        base = off[O_WORK] + j * 52
        for k in range(n):
            c = state.work[t, p, j, k]
            if c < 52:
                o[t, p, base + c] = 1.0
            else:
                o[t, p, off[O_WJOKER] + j] = 1.0
                if c >= FIXED_JOKER_BASE:
                    r = card_rank(c)
                    if card_colour(c) == 1:
                        o[t, p, base + 13 + r] = 0.5
                        o[t, p, base + 26 + r] = 0.5
                    else:
                        o[t, p, base + r] = 0.5
                        o[t, p, base + 39 + r] = 0.5
        if n > 0:
            write_card(o, t, p, off[O_WEXP] + j * 18, state.work[t, p, j, n - 1])
        o[t, p, off[O_WCNT] + j] = n / 13.0


@_jit(inline=True)
def observe_lake(state, t, p):
    """The lake's tops (slice lake_tops): per card, the foundations it tops, over their most, P * (1 + jokers)
    (every deck's copy of the card, and every joker declared as it)."""
    o = state.obs
    base = state.obs_off[O_LAKE]
    most = state.cfg[C_P] * (1 + state.cfg[C_JOKERS])
    for c in range(52):
        o[t, p, base + c] = state.lake_tops[t, c] / most


@_jit(inline=True)
def observe_opponents(state, t, p):
    """The other seats' Nertz tops and counts, and who is a partner (slices opp_nertz_top .. opp_teammate)."""
    cfg = state.cfg
    off = state.obs_off
    o = state.obs
    np_, ns = cfg[C_P], cfg[C_NS]
    clear_obs(o, t, p, off[O_OTOP], off[O_STATUS])
    for k in range(1, np_):
        q = (p + k) % np_
        n = state.nertz_len[t, q]
        if n > 0:
            write_card(o, t, p, off[O_OTOP] + (k - 1) * 18, state.nertz[t, q, n - 1])
        o[t, p, off[O_OCOUNT] + k - 1] = n / ns
        if state.team[q] == state.team[p]:
            o[t, p, off[O_OTEAM] + k - 1] = 1.0


@_jit(inline=True)
def observe_status(state, t, p):
    """The status slice: tick, stall and round progress, turn, redeals left, own lake cards."""
    cfg = state.cfg
    o = state.obs
    s = state.obs_off[O_STATUS]
    o[t, p, s] = state.tick[t] / cfg[C_MAXTICKS]
    o[t, p, s + 1] = state.since_progress[t] / cfg[C_STALL]
    o[t, p, s + 2] = state.stalls[t] / 2.0
    o[t, p, s + 3] = 1.0 if (cfg[C_TURN] == 0 or turn_player(state, t) == p) else 0.0
    if cfg[C_MAXREDEALS] < 0:
        o[t, p, s + 4] = 1.0
    elif cfg[C_MAXREDEALS] > 0:
        o[t, p, s + 4] = (cfg[C_MAXREDEALS] - state.redeals[t, p]) / cfg[C_MAXREDEALS]
    else:
        o[t, p, s + 4] = 0.0
    o[t, p, s + 5] = state.lake_played[t, p] / cfg[C_D]
    o[t, p, s + 6] = state.round_idx[t] / cfg[C_MAXROUNDS]


@_jit(inline=True)
def observe_last_moves(state, t, p):
    """The seat's own last moves (slice last_moves, present with the ``last_moves`` option): a one-hot over
    the actions per move kept, most recent first."""
    k = state.last_moves.shape[2]
    if k == 0:
        return
    base = state.obs_off[O_LAST]
    n = state.act[L_NUM]
    clear_obs(state.obs, t, p, base, base + k * n)
    for i in range(k):
        a = state.last_moves[t, p, i]
        if a >= 0:
            state.obs[t, p, base + i * n + a] = 1.0


@_jit(inline=True)
def remember_move(state, t, p, a):
    """Put move ``a`` first in the seat's last moves (with the ``last_moves`` option)."""
    k = state.last_moves.shape[2]
    for i in range(k - 1, 0, -1):
        state.last_moves[t, p, i] = state.last_moves[t, p, i - 1]
    if k > 0:
        state.last_moves[t, p, 0] = a


@_jit(inline=True)
def observe_player(state, t, p):
    """Write seat ``p``'s whole observation vector (layout in nertz_env.observation)."""
    observe_own(state, t, p)
    observe_lake(state, t, p)
    observe_opponents(state, t, p)
    observe_status(state, t, p)
    observe_last_moves(state, t, p)


@_jit(python=True)
def observe_table(state, t):
    """Every seat's observation and mask, from scratch."""
    for p in range(state.cfg[C_P]):
        observe_player(state, t, p)
        compute_mask(state, t, p)


@_jit(ir_inline=True)
def observe_changes(state, t, moved, flipped, progress):
    """Update every seat's observation and mask after an ordinary tick, rewriting only what its moves changed:
    the whole view of a seat in ``moved``, the stock and waste of a seat in ``flipped``, the lake and opponents
    of everyone after ``progress``, and everyone's status. Equals ``observe_table`` (tests/test_engine.py)."""
    for p in range(state.cfg[C_P]):
        if (moved >> p) & 1:
            observe_player(state, t, p)
            compute_mask(state, t, p)
            continue
        if (flipped >> p) & 1:
            observe_stock_waste(state, t, p)
            mask_after_waste_move(state, t, p)
        if progress:
            observe_lake(state, t, p)
            observe_opponents(state, t, p)
            mask_after_lake_change(state, t, p)
        observe_status(state, t, p)
        observe_last_moves(state, t, p)


# ---------------------------------------------------------------- reset and one tick
@_jit(inline=True)
def team_rewards(state, t):
    """With teams, every seat's reward becomes its team's summed reward (a partner's score is its own)."""
    np_ = state.cfg[C_P]
    shared = False
    for p in range(np_):
        if state.team[p] != p:
            shared = True
    if not shared:
        return
    total = state.scratch  # rewards are whole numbers, summed exactly in int64
    for g in range(np_):
        total[t, 0, g] = 0
    for p in range(np_):
        total[t, 0, state.team[p]] += np.int64(state.rewards[t, p])
    for p in range(np_):
        state.rewards[t, p] = total[t, 0, state.team[p]]


@_jit(inline=True)
def clear_outputs(state, t):
    for p in range(state.cfg[C_P]):
        state.rewards[t, p] = 0.0
        state.illegal[t, p] = 0
        state.lost_race[t, p] = 0
        state.applied[t, p] = 0
    state.round_end[t] = END_NONE


@_jit()
def reset_table(state, t):
    """Start a new episode on table ``t`` from its generator's current state (seed it first to choose)."""
    for p in range(state.cfg[C_P]):
        state.match_score[t, p] = 0
        state.score_lake[t, p] = 0
        state.score_nertz[t, p] = 0
        state.score_bonus[t, p] = 0
        state.score_false[t, p] = 0
        state.score_round[t, p] = 0
        state.order[t, p] = p
    state.round_idx[t] = 0
    state.done[t] = DONE_NO
    clear_outputs(state, t)
    deal_round(state, t)
    observe_table(state, t)


@_jit(ir_inline=True)
def step_table(state, t, actions):
    """One tick of table ``t`` with ``actions[t, p]`` for every seat (any integer; illegal ones are waits)."""
    cfg = state.cfg
    np_ = cfg[C_P]
    num_actions = state.act[L_NUM]
    clear_outputs(state, t)
    if state.done[t] != DONE_NO:
        return
    for p in range(np_):
        state.order[t, p] = p
    for k in range(np_ - 1, 0, -1):
        x = rng_below(state.rng, t, k + 1)
        tmp = state.order[t, k]
        state.order[t, k] = state.order[t, x]
        state.order[t, x] = tmp
    # Typed from the start: a plain 0 or False would be a literal type and compile these functions twice.
    progress = np.bool_(False)
    callers = np.int64(0)
    moved = np.int64(0)  # seats whose cards moved between piles or to the lake (bit p)
    flipped = np.int64(0)  # seats that only turned or rotated their stock
    rotate = state.act[L_ROTATE]
    for k in range(np_):
        p = state.order[t, k]
        a = actions[t, p]
        if a < 0 or a >= num_actions or state.mask[t, p, a] == 0:
            state.illegal[t, p] = 1
            continue
        state.applied[t, p] = a
        if a != 0:
            remember_move(state, t, p, a)
        result = apply_action(state, t, p, a)
        if result & R_PROGRESS:
            progress = np.bool_(True)
        if result & R_LOST:
            state.lost_race[t, p] = 1
        elif a == 1 or a == rotate:
            flipped |= 1 << p
        elif a != 0 and not result & (R_CALL | R_FALSE_CALL):
            moved |= 1 << p
        if result & R_CALL:
            callers |= 1 << p
    state.tick[t] += 1
    end = END_NONE
    if cfg[C_MANUAL]:
        if callers:
            end = END_NERTZ
    else:
        for p in range(np_):
            if state.nertz_len[t, p] == 0:
                callers |= 1 << p
        if callers:
            end = END_NERTZ
    if progress:
        state.since_progress[t] = 0
        state.stalls[t] = 0
    else:
        state.since_progress[t] += 1
        if end == END_NONE and state.since_progress[t] >= cfg[C_STALL]:
            if state.stalls[t] == 0:
                stall_shuffle(state, t)
                state.stalls[t] = 1
                state.since_progress[t] = 0
                moved = -1  # every stock and waste changed
            else:
                end = END_STALL
    if end == END_NONE and state.tick[t] >= cfg[C_MAXTICKS]:
        end = END_MAX_TICKS
    if end != END_NONE:
        finish_round(state, t, end, callers)
    team_rewards(state, t)
    if end != END_NONE or cfg[C_TURN]:  # a new deal, or every seat's turn bit and mask changed
        observe_table(state, t)
    else:
        observe_changes(state, t, moved, flipped, progress)


# ---------------------------------------------------------------- drivers over a block of tables
# The entry points called from Python, the only functions cached on disk. Each runs tables lo..hi-1 without
# the GIL; nertz_env.engine.batch gives each thread one block.


@_jit(python=True)
def reset_block(state, lo, hi):
    """Deal tables ``lo..hi-1`` a new episode from their generators' current state."""
    for t in range(lo, hi):
        reset_table(state, t)


@_jit(python=True)
def step_block(state, actions, autoreset, lo, hi):
    """One tick on tables ``lo..hi-1``. With ``autoreset``, a table that ended on the previous call is dealt
    a new episode instead (its actions are ignored: Gymnasium's "next-step" autoreset)."""
    for t in range(lo, hi):
        if autoreset and state.done[t] != DONE_NO:
            reset_table(state, t)
        else:
            step_table(state, t, actions)


@_jit(python=True)
def sample_block(mask, rng, out, lo, hi):
    """Uniformly random legal action for every seat of tables ``lo..hi-1``, drawn from the caller's
    generators ``rng`` (one splitmix64 state per table; agent randomness never touches the game's)."""
    for t in range(lo, hi):
        for p in range(mask.shape[1]):
            count = 0
            for a in range(mask.shape[2]):
                count += mask[t, p, a]
            k = rng_below(rng, t, count)
            for a in range(mask.shape[2]):
                if mask[t, p, a]:
                    if k == 0:
                        out[t, p] = a
                        break
                    k -= 1
