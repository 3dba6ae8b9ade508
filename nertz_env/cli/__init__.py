"""What every command line shares: the exit codes, one :class:`UsageError`, one parser, one ``--rule`` flag.

A refusal of bad input is one line on stderr, ``PROG: error: ...``, and exit 2, whether argparse finds it
(:class:`Parser`) or the command does after parsing (:class:`UsageError`). ``--rule KEY=VALUE`` means the same
in every command (:func:`parse_rule`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from nertz_env._text import cut, plain, short

#: bad input: one line on stderr
EXIT_USAGE = 2
#: stopped by Ctrl-C or SIGTERM (128 + SIGINT, as a shell reports an uncaught Ctrl-C)
EXIT_INTERRUPTED = 130
#: the most characters of a refusal: a long path and its advice fit; a 5,000-character argument repeated is cut
LINE = 1000


class UsageError(Exception):
    """Bad command-line input found after parsing: the command prints ``PROG: error: MESSAGE`` and exits 2."""


def refuse(prog: str, error: Exception | str) -> int:
    """Print ``PROG: error: MESSAGE`` (cut when long: it may repeat a 5,000-character argument) and return 2."""
    print(f"{prog}: error: {cut(str(error), LINE)}", file=sys.stderr)
    return EXIT_USAGE


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``PROG: error: ...``, exit 2), that takes flags only spelled
    out in full (``--play`` is not ``--players``) and refuses a value given twice (:class:`StoreOnce`).
    ``description``: a docstring (``--help`` shows its first paragraph); it and ``epilog`` are made plain."""

    def __init__(self, description: str | None = None, epilog: str | None = None, **kwargs: Any) -> None:
        kwargs["description"] = plain(description.split("\n\n")[0]) if description else None
        kwargs["epilog"] = plain(epilog) if epilog else None
        super().__init__(**{"allow_abbrev": False, **kwargs})
        self.register("action", None, StoreOnce)
        self.register("action", "store", StoreOnce)
        self.given: dict[str, str] = {}  # destination -> the flag that set it, in the last parse

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.given = {}
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {cut(message, LINE)} (see --help)\n")  # argparse repeats values whole


class StoreOnce(argparse.Action):
    """argparse's ``store`` for a :class:`Parser`, refusing a second value for the same destination: argparse
    keeps the last one silently. A flag that repeats takes ``action="append"``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given = parser.given if isinstance(parser, Parser) else {}
        if option_string is not None and self.dest in given:
            first = given[self.dest]
            both = f"{first} is given twice" if first == option_string else f"{first} and {option_string} both set {self.dest}"
            parser.error(f"{both} (the last would win silently): give it once")
        given[self.dest] = option_string or self.dest
        setattr(namespace, self.dest, values)


def at_least(lo: float, most: float | None = None, kind: Callable[[str], Any] = int) -> Callable[[str], Any]:
    """An argparse type: an integer (or a ``kind``) of at least ``lo`` (``--deals 0``: ``argument --deals:
    must be at least 1, got 0``), and at most ``most`` if given."""

    def parse(text: str) -> Any:
        value = kind(text)  # a ValueError is argparse's own "invalid int value"
        if not value >= lo:  # NaN too
            raise argparse.ArgumentTypeError(f"must be at least {lo}, got {short(value)}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"must be from {lo} to {most}, got {short(value)}")
        return value

    parse.__name__ = kind.__name__
    return parse


def parse_rule(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> ``(key, value)``: the value as JSON (``1``, ``true``, ``null``, ``[[0,2],[1,3]]``), with
    ``none``, ``True``, ``FALSE``... read as ``null``, ``true``, ``false``; anything else is text
    (``call_mode=manual``). ``ValueError`` without an ``=`` or a key."""
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key:
        raise ValueError(f"takes key=value (e.g. --rule draw=1), got {text!r}")
    words = {"none": None, "null": None, "true": True, "false": False}
    if raw.lower() in words:
        return key, words[raw.lower()]
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw


class Rules(argparse.Action):
    """The ``--rule KEY=VALUE`` flag, repeatable, into one dict (``None`` when not given): a key given twice, or
    the table size (``size_flag``, a flag of its own), is an error. ``parse``: how another such flag reads its
    ``KEY=VALUE``."""

    def __init__(self, *args: Any, size_flag: str = "--players",
                 parse: Callable[[str], tuple[str, Any]] = parse_rule, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.size_flag, self.parse = size_flag, parse

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        try:
            key, value = self.parse(str(values))
        except ValueError as e:
            raise argparse.ArgumentError(self, str(e)) from None
        rules = dict(getattr(namespace, self.dest) or {})
        if key == "num_players" and self.parse is parse_rule:
            raise argparse.ArgumentError(self, f"give the table size with {self.size_flag}, not as a rule")
        if key in rules:
            raise argparse.ArgumentError(self, f"{key} is given twice ({rules[key]!r} and {value!r}): give it once")
        rules[key] = value
        setattr(namespace, self.dest, rules)
        if isinstance(parser, Parser):
            parser.given[self.dest] = option_string or self.dest


def add_rule_flag(parser: argparse.ArgumentParser, help: str = "a rules option (e.g. draw=1); repeatable",
                  size_flag: str = "--players") -> None:
    """Add ``--rule``; ``size_flag``: the command's flag for the table size, which a rule cannot set."""
    parser.add_argument("--rule", action=Rules, metavar="KEY=VALUE", help=help, size_flag=size_flag)


def rule_flag(key: str, value: Any) -> str:
    """The ``--rule`` flag that sets ``key`` to ``value`` (:func:`parse_rule` reads it back)."""
    text = json.dumps([list(v) for v in value] if isinstance(value, (list, tuple)) else value)
    return f"--rule {key}={text.replace(' ', '')}"


def advice(error: Any, given: dict[str, Any], target_score_flag: bool = True) -> str:
    """An :class:`~nertz_env.agents.IncompatibleAgentError` with what to change on the command line to get the
    table the agent was trained for: only the differences (``pass --players 4``, ``drop --rule draw=1``).
    ``given``: the rules the command set; ``target_score_flag``: whether the command has ``--target-score``."""
    from nertz_env.config import NertzConfig, make_config

    trained, table = error.trained, error.table
    if trained is None or table is None:
        return str(error)

    def flag(key: str, value: Any) -> str:
        return f"--target-score {value}" if key == "target_score" and target_score_flag else rule_flag(key, value)

    def keeps(want: dict[str, Any], key: str, value: Any) -> bool:  # does key=value leave ``want`` as it is?
        try:
            return NertzConfig.from_dict({**want, key: value}).to_dict() == want
        except ValueError:
            return False

    want = trained.to_dict()
    # the rules given that the trained table shares are kept, the others dropped; then the trained table's
    # values the defaults do not give are added
    kept = {k: v for k, v in given.items() if k in want and keeps(want, k, v)}
    changes = [f"drop {flag(k, v)}" for k, v in sorted(given.items()) if k not in kept]
    rules = dict(kept)
    for key in sorted(want):
        if key != "num_players" and make_config(num_players=trained.num_players, **rules).to_dict().get(key) != want[key]:
            rules[key] = want[key]
            changes.append(f"add {flag(key, want[key])}")
    if trained.num_players != table.num_players:
        changes.insert(0, f"pass --players {trained.num_players}")
    return f"{error}; for the table it was trained for: {', '.join(changes)}" if changes else str(error)
