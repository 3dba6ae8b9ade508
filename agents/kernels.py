"""The compiled kernels of the scripted agents: the own layout read from the observation into the *state*
(:func:`read_state`; its slots ``S_*`` below), the heuristic's priorities, and the search's rollouts. Every
move, a rollout's or a predicted one, is made by the engine's per-seat rule functions
(:mod:`nertz_env.engine.rules`) on a small engine table of the agent's own (:func:`seat_tables`), with turns
off. Cached on disk with the engine's sources.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nertz_env.actions import (
    CALL,
    FLIP,
    JOKER_LAKE,
    L_CALL,
    L_ROTATE,
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
from nertz_env.engine import _abi  # noqa: F401  (the state's calling convention: part of this module's cache key)
from nertz_env.engine._cache import keyed_jit
from nertz_env.engine.rules import (
    R_LOST,
    apply_action,
    can_stack,
    compute_mask,
    exposed_value,
    joker_rank,
    lake_add,
    lake_find,
    lake_takes,
    rng_below,
    rng_next,
    stall_seat,
)
from nertz_env.engine.state import (
    C_D,
    C_DRAW,
    C_JOKERS,
    C_MAXREDEALS,
    C_NS,
    C_P,
    C_SHUFFLE,
    C_SIZE,
    C_TURN,
    C_W,
    MAX_PILE,
    TableState,
    allocate,
    config_array,
)
from nertz_env.moves import read_card  # the observation's card decoder, shared with the move features
from nertz_env.observation import (
    O_LAKE,
    O_NCOUNT,
    O_NTOP,
    O_SCOUNT,
    O_SIZE,
    O_STATUS,
    O_WCNT,
    O_WCOUNT,
    O_WJOKER,
    O_WORK,
    O_WTOP,
    ObsLayout,
)

# The kernels allocate nothing (``_nrt=False``: the caller gives the seat table and scratch arrays, and copies
# are plain loops) and release the GIL, so agents decide side by side in threads (``opponent_threads``); each
# agent owns its seat table, scratch arrays and random state. No cfunc wrapper: it costs compile time.
_KERNEL_OPTIONS: dict = {"_nrt": False, "nogil": True, "no_cfunc_wrapper": True}  # a dict: numba's stubs omit _nrt
_kernel = keyed_jit(_KERNEL_OPTIONS)
_allocating = keyed_jit({"no_cfunc_wrapper": True})  # hidden_cards: one small count array per decision, not worth a parameter
# Functions on the seat table that only other kernels call: inlined by LLVM into their callers (a real call
# passes the table's ~40 arrays as hundreds of arguments), no Python wrapper, not cached on their own (the
# cached callers carry their code). ``_move`` is the one kernel that inlines the engine's ``apply_action``.
_inner = keyed_jit({**_KERNEL_OPTIONS, "forceinline": True, "no_cpython_wrapper": True}, cache=False)

UNKNOWN = -2  # a card the seat has not seen
MAX_W = 6
MAX_DECK = 54
# The state: int64, ``STATE_SIZE`` values, card codes of nertz_env.cards. Piles run bottom to top.
S_NTOP = 0  # the Nertz top (-1 empty, UNKNOWN when a predicted move uncovered an unseen card)
S_NCOUNT = 1  # cards in the Nertz pile
S_WTOP = 2  # the waste top (-1 empty, UNKNOWN when a predicted flip turned up an unseen card)
S_WCOUNT, S_SCOUNT = 3, 4  # cards in the waste, in the stock
S_NPLAYED, S_LPLAYED = 5, 6  # Nertz cards, own lake cards the seat's predicted moves played (apply_view)
S_WLEN = 7  # + j: cards in work pile j (MAX_W slots, the unused ones stay 0)
S_WORK = S_WLEN + MAX_W  # + 13 j + k: work pile j, highest rank to exposed card; -1 beyond its length
S_LAKE = S_WORK + MAX_W * 13  # + c: foundations whose top is the real card c (0 .. 51)
S_STOCK = S_LAKE + 52  # + k: the stock (S_SCOUNT cards; the last is the next flipped), UNKNOWN if unseen
S_WASTE = S_STOCK + MAX_DECK  # + k: the waste (S_WCOUNT cards; the last is S_WTOP), UNKNOWN if unseen
S_NERTZ = S_WASTE + MAX_DECK  # + k: the Nertz pile (S_NCOUNT cards, the last S_NTOP), UNKNOWN below the top
S_REDEALS = S_NERTZ + 13  # times the waste was turned over this round
STATE_SIZE = S_REDEALS + 1

# Slots of ``params`` (int64, P_SIZE; table_params): the engine's config array first (config_array, read by
# its C_* slots), then the observation offsets (P_OFF + O_*) and the action table's layout (P_ACT + L_*).
P_OFF = C_SIZE
P_ACT = P_OFF + O_SIZE + 1  # the offsets array: one slot per slice, then the size
P_SIZE = P_ACT + 9

# The seat of a seat table that holds the agent's layout (the others stay empty). An int32, as the engine's own
# seat numbers are: numba compiles the engine's functions once per argument type.
ME = np.int32(0)


def table_params(config: NertzConfig) -> tuple[np.ndarray, np.ndarray]:
    """The ``params`` vector of ``config`` and its action table's ``columns`` (int64 rows: kind, src, dst,
    length, suit)."""
    table = action_table(config)
    params = np.zeros(P_SIZE, dtype=np.int64)
    params[:C_SIZE] = config_array(config)
    params[P_OFF:P_ACT] = ObsLayout(config).offsets
    params[P_ACT : P_ACT + 9] = table.layout
    cols = table.arrays()
    columns = np.stack([cols[f].astype(np.int64) for f in ("kind", "src", "dst", "length", "suit")])
    return params, columns


# ---------------------------------------------------------------- reading the observation
@_kernel
def read_state(obs, params, s):
    """Fill state ``s`` from one observation vector of the seat."""
    s[:] = 0
    w, np_, ns, d = params[C_W], params[C_P], params[C_NS], params[C_D]
    off = params[P_OFF:P_ACT]
    s[S_NTOP] = read_card(obs, off[O_NTOP])
    s[S_NCOUNT] = np.int64(obs[off[O_NCOUNT]] * ns + 0.5)
    s[S_WTOP] = read_card(obs, off[O_WTOP])
    s[S_WCOUNT] = np.int64(obs[off[O_WCOUNT]] * d + 0.5)
    s[S_SCOUNT] = np.int64(obs[off[O_SCOUNT]] * d + 0.5)
    left = obs[off[O_STATUS] + 4]  # redeals left, as a fraction of the limit (1.0 when unlimited)
    most = params[C_MAXREDEALS]
    s[S_REDEALS] = most - np.int64(left * most + 0.5) if most > 0 else 0
    s[S_STOCK : S_STOCK + s[S_SCOUNT]] = UNKNOWN
    s[S_WASTE : S_WASTE + s[S_WCOUNT]] = UNKNOWN
    if s[S_WCOUNT] > 0:
        s[S_WASTE + s[S_WCOUNT] - 1] = s[S_WTOP]
    s[S_NERTZ : S_NERTZ + s[S_NCOUNT]] = UNKNOWN
    if s[S_NCOUNT] > 0:
        s[S_NERTZ + s[S_NCOUNT] - 1] = s[S_NTOP]
    s[S_WORK:S_LAKE] = -1
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
        s[S_LAKE + c] = np.int64(obs[off[O_LAKE] + c] * (np_ * (1 + params[C_JOKERS])) + 0.5)


# ---------------------------------------------------------------- the view
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
def fits_somewhere(s, c, w):
    """Can card ``c`` (known) go onto one of the work piles (stacking, or an empty pile)?"""
    if c < 0:
        return False
    for j in range(w):
        if s[S_WLEN + j] == 0 or can_stack(c, stack_value(s, j)):
            return True
    return False


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
def _useful_exposure(s, e):
    """Is ``e`` (a newly exposed card, -1 for a pile just emptied) useful: the Nertz top fits on it or an
    empty pile, or the lake takes it?"""
    ntop = s[S_NTOP]
    if e < 0:
        return s[S_NCOUNT] > 0
    if ntop >= 0 and can_stack(ntop, e):
        return True
    return lake_takes(s, S_LAKE, e)


@_kernel
def heuristic_priorities(s, mask, params, columns, waste_policy, banned, prio):
    """Priority of every action (the ``PRIO_*`` above); ``NEVER`` for illegal and avoided ones."""
    w = params[C_W]
    ntop = s[S_NTOP]
    ncount = s[S_NCOUNT]
    nertz_fits = fits_somewhere(s, ntop, w)
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
                e = s[S_WORK + 13 * j + n - 2] if n >= 2 else -1
                if _useful_exposure(s, e):
                    p += PRIO_USEFUL_BONUS
            if kind == JOKER_LAKE:  # prefer declaring a card whose successor we hold face up
                u = columns[4, a]
                r = joker_rank(s, S_LAKE, top_of(s, src), u)  # the card it stands for: u * 13 + r
                if 0 <= r < 12:
                    nxt = u * 13 + r + 1
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
                        and not lake_takes(s, S_LAKE, lower)
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
            e = s[S_WORK + 13 * i + ni - length - 1] if not whole else -1
            if s[S_WLEN + dst] == 0:
                if not whole and _useful_exposure(s, e):
                    prio[a] = PRIO_RUN_TO_EMPTY
            elif whole:
                if ncount > 0:
                    prio[a] = PRIO_RUN_EMPTIES
            elif ntop >= 0 and can_stack(ntop, e):
                prio[a] = PRIO_RUN_FREES_NERTZ
            elif lake_takes(s, S_LAKE, e):
                prio[a] = PRIO_RUN_EXPOSES_LAKE


# ---------------------------------------------------------------- the seat table: the view on the engine's state
def seat_tables(config: NertzConfig, tables: int = 3) -> TableState:
    """An engine state of ``tables`` tables of ``config`` for an agent's own moves (see the module doc): seat
    ``ME`` holds the agent's layout, the other seats stay empty, and turns are off in its config array (one
    own move per tick; no ``memory`` option: a plan needs no record of what the seat saw)."""
    table = allocate(dataclasses.replace(config, memory=False), tables)
    table.cfg[C_TURN] = 0
    return table


@_kernel
def load_seat(s, table, t, p):
    """Seat ``p`` of table ``t`` gets the view's piles (unknown cards stay ``UNKNOWN``) and redeals; the table's
    lake gets one foundation per lake top of the view, filled from the ace up in the top's suit (the rules read
    only the tops and the foundations' lengths; the owners are unknown, -1). The seat's lake count starts at
    0, so after moves it counts the seat's own lake plays."""
    for pile, lens, first, count in ((table.nertz, table.nertz_len, S_NERTZ, S_NCOUNT),
                                     (table.stock, table.stock_len, S_STOCK, S_SCOUNT),
                                     (table.waste, table.waste_len, S_WASTE, S_WCOUNT)):
        for k in range(s[count]):
            pile[t, p, k] = s[first + k]
        lens[t, p] = s[count]
    for j in range(table.cfg[C_W]):
        n = s[S_WLEN + j]
        for k in range(n):
            table.work[t, p, j, k] = s[S_WORK + 13 * j + k]
        table.work_len[t, p, j] = n
    table.redeals[t, p] = s[S_REDEALS]
    table.lake_played[t, p] = 0
    f = 0
    cap = table.lake_len.shape[1]
    for c in range(52):
        m = s[S_LAKE + c]
        table.lake_tops[t, c] = m
        for _ in range(m):
            if f < cap:
                base = c - c % 13
                for x in range(c % 13 + 1):
                    table.lake[t, f, x] = base + x
                    table.lake_owner[t, f, x] = -1
                table.lake_len[t, f] = c % 13 + 1
                f += 1
    table.lake_n[t] = f
    for g in range(f, cap):
        table.lake_len[t, g] = 0


