"""Replays: ``nertz-replay/1``, a record of one game written while it is played and replayed through the engine.

Record a game by wrapping its ``parallel_env``, check it with :func:`verify_replay`. The format, field by
field, and what a cut-off file means: docs/guides/replays.md ("Record games").
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from nertz_env._text import cut, short
from nertz_env.config import make_config
from nertz_env.environment import NertzParallelEnv, _as_action
from nertz_env.infos import ROUND_END_NAMES, round_end_name
from nertz_env.snapshot import SnapshotError

FORMAT = "nertz-replay/1"

__all__ = [
    "FORMAT",
    "Frame",
    "RecordReplay",
    "Replay",
    "ReplayError",
    "ReplayIncomplete",
    "ReplayMismatch",
    "ReplayWriter",
    "TickLines",
    "env_for",
    "load_replay",
    "replay_frames",
    "round_end_table",
    "snapshot_hash",
    "verify_replay",
]


class ReplayError(ValueError):
    """A file that is not a readable ``nertz-replay/1`` record; the message says where."""


class ReplayIncomplete(ReplayError):
    """A replay file without its closing line (cut off); the message names the last complete tick."""


class ReplayMismatch(AssertionError):
    """Replaying a file through the engine gave a different game; the message names the tick and the field."""


def snapshot_hash(snap: dict[str, Any]) -> str:
    """8 hex digits of the SHA-1 of a snapshot's canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(snap, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def _tick_record(env: NertzParallelEnv, snap: dict[str, Any], before: dict[str, Any], asked: Sequence[int],
                rewards: dict[str, float], infos: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The tick line of ``env``'s last step (the table ``snap`` after it, ``before`` it, what each seat asked
    for, the step's rewards and infos): the writer writes it, a replay compares it with the file's."""
    names = env.possible_agents
    table = env.actions
    rec: dict[str, Any] = {"t": int(env.tick), "a": list(asked),
                           "n": [table.name(a) if 0 <= a < table.n else "?" for a in asked]}
    for key, flag in (("il", "illegal"), ("lr", "lost_race")):
        if seats := [p for p, a in enumerate(names) if infos[a][flag]]:
            rec[key] = seats
    r = [float(rewards[a]) for a in names]
    if any(r):
        rec["r"] = r
    if end := round_end_name(infos[names[0]]):
        rec["end"] = end
        rec["score"] = [int(infos[a]["score"]) for a in names]
        rec["match"] = [int(infos[a]["match_score"]) for a in names]
        if snap["round"] != before["round"]:
            # a match that goes on: the step dealt the next round, so keep the table as this one ended
            rec["end_table"] = round_end_table(before, asked)
    rec["h"] = snapshot_hash(snap)
    return rec


class ReplayWriter:
    """Writes one game: the header at once, then :meth:`step` per step of the env; the closing line comes with
    the step that ends the game, or from :meth:`close`.

    A plain file is written unbuffered, line by line; a ``.gz`` file is complete once it is closed. A failed
    write raises after cutting a plain file back to its last complete line."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        config: dict[str, Any],
        snapshot: dict[str, Any],
        agents: Sequence[str],
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self._gz = self.path.endswith(".gz")
        # a plain file unbuffered (each line is on disk when step returns); a gzip file through a buffer
        self._raw: Any = open(self.path, "wb", buffering=-1 if self._gz else 0)  # noqa: SIM115
        self._file: Any = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=9) if self._gz else self._raw
        self._good = 0  # bytes of complete lines on disk (a plain file)
        self.ticks = 0
        self.closed = False
        self._last = snapshot  # the table before the next tick (for the round-end table of a match)
        try:
            self._write({"format": FORMAT, "agents": [str(a) for a in agents], "config": config,
                         "snapshot": snapshot, "meta": dict(meta or {})})
        except OSError:
            with contextlib.suppress(OSError):
                os.remove(self.path)
            raise

    def _write(self, obj: dict[str, Any]) -> None:
        if self.closed:
            raise ValueError(f"{self.path}: the replay writer is closed")
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        try:
            view = memoryview(data)
            while view:  # an unbuffered write may write part of it (gzip's takes it all)
                view = view[self._file.write(view) :]
            self._good += len(data)
        except OSError:
            self.abandon()
            raise

    def abandon(self) -> None:
        """Close without writing more: a plain file is cut back to its last complete line."""
        if self.closed:
            return
        self.closed = True
        if not self._gz:
            with contextlib.suppress(OSError):
                os.ftruncate(self._raw.fileno(), self._good)
        else:
            self._file.fileobj = None  # the gzip stream stays cut: its trailer is never written
        with contextlib.suppress(OSError):
            self._raw.close()

    def step(self, env: NertzParallelEnv, asked: Sequence[int], rewards: dict[str, float],
             infos: dict[str, dict[str, Any]]) -> None:
        """One step of ``env``, from what each seat asked for (-1: None) and the step's rewards and infos; the
        closing line too when the step ended the game."""
        snap = env.snapshot()
        self._write(_tick_record(env, snap, self._last, asked, rewards, infos))
        self._last = snap
        self.ticks += 1
        if not env.agents:
            self.finish(snap)

    def finish(self, final_snapshot: dict[str, Any]) -> None:
        """Write the closing line of a game that ended and close the file."""
        self._end({"final": final_snapshot, "ticks": self.ticks})

    def close(self) -> None:
        """Close a game stopped before its end (the ``stopped`` line); after the game's end it does nothing."""
        if not self.closed:
            self._end({"stopped": "before the game's end", "ticks": self.ticks})

    def _end(self, closing_line: dict[str, Any]) -> None:
        self._write(closing_line)
        try:
            self._file.close()  # a gzip file writes its last block and trailer here
            if self._file is not self._raw:
                self._raw.close()
        except OSError:
            self.abandon()
            raise
        self.closed = True


