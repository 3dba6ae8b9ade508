"""Engine state: typed, fixed-shape numpy arrays, batch-first (``T`` tables).

One ``TableState`` (a NamedTuple, so numba passes it as one argument) holds every table of a batch. Shapes use
``T`` tables, ``P`` players, ``W`` work piles, ``D`` = deck size (52 + jokers), ``F`` = P * (4 + jokers)
foundation slots, ``A`` actions and ``O`` observation values. Piles list cards bottom to top: the last used
slot is the top (face-up or playable) card. Card codes are those of :mod:`nertz_env.cards`. A single table
(``parallel_env``) is a batch with ``T == 1``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from nertz_env._text import short
from nertz_env.actions import action_table
from nertz_env.config import NertzConfig, is_int
from nertz_env.observation import obs_layout

MAX_PILE = 13  # a work pile is an ordered run A..K, a Nertz pile holds at most 13 cards

# Slots of the ``cfg`` parameter array.
(
    C_P,
    C_W,
    C_NS,
    C_DRAW,
    C_SHUFFLE,
    C_MAXREDEALS,
    C_NERTZFIRST,
    C_MANUAL,
    C_BONUS,
    C_FALSEPEN,
    C_PENALTY,
    C_STALL,
    C_MAXTICKS,
    C_TARGET,
    C_ROUNDS,
    C_MAXROUNDS,
    C_TURN,
    C_JOKERS,
    C_TUCK,
    C_ROTATE,
    C_D,
    C_F,
    C_A,
    C_O,
    C_SIZE,
) = range(25)

# Values of ``memory``: the seat never saw the card; saw it, but a shuffled redeal hid its place; knows it.
MEM_UNSEEN, MEM_SEEN, MEM_KNOWN = 0, 1, 2

# Values of ``round_end`` (why the last round ended) and ``done`` (why the episode ended).
END_NONE, END_NERTZ, END_STALL, END_MAX_TICKS = 0, 1, 2, 3
DONE_NO, DONE_TERMINATED, DONE_TRUNCATED = 0, 1, 2


class TableState(NamedTuple):
    """Every array of a batch of tables. The comment gives each field's shape and meaning."""

    # --- parameters (identical for every table of the batch)
    cfg: np.ndarray  # int32 [C_SIZE]        the config as integers (slots C_*)
    team: np.ndarray  # int8  [P]            team index of every seat
    act: np.ndarray  # int32 [9]             action table layout (slots actions.L_*)
    obs_off: np.ndarray  # int32 [17]        observation slice offsets (slots observation.O_*)
    # --- each player's layout
    nertz: np.ndarray  # int8 [T, P, 13]     Nertz pile, bottom to top
    nertz_len: np.ndarray  # int8 [T, P]     cards in the Nertz pile
    work: np.ndarray  # int8 [T, P, W, 13]   work piles, bottom (highest rank) to top (exposed card)
    work_len: np.ndarray  # int8 [T, P, W]   cards in each work pile
    stock: np.ndarray  # int8 [T, P, D]      face-down stock; the last card is the next one flipped
    stock_len: np.ndarray  # int8 [T, P]     cards in the stock
    waste: np.ndarray  # int8 [T, P, D]      face-up waste; the last card is the playable top
    waste_len: np.ndarray  # int8 [T, P]     cards in the waste
    redeals: np.ndarray  # int16 [T, P]      times the waste became the stock this round
    last_moves: np.ndarray  # int16 [T, P, K] the seat's last K moves this round, most recent first (-1: none;
    #                                          K = config.last_moves, 0 when the observation leaves them out)
    memory: np.ndarray  # int8 [T, P, 2, M]  what the seat knows of each card of its stock (0) and waste (1)
    #                                          (MEM_*; M = D with the ``memory`` option, 0 without)
    # --- the shared lake
    lake: np.ndarray  # int8 [T, F, 13]      foundations in creation order, ace first (lake cell codes)
    lake_owner: np.ndarray  # int8 [T, F, 13] seat whose deck each lake card came from
    lake_len: np.ndarray  # int8 [T, F]      cards on each foundation (its top card's rank + 1)
    lake_n: np.ndarray  # int16 [T]          foundations started so far
    lake_tops: np.ndarray  # int16 [T, 52]   derived: foundations whose top is each real card
    # --- round and match bookkeeping
    lake_played: np.ndarray  # int16 [T, P]  own cards in the lake this round
    false_calls: np.ndarray  # int16 [T, P]  false Nertz calls this round (manual mode)
    match_score: np.ndarray  # int32 [T, P]  individual round scores summed over the match
    tick: np.ndarray  # int32 [T]            ticks played in the current round
    since_progress: np.ndarray  # int32 [T]  ticks since the last lake or Nertz-pile play
    stalls: np.ndarray  # int8 [T]           stall rule applications since the last progress
    round_idx: np.ndarray  # int16 [T]       current round of the match, from 0
    done: np.ndarray  # int8 [T]             DONE_*: whether and how the episode has ended
    rng: np.ndarray  # uint64 [T]            splitmix64 state of each table's own generator
    # --- outputs of the last tick
    rewards: np.ndarray  # float32 [T, P]    reward of each seat (team-summed when teams are on)
    illegal: np.ndarray  # int8 [T, P]       1 if the seat's action was not legal (applied as a wait)
    lost_race: np.ndarray  # int8 [T, P]     1 if a legal lake play lost its slot to an earlier action
    applied: np.ndarray  # int16 [T, P]      the action applied for each seat (0 = wait when illegal)
    round_end: np.ndarray  # int8 [T]        END_*: why a round ended in the last tick (0: it did not)
    score_lake: np.ndarray  # int16 [T, P]   last finished round: own cards in the lake
    score_nertz: np.ndarray  # int16 [T, P]  last finished round: cards left in the Nertz pile
    score_bonus: np.ndarray  # int16 [T, P]  last finished round: call bonus
    score_false: np.ndarray  # int16 [T, P]  last finished round: false calls
    score_round: np.ndarray  # int32 [T, P]  last finished round: the score (the one place it is computed)
    order: np.ndarray  # int8 [T, P]         the seat order drawn for the last tick
    scratch: np.ndarray  # int64 [T, 2, P]   work space for team sums (compiled rules never allocate)
    # --- what each seat sees
    obs: np.ndarray  # float32 [T, P, O]     observation vectors (see nertz_env.observation)
    mask: np.ndarray  # int8 [T, P, A]       legal-action masks