@_inner
def view_piles(table, t, p, s):
    """Write what the heuristic reads of seat ``p``'s piles on table ``t`` into the view ``s``: the Nertz and
    waste tops and counts, the stock count and the work piles (their cards beyond their lengths are left as
    they were)."""
    n = table.nertz_len[t, p]
    s[S_NCOUNT] = n
    s[S_NTOP] = table.nertz[t, p, n - 1] if n > 0 else -1
    n = table.waste_len[t, p]
    s[S_WCOUNT] = n
    s[S_WTOP] = table.waste[t, p, n - 1] if n > 0 else -1
    s[S_SCOUNT] = table.stock_len[t, p]
    for j in range(table.cfg[C_W]):
        n = table.work_len[t, p, j]
        s[S_WLEN + j] = n
        for k in range(n):
            s[S_WORK + 13 * j + k] = table.work[t, p, j, k]


@_inner
def view_lake(table, t, s):
    """Write table ``t``'s lake tops into the view ``s``."""
    for c in range(52):
        s[S_LAKE + c] = table.lake_tops[t, c]


@_kernel
def store_seat(table, t, p, s):
    """Read seat ``p`` of table ``t`` back into the view ``s`` (the inverse of :func:`load_seat`; the played
    counters ``S_NPLAYED``, ``S_LPLAYED`` are left as they are)."""
    view_piles(table, t, p, s)
    for j in range(table.cfg[C_W]):
        s[S_WORK + 13 * j + table.work_len[t, p, j] : S_WORK + 13 * j + 13] = -1
    view_lake(table, t, s)
    for pile, lens, first in ((table.nertz, table.nertz_len, S_NERTZ),
                              (table.stock, table.stock_len, S_STOCK),
                              (table.waste, table.waste_len, S_WASTE)):
        for k in range(lens[t, p]):
            s[first + k] = pile[t, p, k]
    s[S_REDEALS] = table.redeals[t, p]


