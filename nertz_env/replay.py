"""Replays: ``nertz-replay/1``, a record of one game written while it is played and replayed through the engine.

Guide: docs/guides/replays.md. Record a game by wrapping its ``parallel_env``::

    env = RecordReplay(parallel_env(num_players=4), "game.jsonl.gz", agents=["search", "heuristic", "me", "ppo"])
    ...                                  # reset and step as usual
    verify_replay("game.jsonl.gz")       # raises ReplayMismatch on any difference

The format is JSON lines, gzip-compressed when the name ends in ``.gz``. Line 1, the header::

    {"format": "nertz-replay/1", "agents": [name per seat], "config": {...every NertzConfig option...},
     "snapshot": {...the opening table, nertz-snapshot/1...}, "meta": {...anything JSON...}}

then one line per tick::

    {"t": tick,                       # the table's tick after this step (in a match, counted from each deal)
     "a": [action index per seat],    # what each seat asked for (-1: None)
     "n": [action name per seat],     # ActionTable.name of each index ("?" when out of range)
     "il": [seats],                   # seats whose action was illegal (applied as a wait); absent when none
     "lr": [seats],                   # seats that lost a race to the lake; absent when none
     "r": [reward per seat],          # absent when every reward is zero
     "end": "nertz"|"stall"|"max_ticks", "score": [round total per seat], "match": [match score per seat]
                                      # only on a tick that ended a round
     "end_table": {...snapshot...},   # only when a round of a match that goes on ended: the table as it ended
                                      # (optional; readers recompute it, see round_end_table)
     "h": "8 hex digits"}             # the start of the SHA-1 of the table's snapshot after the tick

and a closing line: ``{"final": {...closing snapshot...}, "ticks": N}`` when the episode ended, or
``{"stopped": "before the game's end", "ticks": N}`` when the writer was closed first. A file with neither was
cut off: :func:`load_replay` reads it and :attr:`Replay.cut_off` says so; :func:`verify_replay` raises
:class:`ReplayIncomplete` unless ``partial=True``.
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
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, overload

from nertz_env._text import cut, short
from nertz_env.actions import action_table
from nertz_env.config import make_config
from nertz_env.environment import NertzParallelEnv
from nertz_env.infos import ROUND_END_NAMES
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
    "replay_states",
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


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def _action_value(v: Any) -> int:
    """What a seat asked for, as an int for the file (None: -1; numpy integers: their value)."""
    if v is None:
        return -1
    try:
        return int(v)
    except (TypeError, ValueError):
        return -1  # the env raises on such a value before stepping, so no tick is written


class ReplayWriter:
    """Writes one game: the header at once, then :meth:`tick` per step and :meth:`finish` at the end.

    A plain file is written unbuffered, line by line; a ``.gz`` file is complete once :meth:`finish` or
    :meth:`close` ran. A failed write raises after cutting a plain file back to its last complete line."""

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
        self.table = action_table(make_config(**config))
        # a plain file unbuffered (each line is on disk when tick returns); a gzip file through a buffer
        self._raw: Any = open(self.path, "wb", buffering=-1 if self._gz else 0)  # noqa: SIM115
        self._file: Any = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=9) if self._gz else self._raw
        self._good = 0  # bytes of complete lines on disk (a plain file)
        self.ticks = 0
        self.closed = False
        self._last = snapshot  # the table before the next tick (for the round-end table of a match)
        try:
            self._write(
                {
                    "format": FORMAT,
                    "agents": [str(a) for a in agents],
                    "config": config,
                    "snapshot": snapshot,
                    "meta": dict(meta or {}),
                }
            )
        except OSError:
            with contextlib.suppress(OSError):
                os.remove(self.path)
            raise

    def _write(self, obj: dict[str, Any]) -> None:
        if self.closed:
            raise ValueError(f"{self.path}: the replay writer is closed")
        data = (_dumps(obj) + "\n").encode()
        try:
            if self._gz:
                self._file.write(data)
            else:
                view = memoryview(data)
                while view:  # an unbuffered write may write part of it
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

    def tick(
        self,
        tick: int,
        actions: Sequence[int],
        illegal: Sequence[int],
        lost_race: Sequence[int],
        rewards: Sequence[float],
        snapshot: dict[str, Any],
        round_end: str | None = None,
        scores: Sequence[int] | None = None,
        match: Sequence[int] | None = None,
    ) -> None:
        """One step: per seat the action, illegal and lost-race flags and reward; the snapshot after it; on a
        round's last tick its end, round totals and match scores."""
        n = self.table.n
        rec: dict[str, Any] = {
            "t": int(tick),
            "a": [int(a) for a in actions],
            "n": [self.table.name(a) if 0 <= a < n else "?" for a in actions],
        }
        il = [s for s, f in enumerate(illegal) if f]
        lr = [s for s, f in enumerate(lost_race) if f]
        if il:
            rec["il"] = il
        if lr:
            rec["lr"] = lr
        if any(r != 0 for r in rewards):
            rec["r"] = [float(r) for r in rewards]
        if round_end is not None:
            rec["end"] = round_end
            rec["score"] = [int(x) for x in scores or []]
            rec["match"] = [int(x) for x in match or []]
        if round_end is not None and snapshot.get("round") != self._last.get("round"):
            # a match that goes on: the step dealt the next round, so keep the table as this one ended
            rec["end_table"] = round_end_table(self._last, [int(a) for a in actions])
        rec["h"] = snapshot_hash(snapshot)
        self._last = snapshot
        self._write(rec)
        self.ticks += 1

    def finish(self, final_snapshot: dict[str, Any]) -> None:
        """Write the closing line and close the file."""
        self._write({"final": final_snapshot, "ticks": self.ticks})
        self._close_file()

    def close(self) -> None:
        """Close a game stopped before its end (the ``stopped`` line); after :meth:`finish` it does nothing."""
        if self.closed:
            return
        self._write({"stopped": "before the game's end", "ticks": self.ticks})
        self._close_file()

    def _close_file(self) -> None:
        try:
            self._file.close()  # a gzip file writes its last block and trailer here
            if self._file is not self._raw:
                self._raw.close()
        except OSError:
            self.abandon()
            raise
        self.closed = True


