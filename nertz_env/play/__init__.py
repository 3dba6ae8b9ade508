"""``nertz-play``: a person takes a seat at a Nertz table against agents, in a browser (docs/guides/replays.md).

:class:`~nertz_env.play.game.PlayGame` is the table (no web code); :mod:`nertz_env.play.server` serves it (needs
the ``play`` extra).
"""