@_inner
def copy_table(table, a, b, p):
    """Table ``b`` becomes a copy of table ``a``'s seat ``p`` and lake (what a rollout reads and moves)."""
    table.nertz_len[b, p] = table.nertz_len[a, p]
    for k in range(table.nertz_len[a, p]):
        table.nertz[b, p, k] = table.nertz[a, p, k]
    for j in range(table.cfg[C_W]):
        n = table.work_len[a, p, j]
        table.work_len[b, p, j] = n
        for k in range(n):
            table.work[b, p, j, k] = table.work[a, p, j, k]
    table.stock_len[b, p] = table.stock_len[a, p]
    for k in range(table.stock_len[a, p]):
        table.stock[b, p, k] = table.stock[a, p, k]
    table.waste_len[b, p] = table.waste_len[a, p]
    for k in range(table.waste_len[a, p]):
        table.waste[b, p, k] = table.waste[a, p, k]
    table.redeals[b, p] = table.redeals[a, p]
    table.lake_played[b, p] = table.lake_played[a, p]
    table.lake_n[b] = table.lake_n[a]
    for f in range(table.lake_len.shape[1]):
        table.lake_len[b, f] = table.lake_len[a, f]
    for f in range(table.lake_n[a]):
        for x in range(MAX_PILE):  # whole rows: a fixed count copies faster than the foundation's length
            table.lake[b, f, x] = table.lake[a, f, x]
            table.lake_owner[b, f, x] = table.lake_owner[a, f, x]
    for c in range(52):
        table.lake_tops[b, c] = table.lake_tops[a, c]