class RecordReplay:
    """A ``parallel_env`` that records every episode it plays as a ``nertz-replay/1`` file.

    Args:
        env: the env to record (a :class:`~nertz_env.environment.NertzParallelEnv`).
        path: the file of the first episode; put ``{episode}`` in it (``"games/g{episode:04d}.jsonl.gz"``) to
            record every episode to its own file (without it a second ``reset`` raises ``ValueError``).
        agents: a name per seat for the header (default the env's agent names).
        meta: anything JSON-ready to keep in the header.

    Every other attribute is the wrapped env's."""

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

    def _next_path(self) -> str:
        if "{episode" in self.path_pattern:
            return self.path_pattern.format(episode=self.episode)
        if self.episode > 0:
            raise ValueError(
                f"RecordReplay path {self.path_pattern!r} has no {{episode}} field: one file records one episode"
            )
        return self.path_pattern

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if self.writer is not None:
            self.writer.close()
        path = self._next_path()
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
        live = list(env.agents)
        asked = [0] * env.config.num_players
        for p, a in enumerate(env.possible_agents):
            if a in live and a in actions:
                asked[p] = _action_value(actions[a])
        obs, rewards, terms, truncs, infos = env.step(actions)
        names = env.possible_agents
        first = infos[names[0]]
        end = ROUND_END_NAMES[first["round_end"]] or None
        self.writer.tick(
            env.tick,
            asked,
            [int(infos[a]["illegal"]) for a in names],
            [int(infos[a]["lost_race"]) for a in names],
            [rewards[a] for a in names],
            env.snapshot(),
            end,
            [infos[a]["score"] for a in names] if end else None,
            [infos[a]["match_score"] for a in names] if end else None,
        )
        if not env.agents:
            self.writer.finish(env.snapshot())
            self.writer = None
        return obs, rewards, terms, truncs, infos

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.env.close()


