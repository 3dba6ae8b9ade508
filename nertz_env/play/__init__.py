"""``nertz-play``: a person takes a seat at a Nertz table against agents, in a browser.

:class:`~nertz_env.play.game.PlayGame` is the table (the env, the bots, the replay; no web code);
:mod:`nertz_env.play.server` serves it to a page over a websocket (Starlette, needs the ``play`` extra);
:mod:`nertz_env.play.cli` is the command.
"""

from nertz_env.play.game import MoveError, PlayGame, TickResult

__all__ = ["MoveError", "PlayGame", "TickResult"]
