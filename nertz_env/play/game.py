"""One table of ``nertz-play`` (:class:`PlayGame`): a person's seat among agents, stepped one tick at a time,
without any web code. Guide: docs/guides/replays.md.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from nertz_env._text import short
from nertz_env.actions import (
    CALL,
    FLIP,
    JOKER_LAKE,
    KIND_NAMES,
    LAKE,
    ROTATE,
    RUN,
    SRC_NERTZ,
    SRC_WASTE,
    SRC_WORK0,
    WAIT,
)
from nertz_env.agents.base import Agent
from nertz_env.infos import round_end_name
from nertz_env.replay import ReplayWriter
from nertz_env.snapshot import round_so_far


class MoveError(ValueError):
    """A move or message the server refuses; the message is shown to the person as it is."""


@dataclass
class SeatMove:
    """What one seat did in one tick."""

    seat: int
    submitted: int  # the action index the seat sent (-1 for none)
    applied: int  # the action the engine applied (0, a wait, when flagged)
    name: str
    words: str
    illegal: bool
    lost_race: bool
    reward: float


@dataclass
class TickResult:
    """One tick as the server reports it."""

    tick: int
    moves: list[SeatMove]
    round_end: str | None = None
    scores: list[int] | None = None  # the round's totals when a round ended
    done: bool = False
    events: list[str] = field(default_factory=list)


class PlayGame:
    """A person at ``seat`` and ``bots`` at the other seats (in seat order, shown and recorded as
    ``bot_names``), one episode of a fresh ``env`` dealt from ``seed`` (which seeds the bots too), each game's
    replay in ``replay_dir`` (None: none). A replay that cannot be written never stops the game:
    :attr:`record_error` says why, :attr:`record_notes` a message for the server (docs/guides/replays.md)."""

    def __init__(
        self,
        env: Any,
        bots: Sequence[Agent],
        bot_names: Sequence[str],
        seat: int = 0,
        seed: int = 0,
        replay_dir: str | None = None,
    ) -> None:
        n = env.config.num_players
        if not 0 <= seat < n:
            raise ValueError(f"seat must be from 0 to {n - 1}, got {seat}")
        self.env = env
        self.config = env.config
        self.table = env.actions
        self.seat = seat
        self.seed = int(seed)
        others = [s for s in range(n) if s != seat]
        self.bots: dict[int, Agent] = dict(zip(others, bots, strict=True))
        names = dict(zip(others, bot_names, strict=True))
        #: per seat: the agent spec (``"human"`` for the person), as the replay's header keeps it
        self.specs = [str(names.get(s, "human")) for s in range(n)]
        #: per seat: the name on the table: "you" for the person, a spec at several seats with its seat number
        self.names = ["you" if s == seat else f"{spec} {s}" if self.specs.count(spec) > 1 else spec
                      for s, spec in enumerate(self.specs)]
        self.agent_ids = list(env.possible_agents)
        self.replay_dir = replay_dir
        self.writer: ReplayWriter | None = None
        self.replay_file: str | None = None
        #: why this game is not (or no longer) recorded, or None
        self.record_error: str | None = None
        #: recording problems not told yet (the server takes them after each tick and each new game)
        self.record_notes: list[str] = []
        self.reset()  # the deal and the state of the game: observations, the last tick, the history, scores

    # ------------------------------------------------------------------ lifecycle
    def reset(self, seed: int | None = None) -> None:
        """Deal (again) from ``seed`` (default: the game's seed) and start a new replay."""
        self.close()
        if seed is not None:
            self.seed = int(seed)
        self.obs: dict[str, dict[str, np.ndarray]] = self.env.reset(seed=self.seed)[0]
        bot_seeds = np.random.SeedSequence(self.seed).generate_state(self.config.num_players, np.uint32)
        for s, bot in self.bots.items():
            bot.reset(self.config, s, int(bot_seeds[s]))
        self.last: TickResult | None = None
        self.history: list[TickResult] = []
        self.done = not self.env.agents
        self.round_scores: list[list[int]] = []
        self._refresh()
        self.replay_file = self.record_error = None
        if self.replay_dir is not None:
            path = replay_path(self.replay_dir, self.seed)
            meta = {"tool": "nertz-play", "seed": self.seed, "human_seat": self.seat}
            try:
                self.writer = ReplayWriter(path, self.config.to_dict(), self.env.snapshot(), self.specs, meta)
                self.replay_file = path
            except OSError as e:
                self._record_failed(f"cannot create the replay of this game: {_os_error(e)}; the game is not "
                                    "recorded (a new game tries again)")

    def close(self) -> None:
        """Finish the replay (if any); safe to call twice. A failure to write is kept in :attr:`record_error`."""
        writer, self.writer = self.writer, None
        if writer is not None:
            try:
                writer.close()
            except OSError as e:
                self._write_failed(e)

    def _write_failed(self, e: OSError) -> None:
        self._record_failed(
            f"the replay {self.replay_file} could not be written: {_os_error(e)}; the game goes on unrecorded (the "
            "file keeps every tick before this one; a new game records again)"
        )

    def _record_failed(self, why: str) -> None:
        self.writer = None  # a writer that fails cuts its file back to a valid, cut-off replay
        self.record_error = why
        self.record_notes.append(why)

    # ------------------------------------------------------------------ the person's moves
    def _refresh(self) -> None:
        me = self.agent_ids[self.seat]
        self._mask = self.obs[me]["action_mask"].copy() if me in self.obs else np.zeros(self.table.n, np.int8)
        stock = len(self.env.snapshot()["players"][self.seat]["stock"])
        self._moves = [self._describe(int(a), stock) for a in np.flatnonzero(self._mask) if a != WAIT]

    def _describe(self, a: int, stock: int) -> dict[str, Any]:
        row = self.table[a]
        words = self.table.describe(a)
        if row.kind == FLIP:  # say which of the two a flip does now
            words = f"flip {self.config.draw} from the stock" if stock else "turn the waste over as the stock"
        zone = {SRC_NERTZ: "nertz", SRC_WASTE: "waste"}.get(row.src, "work")
        # the cards that move: a run's length, else one
        src: dict[str, Any] | None = {"zone": zone, "pile": row.src - SRC_WORK0 if zone == "work" else None,
                                      "count": row.length if row.kind == RUN else 1}
        if row.kind in (FLIP, ROTATE):
            src = {"zone": "stock", "pile": None, "count": 1}
        elif row.kind == CALL:
            src = None
        dst: dict[str, Any] | None = {"zone": "lake", "pile": None} if row.kind in (LAKE, JOKER_LAKE) else None
        if row.dst >= 0:  # a work pile (to_work, tuck, run)
            dst = {"zone": "work", "pile": row.dst}
        return {
            "action": a,
            "kind": KIND_NAMES[row.kind],
            "name": self.table.name(a),
            "words": words,
            "src": src,
            "dst": dst,
        }

    def legal_moves(self) -> list[dict[str, Any]]:
        """The person's legal actions now (waiting aside, always legal while the game runs): index, kind,
        name, words, ``src`` (``{"zone": "nertz"|"waste"|"work"|"stock", "pile": j or None, "count": cards
        moved}``; None for a call) and ``dst`` (``{"zone": "lake"|"work", "pile": j or None}`` or None)."""
        return list(self._moves)

    def check_action(self, action: Any) -> int:
        """``action`` as a legal action index of the person's seat now, or :class:`MoveError` saying why not."""
        n = self.table.n
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise MoveError(f"an action is an integer index from 0 to {n - 1}, got {short(action)}")
        a = int(action)
        if not 0 <= a < n:
            raise MoveError(f"action {short(a)} is out of range: this table's actions are 0 to {n - 1}")
        if self.done:
            raise MoveError("the game is over; start a new game to play again")
        if not self._mask[a]:
            raise MoveError(f"not legal now: {self.table.describe(a)} ({self.table.name(a)})")
        return a

    # ------------------------------------------------------------------ a tick
    def tick(self, action: int | None) -> TickResult:
        """One tick: the bots act, the person plays ``action`` (None: wait), the engine steps, the replay grows.
        The engine checks ``action`` again (an illegal one is a wait, reported)."""
        if self.done:
            raise MoveError("the game is over; start a new game to play again")
        ids = self.agent_ids
        mine = WAIT if action is None else int(action)
        submitted = [mine if s == self.seat else int(self.bots[s].act(o["observation"], o["action_mask"]))
                     for s, o in enumerate(self.obs[i] for i in ids)]
        self.obs, rewards, _terms, _truncs, infos = self.env.step(dict(zip(ids, submitted, strict=True)))
        n = self.table.n
        moves = [
            SeatMove(
                seat=s,
                submitted=sub,
                applied=int(infos[i]["action"]),
                name=self.table.name(sub) if 0 <= sub < n else str(sub),
                words=self.table.describe(sub) if 0 <= sub < n else f"action {sub} (out of range)",
                illegal=bool(infos[i]["illegal"]),
                lost_race=bool(infos[i]["lost_race"]),
                reward=float(rewards[i]),
            )
            for s, (i, sub) in enumerate(zip(ids, submitted, strict=True))
        ]
        result = TickResult(tick=self.env.tick, moves=moves)
        if end := round_end_name(infos[ids[0]]):
            result.round_end = end
            result.scores = [int(infos[i]["score"]) for i in ids]
            self.round_scores.append(result.scores)
        self.done = result.done = not self.env.agents
        me = moves[self.seat]
        if me.illegal:
            result.events.append(f"your move was not legal when the tick came: {me.words} (you waited)")
        if me.lost_race:
            result.events.append(f"lost race: another player reached the lake first ({me.words})")
        result.events += [f"{self.names[m.seat]} lost a race to the lake" for m in moves
                          if m.lost_race and m is not me]
        if result.round_end is not None:
            result.events.append(f"round over ({result.round_end}): scores {result.scores}")
        self.last = result
        self.history.append(result)
        self._refresh()
        if self.writer is not None:
            try:
                self.writer.step(self.env, submitted, rewards, infos)  # the closing line too when the game ends
            except OSError as e:
                self._write_failed(e)
        return result

    # ------------------------------------------------------------------ what the page shows
    def public_view(self) -> dict[str, Any]:
        """Everything any player at the table can see, plus the person's legal moves (the page's side panel)."""
        snap = self.env.snapshot()
        so_far = round_so_far(snap)
        seats = [
            {
                "seat": s,
                "name": self.names[s],
                "you": s == self.seat,
                "nertz_left": len(pl["nertz"]),
                "nertz_top": pl["nertz"][-1] if pl["nertz"] else None,
                "stock": len(pl["stock"]),
                "waste": len(pl["waste"]),
                "waste_top": pl["waste"][-1] if pl["waste"] else None,
                "work": pl["work"],
                "lake_cards": sum(1 for f in snap["lake"] for _, owner in f if owner == s),
                "round_score": so_far[s],
                "match_score": pl["match_score"],
                "last": asdict(self.last.moves[s]) if self.last is not None else None,
            }
            for s, pl in enumerate(snap["players"])
        ]
        return {
            "tick": snap["tick"],
            "round": snap["round"],
            "done": self.done,
            "seats": seats,
            "legal": self.legal_moves() if not self.done else [],
            "round_scores": self.round_scores,
        }


def _os_error(e: OSError) -> str:
    """An ``OSError`` in a few words: ``No space left on device (/path)``."""
    what = e.strerror or str(e) or type(e).__name__
    return f"{what} ({e.filename})" if e.filename else what


def replay_path(directory: str, seed: int) -> str:
    """A new file name for a game: ``nertz-play-<UTC time>-seed<seed>.jsonl`` in ``directory``."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = os.path.join(directory, f"nertz-play-{stamp}-seed{seed}")
    path, k = base + ".jsonl", 1
    while os.path.exists(path):
        k += 1
        path = f"{base}-{k}.jsonl"
    return path