class RecordReplay:
    """A ``parallel_env`` that records every episode it plays as a ``nertz-replay/1`` file at ``path``; a
    path with ``{episode}`` gives each episode its own file (docs/guides/replays.md). ``agents``: a name per
    seat for the header (default the env's agent names); ``meta``: anything JSON-ready for it. Every other
    attribute is the wrapped env's."""

    def __init__(
        self,
        env: NertzParallelEnv,
        path: str | os.PathLike[str],
        agents: Sequence[str] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.env = env
        self.path_pattern = os.fspath(path)
        n = env.config.num_players
        names = list(agents) if agents is not None else list(env.possible_agents)
        if len(names) != n:
            raise ValueError(f"agents must name all {n} seats, got {len(names)}")
        self.agent_names = names
        self.meta = dict(meta or {})
        self.episode = 0
        self.writer: ReplayWriter | None = None
        self.paths: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name == "env" or name.startswith("__"):  # not set yet (unpickling, copying): no recursion
            raise AttributeError(name)
        return getattr(self.env, name)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if self.writer is not None:
            self.writer.close()
        numbered = "{episode" in self.path_pattern
        if not numbered and self.episode > 0:
            raise ValueError(
                f"RecordReplay path {self.path_pattern!r} has no {{episode}} field: one file records one episode"
            )
        path = self.path_pattern.format(episode=self.episode) if numbered else self.path_pattern
        out = self.env.reset(seed=seed, options=options)
        meta = dict(self.meta)
        if seed is not None:
            meta.setdefault("seed", int(seed))
        self.writer = ReplayWriter(path, self.env.config.to_dict(), self.env.snapshot(), self.agent_names, meta)
        self.paths.append(path)
        self.episode += 1
        if not self.env.agents:  # restored a finished table: nothing will be played
            self.writer.finish(self.env.snapshot())
            self.writer = None
        return out

    def step(self, actions: dict[str, Any]) -> Any:
        if self.writer is None:
            return self.env.step(actions)  # the env says what is wrong (no live agents, no reset)
        env = self.env
        live = set(env.agents)
        # a value that is no integer raises here, before anything is written; an index out of range is an
        # illegal action (a wait), recorded as asked
        obs, rewards, terms, truncs, infos = env.step(actions)
        asked = [_as_action(a, actions.get(a, 0)) if a in live else 0 for a in env.possible_agents]
        self.writer.step(env, [-1 if x is None else x for x in asked], rewards, infos)
        if self.writer.closed:
            self.writer = None
        return obs, rewards, terms, truncs, infos

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.env.close()


class TickLines(Sequence[dict[str, Any]]):
    """A replay's tick records, kept as the text of their lines (:attr:`lines`) and parsed each time one is read:
    a parsed record takes several times its text (``bench/bench_replay_memory.py``). ``list(rep.ticks)`` gives a
    list of records."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def __getitem__(self, i: Any) -> Any:  # a record, or a list of them for a slice
        return [json.loads(x) for x in self.lines[i]] if isinstance(i, slice) else json.loads(self.lines[i])

    def __len__(self) -> int:
        return len(self.lines)


@dataclass
class Replay:
    """A loaded ``nertz-replay/1`` file: the header's fields, the tick records and the closing snapshot
    (``None`` when ``stopped``, or when the file was cut off: ``cut_off`` says how)."""

    agents: list[str]
    config: dict[str, Any]
    snapshot: dict[str, Any]
    meta: dict[str, Any]
    ticks: TickLines = field(default_factory=TickLines)
    final: dict[str, Any] | None = None
    path: str = ""
    stopped: bool = False
    cut_off: str | None = None

    @property
    def last_tick(self) -> int:
        """The tick of the last complete tick line (0: none)."""
        return int(self.ticks[-1]["t"]) if self.ticks else 0

    def incomplete(self) -> str | None:
        """``None`` for a file with its closing line, else where it was cut off."""
        if self.final is not None or self.stopped:
            return None
        how = f" ({self.cut_off})" if self.cut_off else ""
        return (
            f"{self.path}: cut off after tick {short(self.last_tick)}, the last complete tick: no closing line{how}; "
            "a game still being written or a writer that crashed (nertz-replay --partial draws it anyway)"
        )


#: the longest line a replay may hold
MAX_LINE_BYTES = 1 << 20
#: the most a replay may hold, decompressed (the largest game the default ``max_ticks`` allows is smaller)
MAX_REPLAY_BYTES = 128 << 20


def _lines(path: str, stream: Any, max_bytes: int) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of each non-blank line of ``stream``, within the bounds above; only a last line cut
    while being written lacks its newline. A gzip stream that ends early raises ``EOFError`` after its last whole
    line."""
    k = total = 0
    while line := stream.readline(MAX_LINE_BYTES + 1):
        k += 1
        total += len(line)
        blank = line.isspace()
        if blank:  # the blank lines that follow are skipped at once: a flood of them takes no time
            ahead = stream.peek(1 << 16)
            run = len(ahead) - len(ahead.lstrip())
            k += ahead.count(b"\n", 0, run)
            total += len(stream.read(run))
        elif len(line.rstrip(b"\n")) > MAX_LINE_BYTES:
            raise ReplayError(f"{path}:{k}: a line longer than {MAX_LINE_BYTES >> 20} MiB: not a replay line")
        if total > max_bytes:
            raise ReplayError(
                f"{path}: more than {max_bytes >> 20} MiB (decompressed) by line {k}: larger than any game "
                "the rules allow without raising max_ticks (about 60 MB at most)"
            )
        if not blank:
            yield k, line


def _seats(n: int, *kinds: type) -> Callable[[Any], bool]:
    """A list of one value per seat, each of one of ``kinds`` (JSON's types exactly: a bool is no int)."""
    return lambda v: type(v) is list and len(v) == n and all(type(x) in kinds for x in v)


def _schema(n: int) -> dict[str, tuple[Callable[[Any], bool], str]]:
    """Every field of a replay's lines at a table of ``n`` seats: whether a value is good, and what it must be."""
    def seat_set(v: Any) -> bool:
        return isinstance(v, list) and all(type(x) is int and 0 <= x < n for x in v) and len(set(v)) == len(v)

    return {
        # the header (``config`` is checked by the config itself)
        "agents": (_seats(n, str), f"{n} names (one per seat)"),
        "snapshot": (lambda v: isinstance(v, dict) and bool(v), "the opening table (a nertz-snapshot/1 object)"),
        "meta": (lambda v: isinstance(v, dict), "a JSON object"),
        # a tick line
        "t": (lambda v: type(v) is int and v >= 0, "the tick (an integer >= 0)"),
        "a": (_seats(n, int), f"{n} action indices (one per seat)"),
        "n": (_seats(n, str), f"{n} action names (one per seat)"),
        "il": (seat_set, f"distinct seats from 0 to {n - 1}"),
        "lr": (seat_set, f"distinct seats from 0 to {n - 1}"),
        "r": (_seats(n, int, float), f"{n} rewards (one per seat)"),
        "end": (lambda v: v in ROUND_END_NAMES[1:], f"one of {', '.join(ROUND_END_NAMES[1:])}"),
        "score": (_seats(n, int), f"{n} integers (one per seat)"),
        "match": (_seats(n, int), f"{n} integers (one per seat)"),
        "end_table": (lambda v: isinstance(v, dict), "a table (a nertz-snapshot/1 object)"),
        "h": (lambda v: type(v) is str and re.fullmatch("[0-9a-f]{8}", v) is not None,
              "the table's hash, 8 hex digits"),
        # the closing line
        "final": (lambda v: isinstance(v, dict), "the closing table"),
        "stopped": (lambda v: isinstance(v, str), "text (why the game stopped)"),
    }


def _check(obj: dict[str, Any], schema: dict[str, tuple[Callable[[Any], bool], str]], required: Sequence[str],
           where: str) -> None:
    """The fields of one line against the schema (unknown fields are left alone)."""
    missing = [key for key in required if key not in obj]
    bad = missing or [key for key, value in obj.items() if key in schema and not schema[key][0](value)]
    if bad:
        raise ReplayError(f"{where}: {bad[0]!r} must be {schema[bad[0]][1]}, got {_got(obj, bad[0])}")


def _got(obj: dict[str, Any], key: str) -> str:
    return short(obj[key]) if key in obj else "nothing"


#: the fields of a tick line a replay compares, by the words a mismatch names them with (end_table: below)
_COMPARED = {"t": "tick", "n": "action names", "il": "illegal seats", "lr": "lost-race seats", "r": "rewards",
             "end": "round end", "score": "round scores", "match": "match scores", "h": "table hash"}


def load_replay(path: str | os.PathLike[str], max_bytes: int = MAX_REPLAY_BYTES) -> Replay:
    """Read a ``nertz-replay/1`` file (plain or gzip). Raises :class:`ReplayError` naming the line and the field.

    A line over :data:`MAX_LINE_BYTES`, a file over ``max_bytes`` (decompressed) or more ticks than the rules
    allow is refused when reached, so a hostile file fails within bounded memory and time."""
    path = os.fspath(path)
    rep: Replay | None = None
    schema: dict[str, tuple[Callable[[Any], bool], str]] = {}
    max_ticks = 0
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block
            raise ReplayError(f"{path}: not a regular file (a replay is a file, plain or gzip)")
        with open(path, "rb") as f, (gzip.open(f) if f.peek(2)[:2] == b"\x1f\x8b" else f) as stream:
            for k, line in _lines(path, stream, max_bytes):
                where = f"{path}:{k}"
                try:
                    obj = json.loads(line)
                except (ValueError, RecursionError) as e:  # JSON, UTF-8, a number too long, nesting too deep
                    if rep is not None and not line.endswith(b"\n"):  # the last line, cut while being written
                        rep.cut_off = f"line {k} ends in the middle"
                        continue  # the last line: a gzip stream that ends early says so next
                    why = e.msg if isinstance(e, json.JSONDecodeError) else "nested too deeply" if isinstance(
                        e, RecursionError) else str(e)
                    raise ReplayError(cut(f"{where}: not JSON ({why})")) from None
                if not isinstance(obj, dict):
                    raise ReplayError(f"{where}: each line is a JSON object")
                if b"\\u" in line:  # a lone UTF-16 surrogate is no text: no UTF-8 output (no page) can hold it
                    try:
                        json.dumps(obj, ensure_ascii=False).encode("utf-8")
                    except UnicodeEncodeError:
                        raise ReplayError(f"{where}: a \\ud800-\\udfff escape that is no pair: not text") from None
                if rep is None:
                    if obj.get("format") != FORMAT:
                        raise ReplayError(f"{where}: not a {FORMAT} file (format {short(obj.get('format'))})")
                    if not isinstance(obj.get("config"), dict):
                        raise ReplayError(f"{where}: 'config' must be a JSON object of rules options, got {_got(obj, 'config')}")
                    try:
                        cfg = make_config(**obj["config"])
                    except (TypeError, ValueError) as e:
                        raise ReplayError(cut(f"{where}: config: {e}")) from None
                    schema = _schema(cfg.num_players)
                    _check(obj, schema, ("agents", "snapshot"), where)
                    max_ticks = cfg.max_ticks_resolved * cfg.max_rounds_resolved
                    rep = Replay(obj["agents"], obj["config"], obj["snapshot"], obj.get("meta", {}), path=path)
                elif rep.final is not None or rep.stopped:
                    raise ReplayError(f"{where}: a line after the closing line")
                elif "final" in obj or "stopped" in obj:
                    _check(obj, schema, (), where)
                    if obj.get("ticks") != len(rep.ticks) or type(obj["ticks"]) is not int:
                        raise ReplayError(f"{where}: 'ticks' must be the number of tick lines ({len(rep.ticks)}), "
                                          f"got {_got(obj, 'ticks')}")
                    rep.final, rep.stopped = obj.get("final"), "final" not in obj
                else:
                    _check(obj, schema, ("t", "a", "h", *(("score", "match") if "end" in obj else ())), where)
                    if "end" not in obj and (extra := [key for key in ("score", "match", "end_table") if key in obj]):
                        raise ReplayError(f"{where}: {extra[0]!r} on a tick that ends no round (no 'end')")
                    if len(rep.ticks) >= max_ticks:
                        raise ReplayError(f"{where}: more ticks than these rules allow ({max_ticks})")
                    rep.ticks.lines.append(line)
    except EOFError:  # a gzip stream that ends early, after its last line
        if rep is None:
            raise ReplayError(f"{path}: unreadable (the gzip stream ends early)") from None
        if rep.final is None and not rep.stopped:
            rep.cut_off = "the gzip stream ends early" + (f"; {rep.cut_off}" if rep.cut_off else "")
    except (gzip.BadGzipFile, zlib.error) as e:
        raise ReplayError(cut(f"{path}: unreadable (not a gzip stream: {e})")) from None
    except OSError as e:
        raise ReplayError(f"{path}: cannot read: {e.strerror or e}") from None
    if rep is None:
        raise ReplayError(f"{path}: empty file")
    return rep


def env_for(config: dict[str, Any]) -> NertzParallelEnv:
    """A ``parallel_env`` of exactly this config (a snapshot's or replay's ``config``)."""
    return NertzParallelEnv(**make_config(**config).to_dict())


def round_end_table(before: dict[str, Any], actions: Sequence[int]) -> dict[str, Any]:
    """The table as a round of a match that goes on ended (the step also dealt the next round).

    Replays the step from ``before`` with ``actions`` in a copy whose match ends with this round, so nothing is
    dealt after the scoring; the result carries the real ``config`` and ``done`` ``"running"``."""
    cfg = dict(before["config"])
    cfg.update(rounds=int(before["round"]) + 1, target_score=None, max_rounds=None)
    cfg = make_config(**cfg).to_dict()
    env = env_for(cfg)
    env.reset(options={"snapshot": {**before, "config": cfg}})
    env.step({a: int(actions[p]) for p, a in enumerate(env.possible_agents)})
    out = env.snapshot()
    out["config"] = before["config"]
    out["done"] = "running"
    return out


@dataclass
class Frame:
    """One picture of a replayed game: ``kind`` ``"deal"`` (the opening, ``rec`` None), ``"tick"`` (the
    table after tick ``rec``), or ``"round_end"`` (a round of a match that goes on, as it ended) then
    ``"next_deal"``. On a round's end, ``round_end`` holds per seat the round's scoring part of the reward:
    ``{"reward": bonus - penalty x cards left (per team with teams), "left": Nertz cards left, "bonus": ...}``."""

    kind: str
    rec: dict[str, Any] | None
    snapshot: dict[str, Any]
    round_end: list[dict[str, Any]] | None = None


def replay_frames(src: Replay | str | os.PathLike[str]) -> Iterator[Frame]:
    """Every :class:`Frame` of a game, replayed through the engine and checked as :func:`verify_replay` does."""
    rep = src if isinstance(src, Replay) else load_replay(src)
    env = env_for(rep.config)
    try:
        env.reset(options={"snapshot": rep.snapshot})
    except SnapshotError as e:
        raise ReplayError(cut(f"{rep.path}: the header's snapshot (the opening table): {e}")) from None
    before = env.snapshot()
    yield Frame("deal", None, before)
    names = env.possible_agents
    for rec in rep.ticks:
        t = short(rec["t"])
        if not env.agents:
            raise ReplayMismatch(f"tick {t}: the game had already ended")
        _obs, rewards, _, _, infos = env.step({a: rec["a"][p] for p, a in enumerate(names)})
        snap = env.snapshot()
        none = {"il": [], "lr": [], "r": [0.0] * len(names)}  # what a tick line may leave out, spelt out
        replayed = none | _tick_record(env, snap, before, rec["a"], rewards, infos)
        for key, what in _COMPARED.items():
            if key == "n" and key not in rec:  # a file written before the action names
                continue
            if rec.get(key, none.get(key)) != replayed.get(key):
                got = f"recorded {short(rec.get(key, none.get(key)))}, replayed {short(replayed.get(key))}"
                raise ReplayMismatch(f"tick {t}: {what} {got}")
        if "end_table" in rec and "end_table" not in replayed:
            raise ReplayMismatch(f"tick {t}: a round-end table on a tick that deals no new round")
        if "end_table" in rec and rec["end_table"] != replayed["end_table"]:
            raise ReplayMismatch(f"tick {t}: the round-end table differs from the replayed one")
        ends = _round_rewards(env, names, infos) if "end" in rec else None
        if "end_table" in replayed:
            yield Frame("round_end", rec, replayed["end_table"], ends)
            yield Frame("next_deal", rec, snap)
        else:
            yield Frame("tick", rec, snap, ends)
        before = snap
    if rep.final is not None:
        if env.agents:
            raise ReplayMismatch(f"the file closes the game after {len(rep.ticks)} ticks but it goes on")
        if env.snapshot() != rep.final:
            raise ReplayMismatch("the closing snapshot differs from the replayed table")


def _round_rewards(env: NertzParallelEnv, names: list[str], infos: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per seat the round's scoring part of a round-ending tick's reward (see :class:`Frame`)."""
    own = [infos[a]["score_bonus"] + infos[a]["score_nertz_penalty"] for a in names]
    team = env.config.team_of  # each seat its own team without teams
    return [
        {
            "reward": float(sum(own[q] for q in range(len(names)) if team[q] == team[p])),
            "left": int(infos[a]["nertz_left"]),
            "bonus": int(infos[a]["score_bonus"]),
        }
        for p, a in enumerate(names)
    ]


def verify_replay(src: Replay | str | os.PathLike[str], partial: bool = False) -> int:
    """Replay a file through the engine and check every tick exactly; returns the number of ticks. Raises
    :class:`ReplayMismatch` at the first tick that differs, :class:`ReplayIncomplete` for a file without its
    closing line (unless ``partial=True``) and :class:`ReplayError` for a file that is not a replay."""
    rep = src if isinstance(src, Replay) else load_replay(src)
    count = sum(fr.kind in ("tick", "next_deal") for fr in replay_frames(rep))
    why = rep.incomplete()
    if why is not None and not partial:
        raise ReplayIncomplete(why)
    return count