class TickLines(MutableSequence[dict[str, Any]]):
    """A replay's tick records, kept as the text of their lines and parsed each time one is read.

    A parsed record takes several times its text (``bench/bench_replay_memory.py``). To change a record, read it
    into a variable and put it back with ``ticks[i] = record``; ``list(rep.ticks)`` gives a list."""

    def __init__(self, records: Iterable[dict[str, Any] | bytes] = ()) -> None:
        self._items: list[dict[str, Any] | bytes] = list(records)

    def append_line(self, line: bytes) -> None:
        """Keep a tick line's text (checked by the caller)."""
        self._items.append(line)

    @staticmethod
    def _record(item: dict[str, Any] | bytes) -> dict[str, Any]:
        return json.loads(item) if isinstance(item, bytes) else item

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self._record(x) for x in self._items[i]]
        return self._record(self._items[i])

    @overload
    def __setitem__(self, i: int, value: dict[str, Any]) -> None: ...
    @overload
    def __setitem__(self, i: slice, value: Iterable[dict[str, Any]]) -> None: ...
    def __setitem__(self, i: int | slice, value: Any) -> None:
        if isinstance(i, slice):
            self._items[i] = list(value)
        else:
            self._items[i] = value

    def __delitem__(self, i: int | slice) -> None:
        del self._items[i]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for x in self._items:
            yield self._record(x)

    def insert(self, index: int, value: dict[str, Any]) -> None:
        self._items.insert(index, value)


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
            f"{self.path}: cut off after tick {self.last_tick}, the last complete tick: no closing line{how}; "
            "a game still being written or a writer that crashed (nertz-replay --partial draws it anyway)"
        )


#: the longest line a replay may hold
MAX_LINE_BYTES = 1 << 20
#: the most a replay may hold, decompressed (the largest game the default ``max_ticks`` allows is smaller)
MAX_REPLAY_BYTES = 128 << 20
_CHUNK = 1 << 16
_NEWLINES = re.compile(rb"\n+")
_BLANKS_AS_NEWLINES = bytes.maketrans(b" \t\r\f\v", b"\n\n\n\n\n")
_END_NAMES = ("nertz", "stall", "max_ticks")


class _Lines:
    """The lines of a replay file, plain or gzip, read a chunk at a time within the bounds above.

    Yields ``(line number, line, whether it ended)``, skipping blank lines; :attr:`gz_cut` then says whether a
    gzip stream ended early."""

    def __init__(self, path: str, f: IO[bytes], max_bytes: int = MAX_REPLAY_BYTES) -> None:
        self.path = path
        self._f = f
        self.max_bytes = max_bytes
        self.gz_cut = False
        self.total = 0

    def _chunks(self) -> Iterator[bytes]:
        first = self._f.read(_CHUNK)
        if first[:2] != b"\x1f\x8b":
            chunk = first
            while chunk:
                yield chunk
                chunk = self._f.read(_CHUNK)
            return
        data = first
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        in_member = True
        while True:
            if not data:
                data = self._f.read(_CHUNK)
                if not data:
                    self.gz_cut = in_member
                    return
            if not in_member:  # another member follows; zero bytes may pad the end
                data = data.lstrip(b"\0")
                if not data:
                    continue
                if not b"\x1f\x8b".startswith(data[:2]):
                    raise ReplayError(f"{self.path}: bytes after the end of the gzip stream that are not gzip")
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                in_member = True
            try:
                out = d.decompress(data, _CHUNK)  # at most a chunk out, whatever the ratio
            except zlib.error as e:
                raise ReplayError(f"{self.path}: unreadable (not a gzip stream: {e})") from None
            if d.eof:
                data, in_member = d.unused_data, False
            else:
                data = d.unconsumed_tail
            if out:
                yield out

    def __iter__(self) -> Iterator[tuple[int, bytes, bool]]:
        buf = bytearray()
        k = 0  # lines before buf
        for chunk in self._chunks():
            self.total += len(chunk)
            if self.total > self.max_bytes:
                raise ReplayError(
                    f"{self.path}: more than {self.max_bytes >> 20} MiB (decompressed) by line {k + 1}: larger "
                    "than any game the rules allow without raising max_ticks (about 60 MB at most)"
                )
            buf += chunk
            spaces: bytearray | None = None  # buf with every blank as a newline, made when first needed
            start = 0
            while True:
                end = buf.find(b"\n", start)
                if end < 0:
                    break
                if end - start > MAX_LINE_BYTES:
                    raise self._too_long(k + 1)
                if not buf[start:end].strip():  # skip a run of blank lines at once
                    if spaces is None:
                        spaces = buf.translate(_BLANKS_AS_NEWLINES)
                    run = _NEWLINES.match(spaces, start)
                    assert run is not None
                    last = buf.rfind(b"\n", start, run.end()) + 1
                    k += buf.count(b"\n", start, last)
                    start = last
                    continue
                k += 1
                yield k, bytes(buf[start:end]), True
                start = end + 1
            del buf[:start]
            if len(buf) > MAX_LINE_BYTES:
                raise self._too_long(k + 1)
        if buf.strip():
            yield k + 1, bytes(buf), False

    def _too_long(self, k: int) -> ReplayError:
        return ReplayError(f"{self.path}:{k}: a line longer than {MAX_LINE_BYTES >> 20} MiB: not a replay line")


