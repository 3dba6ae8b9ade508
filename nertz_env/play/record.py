"""What ``nertz-play`` takes from :mod:`nertz_env.draw` and :mod:`nertz_env.replay`: a drawer for the page and
a recorder for the disk, so a game played here looks and replays like any other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nertz_env.play.game import PlayGame, TickResult

#: the person's seat in the replay's header (the page calls it "you")
HUMAN_REPLAY_NAME = "human"


def banners(game: PlayGame) -> dict[int, tuple[str, str]]:
    """Banners for the seats' panels after the last tick: lost races and the person's illegal move."""
    out: dict[int, tuple[str, str]] = {}
    last = game.last
    if last is None:
        return out
    for m in last.moves:
        if m.seat == game.seat and m.illegal:
            out[m.seat] = ("ILLEGAL MOVE: YOU WAITED", "error")
        elif m.lost_race:
            out[m.seat] = ("LOST RACE", "warn")
    return out


def table_drawer() -> Callable[[PlayGame], str | None]:
    """``drawer(game)``: the table as an interactive SVG, with banners for the last tick's events."""
    from nertz_env.draw import table_svg

    def draw(game: PlayGame) -> str | None:
        highlight = {"seats": banners(game)}
        return table_svg(game.env.snapshot(), seat_names=game.names, highlight=highlight, interactive=True)

    return draw


def replay_recorder(directory: str) -> Callable[[PlayGame], Any]:
    """``factory(game)``: a recorder writing ``game`` tick by tick to a new replay file in ``directory``."""
    from nertz_env.play.game import replay_path

    def factory(game: PlayGame) -> Any:
        return _GameRecorder(game, replay_path(directory, game.seed))

    return factory


class _GameRecorder:
    """Writes ``game`` to ``path`` through :class:`nertz_env.replay.ReplayWriter`."""

    def __init__(self, game: PlayGame, path: str) -> None:
        from nertz_env.replay import ReplayWriter

        self.game = game
        self.path = path
        names = [HUMAN_REPLAY_NAME if s == game.seat else n for s, n in enumerate(game.specs)]
        meta = {"tool": "nertz-play", "seed": game.seed, "human_seat": game.seat}
        self._writer = ReplayWriter(path, game.config.to_dict(), game.env.snapshot(), names, meta)
        game.replay_file = path

    def tick(self, result: TickResult) -> None:
        moves = result.moves
        self._writer.tick(
            result.tick,
            [m.submitted for m in moves],
            [int(m.illegal) for m in moves],
            [int(m.lost_race) for m in moves],
            [m.reward for m in moves],
            self.game.env.snapshot(),
            result.round_end,
            result.scores,
            self.game.match_scores if result.round_end is not None else None,
        )

    def abandon(self) -> None:
        """Stop writing after a failure (the complete lines stay a valid replay)."""
        self._writer.abandon()

    def close(self, result: TickResult | None) -> None:
        """The closing line when the game is over; otherwise just close (every tick is on disk already)."""
        if self._writer.closed:
            return
        if self.game.done:
            self._writer.finish(self.game.env.snapshot())
        else:
            self._writer.close()
