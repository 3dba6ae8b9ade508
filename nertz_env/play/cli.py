"""``nertz-play``: take a seat at a Nertz table against agents, in your browser.

Guide, with examples: docs/guides/replays.md ("Play a seat yourself"). Bad input prints one line and exits with
code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import os
import secrets
import socket
import sys
import threading
import webbrowser
from collections.abc import Sequence
from typing import Any

from nertz_env._text import short
from nertz_env.cli import Parser, UsageError, add_rule_flag, advice, at_least, refuse

DEFAULT_TICK_MS = 1500
MIN_TICK_MS, MAX_TICK_MS = 50, 60_000
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
#: the largest websocket message the server reads (a bigger one ends the connection, code 1009)
MAX_FRAME = 1 << 20
#: seconds the first Ctrl-C waits for open connections before it stops the server anyway
SHUTDOWN_GRACE = 2
#: the most connections served at once
MAX_CONNECTIONS = 256
#: seconds a client has to send a request head before its connection is closed
HEAD_TIMEOUT = 5
#: seconds between the server's pings to a tab, and for its pong: a tab that answers none is dropped
PING_SECONDS = 5
#: the headers of every HTTP answer: no framing, only the page's own script, style and server, no type
#: guessing, no referrer (the address holds the token), no caching
PAGE_HEADERS = [
    ("content-security-policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
]


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="nertz-play", description=__doc__)
    p.add_argument("--opponent", action="append", dest="opponents", metavar="AGENT",
                   help="the agent spec of another seat (random, greedy, heuristic, search, ppo, a checkpoint "
                        "path, 'heuristic:wait_prob=0.3'), once per seat; one fills every seat (default: heuristic)")
    p.add_argument("--players", type=int, choices=range(2, 9), metavar="N",
                   help="seats at the table, 2 to 8 (default: opponents + 1, else 4)")
    p.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    p.add_argument("--seed", type=at_least(0, 2**64 - 1), help="the deal's seed (default: a random one, printed)")
    add_rule_flag(p)
    p.add_argument("--step", action="store_true", help="step mode: the table waits for each of your moves")
    p.add_argument("--tick-ms", type=at_least(MIN_TICK_MS, MAX_TICK_MS),
                   help=f"real time: milliseconds per tick, {MIN_TICK_MS} to {MAX_TICK_MS} (default {DEFAULT_TICK_MS})")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to serve on (default 127.0.0.1: this machine only); another address (0.0.0.0: "
                        "every network) lets other machines in, each with the secret token in the printed address")
    p.add_argument("--port", type=at_least(0, 65535), default=0, help="port (default 0: any free port)")
    p.add_argument("--no-browser", action="store_true", help="print the address instead of opening a browser")
    p.add_argument("--replay-dir", help="folder for the replay files (default: $XDG_DATA_HOME/nertz-env/replays)")
    return p


def _opponents(args: argparse.Namespace) -> tuple[int, list[str]]:
    given = args.opponents or ["heuristic"]
    players = args.players or (len(given) + 1 if args.opponents else 4)
    if not 2 <= players <= 8:  # the number of opponents named
        raise UsageError(f"--opponent is given {len(given)} times: a table has 2 to 8 players")
    if len(given) == 1:
        return players, given * (players - 1)
    if len(given) != players - 1:
        raise UsageError(
            f"a table of {players} players has {players - 1} opponents, but --opponent is given {len(given)} times "
            "(give one to fill every seat)"
        )
    return players, list(given)


def _build(args: argparse.Namespace) -> dict[str, Any]:
    """Check every option and build the table; :class:`UsageError` for bad input."""
    players, specs = _opponents(args)
    rules: dict[str, Any] = args.rule or {}
    if not 0 <= args.seat < players:
        raise UsageError(f"--seat must be from 0 to {players - 1} at a table of {players}, got {args.seat}")
    if args.step and args.tick_ms is not None:
        raise UsageError("--tick-ms sets the clock of real time play; --step has no clock")
    tick_ms = DEFAULT_TICK_MS if args.tick_ms is None else args.tick_ms

    from nertz_env.config import make_config

    try:
        config = make_config(num_players=players, **rules)
    except (TypeError, ValueError) as e:
        raise UsageError(f"--rule: {e}") from None

    from nertz_env.agents import make_agent
    from nertz_env.agents.registry import IncompatibleAgentError, check_agent
    from nertz_env.threads import limit_threads

    limit_threads(1)
    bots = []
    for spec in specs:
        try:
            bot = make_agent(spec)
            # a policy refuses a table it was not trained for when it is reset: here, not deep in the first deal
            check_agent(bot, spec, config)
        except IncompatibleAgentError as e:
            raise UsageError(f"--opponent: {advice(e, rules, target_score_flag=False)}") from None
        except (ValueError, FileNotFoundError, ImportError) as e:  # a bad name or checkpoint, a missing extra
            raise UsageError(f"--opponent: {e}") from None
        bots.append(bot)
    replay_dir = args.replay_dir or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "nertz-env", "replays")
    try:
        os.makedirs(replay_dir, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--replay-dir: cannot create {replay_dir}: {e.strerror}") from None
    if not os.access(replay_dir, os.W_OK):
        raise UsageError(f"--replay-dir: {replay_dir} is not writable")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    return {"players": players, "specs": specs, "bots": bots, "rules": rules, "tick_ms": tick_ms,
            "replay_dir": os.path.abspath(replay_dir), "seed": seed}


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; :class:`UsageError` when the port is taken or the host unknown."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except (socket.gaierror, UnicodeError) as e:  # UnicodeError: a label of over 63 characters
        raise UsageError(f"--host: cannot use {short(host)}: {getattr(e, 'strerror', None) or e}") from None
    try:
        return socket.create_server((host, port), family=family, backlog=16,
                                    dualstack_ipv6=family == socket.AF_INET6 and socket.has_dualstack_ipv6())
    except OSError as e:
        raise UsageError(f"--port: cannot listen on {host}:{port}: {e.strerror}") from None


def access(host: str) -> tuple[list[str] | None, str | None]:
    """Who may reach a table served on ``host``: ``(allowed Host names, token)``. On loopback (127.0.0.0/8, ::1,
    localhost): loopback Host names (an IPv6 one in brackets, as a ``Host`` header has it), no token. Beyond it:
    any Host name, and a new secret token."""
    ip = _ip(host)
    if (ip is not None and ip.is_loopback) or host.lower().rstrip(".") == "localhost":
        return [*LOOPBACK, f"[{ip}]" if ip is not None and ip.version == 6 else host.lower()], None
    return None, secrets.token_urlsafe(24)


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``host`` as an IP address (brackets stripped), or None for a name."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def addresses(host: str, port: int, token: str | None) -> tuple[str, str]:
    """``(address to print, address for a browser on this machine)`` of a table on ``host:port``."""
    query = f"?token={token}" if token else ""
    name = host
    ip = _ip(host)
    if ip is not None and ip.is_unspecified:  # 0.0.0.0 or ::: every address of this machine
        name = socket.gethostname() or host
        local = "[::1]" if ip.version == 6 else "127.0.0.1"
    else:
        local = f"[{host.strip('[]')}]" if ip is not None and ip.version == 6 else host
    shown = f"[{name.strip('[]')}]" if ":" in name else name
    return f"http://{shown}:{port}/{query}", f"http://{local}:{port}/{query}"


def server_config(app: Any, **options: Any) -> Any:
    """The uvicorn config ``nertz-play`` serves with: the bounds and headers above, with the protocols of
    :mod:`nertz_env.play.limits`."""
    import uvicorn

    from nertz_env.play.limits import BoundedH11, BoundedWebSocket

    limit = MAX_CONNECTIONS
    with contextlib.suppress(ImportError):  # a quarter of the files this process may open if fewer (Unix)
        import resource

        files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if files != resource.RLIM_INFINITY:
            limit = max(4, min(MAX_CONNECTIONS, files // 4))
    settings: dict[str, Any] = {
        "log_level": "warning",
        "http": BoundedH11,
        "ws": BoundedWebSocket,
        "limit_concurrency": limit,
        # connections taken per turn of the event loop (and the kernel's queue): each turn's are a few turns
        # from their first callback, where the oldest idle ones are closed, so they must fit beside the limit
        "backlog": limit // 4,
        "timeout_keep_alive": HEAD_TIMEOUT,
        "ws_ping_interval": PING_SECONDS,
        "ws_ping_timeout": PING_SECONDS,
        "ws_max_size": MAX_FRAME,
        "headers": PAGE_HEADERS,
        "lifespan": "on",
        "timeout_graceful_shutdown": SHUTDOWN_GRACE,
        **options,
    }
    return uvicorn.Config(app, **settings)


def make_table_server(built: dict[str, Any], seat: int, step: bool) -> Any:
    """The table of a checked command line (see :func:`_build`), with its replay and drawing."""
    import nertz_env
    from nertz_env.play.game import PlayGame
    from nertz_env.play.server import TableServer

    env = nertz_env.parallel_env(num_players=built["players"], **built["rules"])
    game = PlayGame(env, built["bots"], built["specs"], seat=seat, seed=built["seed"])
    game.tick(None)  # a throwaway tick: the engine and the bots compile before the page opens
    game.replay_dir = built["replay_dir"]
    game.reset()  # the deal again, and its replay
    return TableServer(game, step=step, tick_ms=built["tick_ms"])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nertz-play``; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        built = _build(args)
        sock = _bind(args.host, args.port)
    except UsageError as e:
        return refuse("nertz-play", e)
    # a missing play extra is the command's one line (commands.run)
    import uvicorn
    import websockets  # noqa: F401  (uvicorn serves websockets only when a library for them is installed)

    from nertz_env.play.server import create_app

    print("nertz-play: dealing (the first run compiles the rules engine, up to a minute) ...", flush=True)
    table = make_table_server(built, args.seat, args.step)
    port = sock.getsockname()[1]
    hosts, token = access(args.host)
    url, local_url = addresses(args.host, port, token)
    if token is None:
        print(f"nertz-play: serving on {args.host}: only this machine can reach the table (any program or user "
              "on it; other machines cannot)", flush=True)
    else:
        print(f"nertz-play: note: serving on {args.host}: other machines that reach this one on port {port} can "
              "reach the table, each with the secret token in the address below (keep it to the people you play "
              "with)", flush=True)
    opponents = ", ".join(built["specs"])
    mode = "step mode" if args.step else f"real time, {built['tick_ms']} ms a tick"
    print(f"nertz-play: seat {args.seat} of {built['players']} against {opponents}; seed {built['seed']}; {mode}")
    print(f"nertz-play: the table is at {url}  (Ctrl-C stops)")
    if local_url != url:
        print(f"nertz-play: on this machine: {local_url}")
    print(f"nertz-play: replay: {table.game.replay_file}", flush=True)
    server = uvicorn.Server(server_config(create_app(table, hosts, token)))
    if not args.no_browser:  # the socket listens already: the page's request waits for the server
        threading.Thread(target=webbrowser.open, args=(local_url,), daemon=True).start()
    # a Ctrl-C: uvicorn shuts down (the replay is closed), then re-raises it
    with sock, contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[sock])
    print(f"nertz-play: stopped after tick {table.game.env.tick}; replay: {table.game.replay_file}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