def _seat_list(value: Any, n: int, kind: type | tuple[type, ...], what: str) -> str | None:
    """Why ``value`` is not a list of ``n`` values of ``kind`` (never booleans), or None."""
    if (
        isinstance(value, list)
        and len(value) == n
        and all(isinstance(x, kind) and not isinstance(x, bool) for x in value)
    ):
        return None
    return f"must list {n} {what} (one per seat), got {short(value)}"


def _check_header(obj: dict[str, Any], where: str) -> int:
    """The header's fields, checked; returns the number of seats."""
    for key in ("agents", "config", "snapshot"):
        if key not in obj:
            raise ReplayError(f"{where}: the header has no {key!r}")
    config = obj["config"]
    if not isinstance(config, dict):
        raise ReplayError(f"{where}: config must be a JSON object of rules options, got {short(config)}")
    try:
        n = make_config(**config).num_players
    except (TypeError, ValueError) as e:
        raise ReplayError(cut(f"{where}: config: {e}")) from None
    why = _seat_list(obj["agents"], n, str, "names")
    if why:
        raise ReplayError(f"{where}: agents {why}")
    snap = obj["snapshot"]
    if not isinstance(snap, dict) or not snap:
        raise ReplayError(f"{where}: snapshot must be the opening table (a nertz-snapshot/1 object), got {short(snap)}")
    if not isinstance(obj.get("meta", {}), dict):
        raise ReplayError(f"{where}: meta must be a JSON object, got {short(obj['meta'])}")
    return n


def _check_tick_line(obj: dict[str, Any], n: int, where: str) -> None:
    """A tick line's fields, checked; unknown fields are left alone."""
    t = obj.get("t")
    if not isinstance(t, int) or isinstance(t, bool) or t < 0:
        raise ReplayError(f"{where}: a tick line needs 't', the tick (an integer >= 0), got {short(t)}")
    why = _seat_list(obj.get("a"), n, int, "action indices")
    if why:
        raise ReplayError(f"{where}: 'a' {why}")
    if "n" in obj and (why := _seat_list(obj["n"], n, str, "action names")):
        raise ReplayError(f"{where}: 'n' {why}")
    for key in ("il", "lr"):
        if key in obj:
            v = obj[key]
            if not (
                isinstance(v, list)
                and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < n for x in v)
                and len(set(v)) == len(v)
            ):
                raise ReplayError(f"{where}: {key!r} must list distinct seats from 0 to {n - 1}, got {short(v)}")
    if "r" in obj and (why := _seat_list(obj["r"], n, (int, float), "rewards")):
        raise ReplayError(f"{where}: 'r' {why}")
    if "end" in obj:
        if obj["end"] not in _END_NAMES:
            raise ReplayError(f"{where}: 'end' must be one of {', '.join(_END_NAMES)}, got {short(obj['end'])}")
        for key in ("score", "match"):
            if why := _seat_list(obj.get(key), n, int, "integers"):
                raise ReplayError(f"{where}: {key!r} {why}")
    else:
        for key in ("score", "match", "end_table"):
            if key in obj:
                raise ReplayError(f"{where}: {key!r} on a tick that ends no round (no 'end')")
    if "end_table" in obj and not isinstance(obj["end_table"], dict):
        raise ReplayError(f"{where}: 'end_table' must be a table (a nertz-snapshot/1 object), got {short(obj['end_table'])}")
    h = obj.get("h")
    if not isinstance(h, str) or not re.fullmatch(r"[0-9a-f]{8}", h):
        raise ReplayError(f"{where}: 'h' must be the table's hash, 8 hex digits, got {short(h)}")


def _check_tick_count(obj: dict[str, Any], count: int, where: str) -> None:
    """The closing line's ``ticks``: the number of tick lines before it."""
    ticks = obj.get("ticks")
    if not isinstance(ticks, int) or isinstance(ticks, bool) or ticks != count:
        raise ReplayError(f"{where}: 'ticks' must be the number of tick lines ({count}), got {short(ticks)}")