@_inner
def _move(table, t, p, a):
    """The engine's ``apply_action`` of seat ``p``'s legal action ``a`` on table ``t`` (its R_* bits)."""
    return apply_action(table, t, p, a)


@_kernel
def apply_view(s, a, table, t, p):
    """Apply the seat's legal action ``a`` to the view ``s`` with the engine's rules: ``s`` is loaded into seat
    ``p`` of table ``t``, moved there, and read back, with the played counters updated. A shuffled redeal
    (recycle="shuffle") leaves the new stock's order unknown. Returns ``apply_action``'s R_* bits."""
    ncount, scount = s[S_NCOUNT], s[S_SCOUNT]
    load_seat(s, table, t, p)
    result = _move(table, t, p, a)
    store_seat(table, t, p, s)
    s[S_NPLAYED] += ncount - s[S_NCOUNT]
    s[S_LPLAYED] += table.lake_played[t, p]
    if a == 1 and scount == 0 and table.cfg[C_SHUFFLE]:  # a flip that turned the waste over
        s[S_STOCK : S_STOCK + s[S_SCOUNT]] = UNKNOWN
    return result


@_kernel
def stall_view(s, table, t, p):
    """The engine's stall rule (``stall_seat``) on the view's stock and waste."""
    load_seat(s, table, t, p)
    stall_seat(table, t, p)
    store_seat(table, t, p, s)