@functools.cache
def config_array(config: NertzConfig) -> np.ndarray:
    """The config as the ``cfg`` integer array, built once per config and shared (read-only: copy it to
    change it; :func:`allocate` gives each state its own copy)."""
    c = np.zeros(C_SIZE, dtype=np.int32)
    c[C_P] = config.num_players
    c[C_W] = config.work_piles
    c[C_NS] = config.nertz_size
    c[C_DRAW] = config.draw
    c[C_SHUFFLE] = config.recycle == "shuffle"
    c[C_MAXREDEALS] = -1 if config.max_redeals is None else config.max_redeals
    c[C_NERTZFIRST] = config.empty_pile_from_nertz_first
    c[C_MANUAL] = config.call_mode == "manual"
    c[C_BONUS] = config.call_bonus
    c[C_FALSEPEN] = config.false_call_penalty
    c[C_PENALTY] = config.nertz_penalty
    c[C_STALL] = config.stall_ticks_resolved
    c[C_MAXTICKS] = config.max_ticks_resolved
    c[C_TARGET] = -1 if config.target_score is None else config.target_score
    c[C_ROUNDS] = -1 if config.rounds is None else config.rounds
    c[C_MAXROUNDS] = config.max_rounds_resolved
    c[C_TURN] = config.turn_based
    c[C_JOKERS] = config.jokers
    c[C_TUCK] = config.allow_tuck
    c[C_ROTATE] = config.allow_rotate
    c[C_D] = config.deck_size
    c[C_F] = config.num_players * (4 + config.jokers)
    c[C_A] = action_table(config).n
    c[C_O] = obs_layout(config).size
    c.flags.writeable = False
    return c


#: the fields that hold the config, one array shared by every table (the rest have a table axis first)
PARAMETERS = ("cfg", "team", "act", "obs_off")


def allocate(config: NertzConfig, num_tables: int) -> TableState:
    """Zeroed state for ``num_tables`` tables of ``config`` (deal them with ``reset_tables``)."""
    if not is_int(num_tables) or num_tables < 1:
        raise ValueError(f"num_tables must be a positive integer, got {short(num_tables)}")
    t = int(num_tables)
    p, w, d = config.num_players, config.work_piles, config.deck_size
    f = p * (4 + config.jokers)
    table, layout = action_table(config), obs_layout(config)
    a, o = table.n, layout.size
    i8, i16, i32 = np.int8, np.int16, np.int32
    # the per-config parameters are copies: the compiled rules take writable arrays (a read-only array is
    # another type to numba, compiled anew)
    return TableState(
        cfg=config_array(config).copy(),
        team=np.array(config.team_of, dtype=i8),
        act=table.layout.copy(),
        obs_off=layout.offsets.copy(),
        nertz=np.full((t, p, MAX_PILE), -1, i8),
        nertz_len=np.zeros((t, p), i8),
        work=np.full((t, p, w, MAX_PILE), -1, i8),
        work_len=np.zeros((t, p, w), i8),
        stock=np.full((t, p, d), -1, i8),
        stock_len=np.zeros((t, p), i8),
        waste=np.full((t, p, d), -1, i8),
        waste_len=np.zeros((t, p), i8),
        redeals=np.zeros((t, p), i16),
        last_moves=np.full((t, p, config.last_moves), -1, i16),
        memory=np.zeros((t, p, 2, d * config.memory), i8),
        lake=np.full((t, f, MAX_PILE), -1, i8),
        lake_owner=np.full((t, f, MAX_PILE), -1, i8),
        lake_len=np.zeros((t, f), i8),
        lake_n=np.zeros(t, i16),
        lake_tops=np.zeros((t, 52), i16),
        lake_played=np.zeros((t, p), i16),
        false_calls=np.zeros((t, p), i16),
        match_score=np.zeros((t, p), i32),
        tick=np.zeros(t, i32),
        since_progress=np.zeros(t, i32),
        stalls=np.zeros(t, i8),
        round_idx=np.zeros(t, i16),
        done=np.zeros(t, i8),
        rng=np.zeros(t, np.uint64),
        rewards=np.zeros((t, p), np.float32),
        illegal=np.zeros((t, p), i8),
        lost_race=np.zeros((t, p), i8),
        applied=np.zeros((t, p), i16),
        round_end=np.zeros(t, i8),
        score_lake=np.zeros((t, p), i16),
        score_nertz=np.zeros((t, p), i16),
        score_bonus=np.zeros((t, p), i16),
        score_false=np.zeros((t, p), i16),
        score_round=np.zeros((t, p), i32),
        order=np.zeros((t, p), i8),
        scratch=np.zeros((t, 2, p), np.int64),
        obs=np.zeros((t, p, o), np.float32),
        mask=np.zeros((t, p, a), i8),
    )