def _has_lone_surrogate(obj: Any) -> bool:
    """Whether a parsed line holds a lone UTF-16 surrogate, which no UTF-8 output can hold."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def load_replay(path: str | os.PathLike[str], max_bytes: int = MAX_REPLAY_BYTES) -> Replay:
    """Read a ``nertz-replay/1`` file (plain or gzip). Raises :class:`ReplayError` naming the line and the field.

    A line over :data:`MAX_LINE_BYTES`, a file over ``max_bytes`` (decompressed) or more ticks than the rules
    allow is refused when reached, so a hostile file fails within bounded memory and time."""
    path = os.fspath(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block
            raise ReplayError(f"{path}: not a regular file (a replay is a file, plain or gzip)")
        f = open(path, "rb")  # noqa: SIM115
    except OSError as e:
        raise ReplayError(f"{path}: cannot read: {e.strerror or e}") from None
    rep: Replay | None = None
    n = 0
    max_ticks = 0
    with f:
        lines = _Lines(path, f, max_bytes)
        try:
            for k, line, ended in lines:
                where = f"{path}:{k}"
                try:
                    obj = json.loads(line)
                except (ValueError, RecursionError) as e:  # JSON, UTF-8, a number too long, nesting too deep
                    if rep is not None and not ended:  # the last line, cut while being written
                        rep.cut_off = f"line {k} ends in the middle"
                        break
                    why = e.msg if isinstance(e, json.JSONDecodeError) else "nested too deeply" if isinstance(
                        e, RecursionError) else str(e)
                    raise ReplayError(cut(f"{where}: not JSON ({why})")) from None
                if not isinstance(obj, dict):
                    raise ReplayError(f"{where}: each line is a JSON object")
                if b"\\u" in line and _has_lone_surrogate(obj):
                    raise ReplayError(f"{where}: a \\ud800-\\udfff escape that is no pair: not text (no page can show it)")
                if rep is None:
                    if obj.get("format") != FORMAT:
                        raise ReplayError(f"{where}: not a {FORMAT} file (format {short(obj.get('format'))})")
                    n = _check_header(obj, where)
                    cfg = make_config(**obj["config"])
                    max_ticks = cfg.max_ticks_resolved * cfg.max_rounds_resolved
                    rep = Replay(obj["agents"], obj["config"], obj["snapshot"], obj.get("meta", {}), path=path)
                elif rep.final is not None or rep.stopped:
                    raise ReplayError(f"{where}: a line after the closing line")
                elif "final" in obj:
                    if not isinstance(obj["final"], dict):
                        raise ReplayError(f"{where}: 'final' must be the closing table, got {short(obj['final'])}")
                    rep.final = obj["final"]
                    _check_tick_count(obj, len(rep.ticks), where)
                elif "stopped" in obj:
                    if not isinstance(obj["stopped"], str):
                        raise ReplayError(f"{where}: 'stopped' must be text (why the game stopped), got {short(obj['stopped'])}")
                    _check_tick_count(obj, len(rep.ticks), where)
                    rep.stopped = True
                else:
                    _check_tick_line(obj, n, where)
                    if len(rep.ticks) >= max_ticks:
                        raise ReplayError(f"{where}: more ticks than these rules allow ({max_ticks})")
                    rep.ticks.append_line(line)
        except OSError as e:
            raise ReplayError(f"{path}: cannot read: {e.strerror or e}") from None
    if rep is None:
        raise ReplayError(f"{path}: unreadable (the gzip stream ends early)" if lines.gz_cut else f"{path}: empty file")
    if lines.gz_cut and rep.final is None and not rep.stopped:
        rep.cut_off = "the gzip stream ends early" + (f"; {rep.cut_off}" if rep.cut_off else "")
    return rep


def env_for(config: dict[str, Any]) -> NertzParallelEnv:
    """A ``parallel_env`` of exactly this config (a snapshot's or replay's ``config``)."""
    cfg = dict(make_config(**config).to_dict())
    n = cfg.pop("num_players")
    return NertzParallelEnv(num_players=n, **cfg)


def _as_replay(src: Replay | str | os.PathLike[str]) -> Replay:
    return src if isinstance(src, Replay) else load_replay(src)


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
    """One picture of a replayed game.

    ``kind``: ``"deal"`` (the opening, ``rec`` None), ``"tick"`` (the table after tick ``rec``),
    ``"round_end"`` (the table as a round of a match that goes on ended) then ``"next_deal"`` (the next deal,
    same tick). On a round's end, ``round_end`` holds per seat the round's scoring part of the reward:
    ``{"reward": bonus - penalty x cards left (per team with teams), "left": Nertz cards left, "bonus": ...}``."""

    kind: str
    rec: dict[str, Any] | None
    snapshot: dict[str, Any]
    round_end: list[dict[str, Any]] | None = None


def replay_frames(src: Replay | str | os.PathLike[str]) -> Iterator[Frame]:
    """Every :class:`Frame` of a game, replayed through the engine and checked as :func:`verify_replay` does."""
    rep = _as_replay(src)
    env = env_for(rep.config)
    try:
        env.reset(options={"snapshot": rep.snapshot})
    except SnapshotError as e:
        raise ReplayError(cut(f"{rep.path}: the header's snapshot (the opening table): {e}")) from None
    before = env.snapshot()
    yield Frame("deal", None, before)
    names = env.possible_agents
    for rec in rep.ticks:
        if not env.agents:
            raise ReplayMismatch(f"tick {rec['t']}: the game had already ended")
        _obs, rewards, _, _, infos = env.step({a: rec["a"][p] for p, a in enumerate(names)})
        snap = env.snapshot()
        _check_tick(rec, env, names, rewards, infos, snap)
        ends = _round_rewards(env, names, infos) if "end" in rec else None
        if "end" in rec and snap["round"] != before["round"]:
            end_table = round_end_table(before, rec["a"])
            if "end_table" in rec and rec["end_table"] != end_table:
                raise ReplayMismatch(f"tick {rec['t']}: the round-end table differs from the replayed one")
            yield Frame("round_end", rec, end_table, ends)
            yield Frame("next_deal", rec, snap)
        else:
            if "end_table" in rec:
                raise ReplayMismatch(f"tick {rec['t']}: a round-end table on a tick that deals no new round")
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
    team = env._team if env.config.teams is not False else list(range(len(names)))
    return [
        {
            "reward": float(sum(own[q] for q in range(len(names)) if team[q] == team[p])),
            "left": int(infos[a]["nertz_left"]),
            "bonus": int(infos[a]["score_bonus"]),
        }
        for p, a in enumerate(names)
    ]


def replay_states(src: Replay | str | os.PathLike[str]) -> Iterator[tuple[dict[str, Any] | None, dict[str, Any]]]:
    """``(tick record, snapshot after it)`` for the opening (record ``None``) and every tick, replayed and
    checked as :func:`verify_replay` does."""
    for fr in replay_frames(src):
        if fr.kind != "round_end":
            yield fr.rec, fr.snapshot


def _check_tick(
    rec: dict[str, Any],
    env: NertzParallelEnv,
    names: list[str],
    rewards: dict[str, float],
    infos: dict[str, dict[str, Any]],
    snap: dict[str, Any],
) -> None:
    t = rec["t"]

    def bad(what: str, recorded: Any, got: Any) -> ReplayMismatch:
        return ReplayMismatch(f"tick {t}: {what} recorded {short(recorded)}, replayed {short(got)}")

    if env.tick != t:
        raise bad("tick", t, env.tick)
    il = [p for p, a in enumerate(names) if infos[a]["illegal"]]
    if il != rec.get("il", []):
        raise bad("illegal seats", rec.get("il", []), il)
    lr = [p for p, a in enumerate(names) if infos[a]["lost_race"]]
    if lr != rec.get("lr", []):
        raise bad("lost-race seats", rec.get("lr", []), lr)
    r = [rewards[a] for a in names]
    want = rec.get("r", [0.0] * len(names))
    if r != want:
        raise bad("rewards", want, r)
    end = ROUND_END_NAMES[infos[names[0]]["round_end"]] or None
    if end != rec.get("end"):
        raise bad("round end", rec.get("end"), end)
    if end is not None:
        score = [infos[a]["score"] for a in names]
        if score != rec.get("score"):
            raise bad("round scores", rec.get("score"), score)
    h = snapshot_hash(snap)
    if h != rec.get("h"):
        raise bad("table hash", rec.get("h"), h)


def verify_replay(src: Replay | str | os.PathLike[str], partial: bool = False) -> int:
    """Replay a file through the engine and check every tick exactly; returns the number of ticks.
    ``partial=True`` accepts a file without its closing line.

    Raises:
        ReplayMismatch: at the first tick that differs, naming it and the field.
        ReplayIncomplete: every tick checked, but the file has no closing line (cut off).
        ReplayError: the file is not a readable replay.
    """
    rep = _as_replay(src)
    count = 0
    for fr in replay_frames(rep):
        if fr.kind in ("tick", "next_deal"):
            count += 1
    why = rep.incomplete()
    if why is not None and not partial:
        raise ReplayIncomplete(why)
    return count