@_kernel
def own_moves(s, table, t, p, out):
    """The actions the seat may take on the view ``s`` by the engine's mask (loaded into seat ``p`` of table
    ``t``), without wait, call and rotate, into ``out``; returns how many."""
    load_seat(s, table, t, p)
    compute_mask(table, t, p)
    n = 0
    for a in range(1, table.mask.shape[2]):
        if table.mask[t, p, a] and a != table.act[L_CALL] and a != table.act[L_ROTATE]:
            out[n] = a
            n += 1
    return n


# ---------------------------------------------------------------- memory of the own stock and waste
@_kernel
def _counts_fit(mem, s):
    if mem[S_SCOUNT] != s[S_SCOUNT] or mem[S_WCOUNT] != s[S_WCOUNT]:
        return False
    return mem[S_WTOP] == UNKNOWN or mem[S_WTOP] == s[S_WTOP]


@_kernel
def recall(s, predicted, before):
    """Write the remembered stock and waste into ``s`` (just read from the observation) when they fit it.

    ``predicted`` is the memory after the agent's last action as planned, ``before`` the memory before it
    (the action may have failed: a lost lake race); both have had the stall rule applied when it acted after
    that tick (:func:`stall_view`). Returns True when the memory fit; otherwise ``s`` keeps what the
    observation alone proves."""
    if _counts_fit(predicted, s):
        mem = predicted
    elif _counts_fit(before, s):
        mem = before
    else:
        return False
    for first, count in ((S_STOCK, S_SCOUNT), (S_WASTE, S_WCOUNT)):
        for k in range(s[count]):
            s[first + k] = mem[first + k]
    if s[S_WCOUNT] > 0:
        s[S_WASTE + s[S_WCOUNT] - 1] = s[S_WTOP]
    return True


@_kernel
def write_memory(s, seen, lake_jokers, params, out, base):
    """Note the own real cards the view ``s`` shows face up (Nertz top, waste top, work piles) in ``seen`` (call it
    once for each observation), then
    write the ``memory`` option's slices into ``out[base:]`` as the engine does (``observe_memory``): the places
    of the view's known stock and waste cards, the real cards never in ``seen``, and the jokers the seat cannot
    place (the deck's less ``lake_jokers``, its own in the lake, and those it sees or knows)."""
    d, w, draw = params[C_D], params[C_W], params[C_DRAW]
    most = d - params[C_NS] - w  # the cards stock and waste hold at most
    out[base : base + 4 * d] = 0.0
    placed = lake_jokers + (1 if s[S_NTOP] >= 52 else 0)
    if 0 <= s[S_NTOP] < 52:
        seen[s[S_NTOP]] = 1
    for j in range(w):
        for k in range(s[S_WLEN + j]):
            c = s[S_WORK + 13 * j + k]
            if c < 52:
                seen[c] = 1
            else:
                placed += 1
    joker = 52  # known jokers take the joker slots in the order stock top to bottom, waste top to bottom
    for pile in range(2):
        first, n = (S_STOCK, s[S_SCOUNT]) if pile == 0 else (S_WASTE, s[S_WCOUNT])
        for i in range(n):  # i cards above it
            c = s[first + n - 1 - i]
            if c == UNKNOWN:
                continue
            slot = c
            if c < 52:
                seen[c] = 1  # (the waste top; the others were seen before)
            else:
                slot = joker
                joker += 1
                placed += 1
            out[base + 2 * d * pile + slot] = (i + 1) / most
            if pile == 0 and (i % draw == draw - 1 or i == n - 1):
                out[base + d + slot] = 1.0
    for c in range(52):
        if not seen[c]:
            out[base + 3 * d + c] = 1.0
    for x in range(params[C_JOKERS] - placed):
        out[base + 3 * d + 52 + x] = 1.0


@_allocating
def hidden_cards(s, params, lake_own, out):
    """The seat's own cards it cannot place (deck minus the lake cards it played, its work piles, and every
    known card of its Nertz pile, stock and waste) into ``out``; returns how many, or -1 when that does not
    match the number of unknown slots (the memory is out of step)."""
    count = np.ones(53, np.int64) - lake_own
    count[52] += params[C_JOKERS] - 1  # one of each real card, the deck's jokers
    for j in range(params[C_W]):
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


# ---------------------------------------------------------------- the search's rollouts (see agents.search)
@_inner
def _uniform(rng, t):
    """A uniform float in [0, 1) from generator ``t`` of ``rng`` (the engine's splitmix64)."""
    return (rng_next(rng, t) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@_inner
def determinize(table, t, p, cards, n):
    """Deal the ``n`` hidden ``cards`` at random (table ``t``'s generator) into the ``UNKNOWN`` slots of seat
    ``p``'s Nertz pile, stock and waste, in that order."""
    for k in range(n - 1, 0, -1):
        x = rng_below(table.rng, t, k + 1)
        cards[k], cards[x] = cards[x], cards[k]
    i = 0
    for pile, lens in ((table.nertz, table.nertz_len), (table.stock, table.stock_len),
                       (table.waste, table.waste_len)):
        for k in range(lens[t, p]):
            if pile[t, p, k] == UNKNOWN:
                pile[t, p, k] = cards[i]
                i += 1


@_inner
def _aces(pile, n):
    """Bit ``u`` set when the first ``n`` cards of ``pile`` hold the real ace of suit ``u``."""
    held = 0
    for k in range(n):
        if 0 <= pile[k] < 52 and pile[k] % 13 == 0:
            held |= 1 << (pile[k] // 13)
    return held


@_inner
def _own_aces(table, t, p):
    """Bit ``u`` set when seat ``p`` still holds its own ace of suit ``u`` (in any of its piles)."""
    held = _aces(table.nertz[t, p], table.nertz_len[t, p]) | _aces(table.stock[t, p], table.stock_len[t, p])
    held |= _aces(table.waste[t, p], table.waste_len[t, p])
    for j in range(table.cfg[C_W]):
        held |= _aces(table.work[t, p, j], table.work_len[t, p, j])
    return held


@_inner
def _opens(table, t, c, held):
    """May another player put the real card ``c`` on the lake: the next card of a foundation, or an ace
    while its suit has fewer foundations than the other players have aces of it (one per deck; ``held``:
    :func:`_own_aces` of the seat)?"""
    if c % 13 > 0:
        return table.lake_tops[t, c - 1] > 0
    n = 0
    for r in range(13):
        n += table.lake_tops[t, c + r]
    return n < table.cfg[C_P] - ((held >> (c // 13)) & 1)


@_inner
def others_play(table, t, p, rate, held):
    """The other players' lake plays during one tick of a rollout on table ``t``: about ``rate`` cards (a
    binomial over the opponents), each a random card the lake takes from them (:func:`_opens`; ``held``:
    :func:`_own_aces` of seat ``p``), put there by the engine's ``lake_add`` as another seat's. Returns how
    many cards they played."""
    np_ = table.cfg[C_P]
    opponents = np_ - 1
    chance = rate / opponents if opponents > 0 else 0.0
    other = (p + 1) % np_
    played = 0
    for _ in range(opponents):
        if _uniform(table.rng, t) >= chance:
            continue
        n = 0
        for c in range(52):
            if _opens(table, t, c, held):
                n += 1
        if n == 0:
            break
        k = rng_below(table.rng, t, n)
        for c in range(52):
            if _opens(table, t, c, held):
                if k == 0:
                    f = table.lake_n[t] if c % 13 == 0 else lake_find(table, t, c - 1)
                    lake_add(table, t, f, c, other)
                    played += 1
                    break
                k -= 1
    return played


@_inner
def _rollout(
    table, t, p, view, params, columns, reverse_run, horizon, waste_policy, discount, value, rate, prio, trace
):
    """Play the heuristic for seat ``p`` of table ``t`` on the engine's rules for up to ``horizon`` ticks, the
    other players adding about ``rate`` cards a tick to the lake first (so they win the races), and return
    the discounted points: ``value[0]`` per card leaving the Nertz pile and ``value[1]`` per own lake card.
    Stops when the heuristic would wait or at the horizon, never at an empty Nertz pile. ``view`` and ``prio``
    are scratch space; ``trace[k]``, where it has room, gets the action of tick ``k`` (0 after the last)."""
    banned = -1
    total = 0.0
    f = 1.0
    trace[:] = 0
    call = table.act[L_CALL]
    held = _own_aces(table, t, p)
    lake_changed = True
    for k in range(horizon):
        compute_mask(table, t, p)
        mask = table.mask[t, p]
        if call >= 0:
            mask[call] = 0  # a rollout plays on past an empty Nertz pile
        view_piles(table, t, p, view)
        if lake_changed:
            view_lake(table, t, view)
            lake_changed = False
        heuristic_priorities(view, mask, params, columns, waste_policy, banned, prio)
        a = pick_best(prio, mask, _uniform(table.rng, t))
        if a == 0:
            break
        if rate > 0.0 and others_play(table, t, p, rate, held) > 0:
            lake_changed = True
        if k < trace.shape[0]:
            trace[k] = a
        nertz, lake = table.nertz_len[t, p], table.lake_played[t, p]
        if _move(table, t, p, a) & R_LOST:
            continue
        if table.lake_played[t, p] != lake:
            lake_changed = True
            held = _own_aces(table, t, p)
        total += f * (value[0] * (nertz - table.nertz_len[t, p]) + value[1] * (table.lake_played[t, p] - lake))
        f *= discount
        banned = reverse_run[a]
    return total


def rollout_workspace(config: NertzConfig) -> tuple:
    """Scratch space for :func:`rollout_values` (its arguments after ``values``, in order): the seat table
    (:func:`seat_tables`; table 0 holds the view, 1 a deal of its hidden cards, 2 the rollout), a view, the
    rollouts' priorities and an empty trace."""
    n_actions = action_table(config).n
    return (
        seat_tables(config, 3),
        np.zeros(STATE_SIZE, np.int64),
        np.zeros(n_actions, np.int64),
        np.zeros(0, np.int64),
    )


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
    table,
    view,
    prio,
    trace,
):
    """Mean rollout value (:func:`_rollout`) of each candidate action from the view ``s`` over ``samples`` deals
    of the ``ncards`` hidden ``cards``; every candidate sees the same deals and the same random streams
    (common random numbers). The arguments after ``values`` are :func:`rollout_workspace`'s."""
    # Typed table and seat numbers (a literal 0, 1 or 2 would have numba compile every callee once more for
    # each literal, the engine's mask and move code included).
    here, world, child, me = np.int64(0), np.int64(1), np.int64(2), np.int32(ME)
    table.rng[here] = seed
    load_seat(s, table, here, me)
    values[:nc] = 0.0
    for _ in range(samples):
        copy_table(table, here, world, me)
        table.rng[world] = rng_next(table.rng, here)
        determinize(table, world, me, cards, ncards)
        start = rng_next(table.rng, here)
        for c in range(nc):
            copy_table(table, world, child, me)
            table.rng[child] = start
            nertz, lake = table.nertz_len[child, me], table.lake_played[child, me]
            _move(table, child, me, candidates[c])
            g = value[0] * (nertz - table.nertz_len[child, me]) + value[1] * (table.lake_played[child, me] - lake)
            values[c] += g + discount * _rollout(
                table, child, me, view, params, columns, reverse_run, horizon, waste_policy, discount, value, rate, prio,
                trace,
            )
    for c in range(nc):
        values[c] /= samples
