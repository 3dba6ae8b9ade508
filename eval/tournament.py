"""Tournaments: lineups (round robin or gauntlet), duplicate deals with seat rotation, and the runner.

Every game is fixed by the tournament seed and its indices, so the results are the same for any number of
workers. Ctrl-C returns the deals finished so far, marked ``interrupted``. See docs/guides/evaluation.md.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import hashlib
import itertools
import json
import multiprocessing as mp
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from multiprocessing import connection
from typing import Any

import numpy as np

from nertz_env.agents import Agent, make_agent
from nertz_env.agents.registry import check_agent
from nertz_env.config import make_config
from nertz_env.environment import NertzParallelEnv
from nertz_env.infos import ROUND_END_NAMES
from nertz_env.replay import RecordReplay
from nertz_env.threads import limit_threads

MODES = ("round_robin", "gauntlet")


def deal_seed(seed: int, deal: int) -> int:
    """The env seed of deal ``deal`` of a tournament seeded ``seed`` (stable: deal i never depends on how
    many deals are played)."""
    return int(np.random.SeedSequence([int(seed), int(deal)]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def agent_seed(seed: int, deal: int, lineup: int, rotation: int, seat: int) -> int:
    """The seed of the agent at ``seat`` in one game (agents draw from their own generators)."""
    return int(np.random.SeedSequence([int(seed), deal, lineup, rotation, seat, 1]).generate_state(1)[0])


def round_robin_lineups(num_agents: int, num_players: int) -> list[tuple[int, ...]]:
    """Lineups (agent index per seat, before rotation) of a round robin: the agents themselves when
    there are as many as seats, every combination of ``num_players`` of them when there are more, the agents
    repeated in turn when there are fewer."""
    if num_agents < 1:
        raise ValueError("a tournament needs at least one agent")
    if num_agents == num_players:
        return [tuple(range(num_agents))]
    if num_agents > num_players:
        return [tuple(c) for c in itertools.combinations(range(num_agents), num_players)]
    return [tuple(k % num_agents for k in range(num_players))]


def gauntlet_lineups(num_agents: int, num_players: int) -> list[tuple[int, ...]]:
    """Agent 0 against ``num_players - 1`` copies of each other agent, one lineup per opponent."""
    if num_agents < 2:
        raise ValueError("a gauntlet needs a candidate and at least one opponent")
    return [(0,) + (k,) * (num_players - 1) for k in range(1, num_agents)]


def seatings(lineup: Sequence[int], rotate: bool = True) -> list[tuple[int, ...]]:
    """The seat rotations of a lineup: rotation r seats ``lineup[(s + r) % P]`` at seat s. Rotations that
    give the same seating (repeated agents) are played once."""
    p = len(lineup)
    rotations = (tuple(lineup[(s + r) % p] for s in range(p)) for r in range(p if rotate else 1))
    return list(dict.fromkeys(rotations))


@dataclass
class GameRecord:
    """One game (one episode: a round, or a match of rounds) of a tournament.

    ``scores``, ``lake`` and ``nertz_left`` hold one list per round with one value per seat: the round score
    (individual, as in ``infos[agent]["score"]``), own cards in the lake and cards left in the Nertz pile.
    """

    deal: int
    lineup: int
    rotation: int
    seats: list[int]
    scores: list[list[int]]
    lake: list[list[int]]
    nertz_left: list[list[int]]
    ends: list[str]
    match_scores: list[int]
    ticks: int
    truncated: bool
    illegal: list[int]
    deal_hash: str

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict (one game, every seat)."""
        return dict(self.__dict__)


@dataclass
class Results:
    """Everything a tournament produced; statistics come from :mod:`nertz_env.eval.summary`."""

    agents: list[str]
    labels: list[str]
    num_players: int
    rules: dict[str, Any]
    config: dict[str, Any]
    mode: str
    seed: int
    #: the env seed of each deal by index: every seed given (``deal_seeds=``), else those up to the last deal
    #: finished, so that a run stopped early lists no seed it never played (``deal_seed(seed, i)`` gives any)
    deal_seeds: list[int]
    lineups: list[list[int]]
    games: list[GameRecord] = field(default_factory=list)
    deals_done: list[int] = field(default_factory=list)
    interrupted: bool = False
    elapsed: float = 0.0
    workers: int = 1
    failure: str | None = None  # why a run stopped early other than Ctrl-C (a cluster that failed)
    #: per agent, how a trained policy picked its actions ("most probable" or "sampled"); "" for the others
    play: list[str] = field(default_factory=list)
    #: the deals the run was to play (0 in files written before this field: then ``len(deal_seeds)``)
    deals_planned: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Every game and the tournament's settings as a JSON-ready dict (``results.json``)."""
        kept = {k: v for k, v in self.__dict__.items() if k != "games" and not (k == "failure" and v is None)}
        return {**kept, "games": [g.to_dict() for g in self.games]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Results:
        games = [GameRecord(**g) for g in d.get("games", [])]
        return cls(games=games, **{k: v for k, v in d.items() if k not in ("games", "summary")})


# ---------------------------------------------------------------- playing
def play_game(
    env: NertzParallelEnv,
    seated: Sequence[Agent],
    env_seed: int,
    agent_seeds: Sequence[int],
) -> GameRecord:
    """Play one episode of ``env`` with ``seated[s]`` at seat ``s``; fields deal/lineup/rotation/seats of
    the record are left for the caller."""
    config = env.config
    obs, _ = env.reset(seed=env_seed)
    deal_hash = hashlib.sha1(json.dumps(env.snapshot(), sort_keys=True).encode()).hexdigest()[:16]
    names = env.possible_agents
    for s, agent in enumerate(seated):
        agent.reset(config, s, int(agent_seeds[s]))
    p = config.num_players
    scores: list[list[int]] = []
    lake: list[list[int]] = []
    left: list[list[int]] = []
    ends: list[str] = []
    illegal = [0] * p
    ticks = 0
    truncated = False
    match_scores = [0] * p
    pairs = list(zip(names, seated, strict=True))
    while env.agents:
        actions = {n: a.act(obs[n]["observation"], obs[n]["action_mask"]) for n, a in pairs}
        obs, _, _, truncs, infos = env.step(actions)
        ticks += 1
        illegal = [c + bool(infos[n]["illegal"]) for c, n in zip(illegal, names, strict=True)]
        first = infos[names[0]]
        if first["round_end"]:
            scores.append([int(infos[n]["score"]) for n in names])
            lake.append([int(infos[n]["score_lake"]) for n in names])
            left.append([int(infos[n]["nertz_left"]) for n in names])
            ends.append(ROUND_END_NAMES[first["round_end"]])
            match_scores = [int(infos[n]["match_score"]) for n in names]
            truncated = bool(truncs[names[0]])
    return GameRecord(
        deal=-1,
        lineup=-1,
        rotation=-1,
        seats=[],
        scores=scores,
        lake=lake,
        nertz_left=left,
        ends=ends,
        match_scores=match_scores,
        ticks=ticks,
        truncated=truncated,
        illegal=illegal,
        deal_hash=deal_hash,
    )


@dataclass(frozen=True)
class _Plan:
    """What a worker needs to play any deal of a tournament."""

    agents: tuple[str, ...]
    env_kwargs: tuple[tuple[str, Any], ...]
    lineups: tuple[tuple[int, ...], ...]
    seatings: tuple[tuple[tuple[int, ...], ...], ...]
    deals: int
    deal_seeds: tuple[int, ...] | None  # None: derived from the seed, deal by deal (any number starts at once)
    seed: int
    replays: str | None = None  # a directory: every game is recorded there as a nertz-replay/1 file

    def env_seed(self, deal: int) -> int:
        """The env seed of deal ``deal``."""
        return self.deal_seeds[deal] if self.deal_seeds is not None else deal_seed(self.seed, deal)


class ClusterFailure(Exception):
    """The cluster (:mod:`nertz_env.eval.cluster`) failed during the run: the deals finished so far are kept."""


class Player:
    """One process's env and agent instances (built once, reused for every deal): a worker's, or a cluster
    node's (:mod:`nertz_env.eval.cluster`)."""

    def __init__(self, plan: _Plan, agent_factory: Callable[[str], Agent] = make_agent) -> None:
        self.plan = plan
        self.env = NertzParallelEnv(**dict(plan.env_kwargs))
        self.factory = agent_factory
        self.instances: dict[tuple[int, int], Agent] = {}

    def _agent(self, index: int, copy: int) -> Agent:
        key = (index, copy)
        if key not in self.instances:
            self.instances[key] = self.factory(self.plan.agents[index])
        return self.instances[key]

    def play_deal(self, deal: int) -> tuple[int, list[GameRecord]]:
        plan = self.plan
        games = []
        for li, rotations in enumerate(plan.seatings):
            for r, seating in enumerate(rotations):
                # an agent at several seats: one instance per seat, its copy number the seats it had before
                seated = [self._agent(k, seating[:s].count(k)) for s, k in enumerate(seating)]
                seeds = [agent_seed(plan.seed, deal, li, r, s) for s in range(len(seating))]
                env: Any = self.env
                if plan.replays is not None:
                    labels = _labels(plan.agents)
                    env = RecordReplay(
                        self.env,
                        os.path.join(plan.replays, f"deal{deal:04d}_lineup{li:02d}_rot{r}.jsonl.gz"),
                        agents=[labels[k] for k in seating],
                        meta={"deal": deal, "lineup": li, "rotation": r, "seats": list(seating)},
                    )
                g = play_game(env, seated, plan.env_seed(deal), seeds)
                g.deal, g.lineup, g.rotation, g.seats = deal, li, r, list(seating)
                games.append(g)
        return deal, games


def _worker_player(plan: _Plan) -> Player:
    """Set up a worker process and build its player: the parent handles Ctrl-C, torch gets one thread."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    limit_threads(1)  # before a policy loader imports torch
    return Player(plan)


def _serve(plan: _Plan, conn: connection.Connection) -> None:
    """A worker process: play each list of deals the parent sends on ``conn``, replying with their games or with
    the exception a deal raised."""
    player = _worker_player(plan)
    with contextlib.suppress(EOFError):  # the parent is gone
        while True:
            deals = conn.recv()
            try:
                reply: Any = [player.play_deal(d) for d in deals]
            except Exception as e:
                reply = e
            conn.send(reply)


def _labels(agents: Sequence[str]) -> list[str]:
    """Unique display labels: a spec named twice becomes ``spec#1``, ``spec#2``."""
    counts = collections.Counter(agents)
    return [f"{a}#{agents[:k + 1].count(a)}" if counts[a] > 1 else a for k, a in enumerate(agents)]


@dataclass(frozen=True)
class Tournament:
    """A validated tournament, ready to play (built by :func:`plan_tournament`)."""

    plan: _Plan
    results_template: Results
    factory: Callable[[str], Agent] | None
    notes: tuple[str, ...] = ()  # what the agents assume about the table (e.g. a policy without a record)


def plan_tournament(
    agent_specs: Sequence[str],
    num_players: int = 4,
    deals: int = 100,
    seed: int = 0,
    rules: dict[str, Any] | None = None,
    mode: str = "round_robin",
    deal_seeds: Iterable[int] | None = None,
    rotate: bool = True,
    illegal_action: str = "noop",
    agent_factory: Callable[[str], Agent] | None = None,
    replays: str | None = None,
) -> Tournament:
    """Check everything about a tournament before anything is played (docs/guides/evaluation.md). Raises
    ``ValueError`` (bad rules, table, seeds, or an agent unknown or unfit here) or ``FileNotFoundError``."""
    rules = dict(rules or {})
    if "num_players" in rules:
        raise ValueError("give the table size as num_players, not as a rule")
    config = make_config(num_players=num_players, **rules)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if illegal_action not in ("noop", "raise"):
        raise ValueError(f"illegal_action must be 'noop' or 'raise', got {illegal_action!r}")
    specs = list(agent_specs)
    factory = agent_factory or make_agent
    notes = []
    play: dict[str, str] = {}
    for spec in dict.fromkeys(specs):
        # fail early, in this process, on unknown names, missing checkpoints and agents that cannot play here
        agent = factory(spec)
        check_agent(agent, spec, config)
        play[spec] = str(getattr(agent, "play", "") or "")
        note = getattr(agent, "table_note", None)
        if note:
            notes.append(str(note))
    lineups = (round_robin_lineups if mode == "round_robin" else gauntlet_lineups)(len(specs), num_players)
    seeds = None if deal_seeds is None else tuple(int(s) for s in deal_seeds)
    if seeds is not None:
        if not seeds or any(not 0 <= s < 2**64 for s in seeds):
            raise ValueError("deal seeds must be a non-empty list of integers from 0 to 2**64 - 1")
        deals = len(seeds)
    elif deals < 1:
        raise ValueError(f"a tournament needs at least one deal, got deals={deals}")
    plan = _Plan(
        agents=tuple(specs),
        env_kwargs=tuple(sorted({"illegal_action": illegal_action, **config.to_dict()}.items())),
        lineups=tuple(lineups),
        seatings=tuple(tuple(seatings(lu, rotate)) for lu in lineups),
        deals=int(deals),
        deal_seeds=seeds,
        seed=int(seed),
        replays=None if replays is None else os.path.abspath(replays),
    )
    if replays is not None:
        try:
            os.makedirs(replays, exist_ok=True)
        except OSError as e:
            raise ValueError(f"replays: cannot create the directory {replays!r}: {e.strerror or e}") from None
    template = Results(
        agents=specs,
        labels=_labels(specs),
        num_players=num_players,
        rules=rules,
        config=config.to_dict(),
        mode=mode,
        seed=int(seed),
        deal_seeds=[],  # filled in by play_tournament (see Results.deal_seeds)
        lineups=[list(lu) for lu in lineups],
        play=[play[s] for s in specs],
        deals_planned=int(deals),
    )
    return Tournament(plan, template, agent_factory, tuple(notes))


_WORKER_DIED = (
    "a worker process died: killed, out of memory, or started from a script without the "
    '`if __name__ == "__main__":` guard (a worker imports the script, whose top level plays again)'
)


class _Worker:
    """A spawned process playing the lists of deals it is sent (:func:`_serve`)."""

    def __init__(self, plan: _Plan) -> None:
        context = mp.get_context("spawn")
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(plan, theirs), daemon=True)
        self.process.start()
        theirs.close()

    def send(self, deals: list[int]) -> None:
        try:
            self.conn.send(deals)
        except OSError:
            raise RuntimeError(_WORKER_DIED) from None

    def receive(self) -> list[tuple[int, list[GameRecord]]]:
        try:
            reply = self.conn.recv()
        except (EOFError, OSError):
            raise RuntimeError(_WORKER_DIED) from None
        if isinstance(reply, BaseException):
            raise reply
        return reply


def _play_with_workers(
    plan: _Plan, n: int, workers: int, done: dict[int, list[GameRecord]], bar: Any,
    factory: Callable[[str], Agent] = make_agent,
) -> None:
    """Play the deals with this process and ``workers - 1`` spawned ones, a few deals at a time as each gets free:
    this process starts at once (its agents are loaded), the workers join when they have imported. A worker that
    dies raises here; an error or Ctrl-C terminates the workers at once."""
    chunk = max(1, min(4, n // (32 * workers)))  # small: the parent and the workers share the tail
    next_deal = 0
    pool: list[_Worker] = []

    def send(worker: _Worker) -> None:
        nonlocal next_deal
        if next_deal < n:
            worker.send(list(range(next_deal, min(n, next_deal + chunk))))
            next_deal = min(n, next_deal + chunk)

    def finished(deal: int, games: list[GameRecord]) -> None:
        done[deal] = games
        bar.update(1)

    try:
        for _ in range(workers - 1):
            pool.append(_Worker(plan))
            for _ in range(2):  # one list of deals ahead
                send(pool[-1])
        player = Player(plan, factory)
        while len(done) < n:
            if any(w.process.exitcode is not None for w in pool):
                raise RuntimeError(_WORKER_DIED)
            ready = connection.wait([w.conn for w in pool], timeout=0 if next_deal < n else 0.1)
            for w in [w for w in pool if w.conn in ready]:
                for deal, games in w.receive():
                    finished(deal, games)
                send(w)
            if next_deal < n:
                next_deal += 1
                finished(*player.play_deal(next_deal - 1))
    finally:
        for w in pool:
            w.process.terminate()
        for w in pool:
            w.process.join()


def play_tournament(
    tournament: Tournament, workers: int = 1, progress: bool = False, cluster: Any = None
) -> Results:
    """Play a planned tournament; on Ctrl-C return the deals finished so far, marked ``interrupted``.

    ``cluster``: a :class:`nertz_env.eval.cluster.Cluster` (:func:`nertz_env.eval.cluster.prepare`) plays
    the deals as Ray tasks instead of ``workers`` local processes (the records are the same); when the
    cluster fails mid-run the finished deals are returned, marked ``interrupted`` with the ``failure``."""
    plan = tournament.plan
    if tournament.factory is not None and (workers > 1 or cluster is not None):
        raise ValueError("a custom agent_factory only works with workers=1 and no cluster")
    results = dataclasses.replace(tournament.results_template, games=[], deals_done=[])
    n = plan.deals
    workers = max(1, min(int(workers), n))  # work is split by deal: more workers than deals would idle
    results.workers = workers if cluster is None else cluster.cpus
    done: dict[int, list[GameRecord]] = {}
    start = time.perf_counter()
    from tqdm import tqdm

    bar = tqdm(total=n, unit="deal", desc="deals", dynamic_ncols=True, disable=not progress)
    # torch (when a policy loaded it) plays in one thread, the caller's setting restored after: a forward pass
    # at batch size 1 gains nothing from more, and spinning threads slow it on busy cores
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else 1
    try:
        if torch is not None:
            torch.set_num_threads(1)
        if cluster is not None:
            cluster.play(n, done, bar)
        else:
            _play_with_workers(plan, n, workers, done, bar, tournament.factory or make_agent)
    except ClusterFailure as e:
        results.interrupted = True
        results.failure = str(e)
    except KeyboardInterrupt:
        results.interrupted = True
    finally:
        bar.close()
        if torch is not None:
            torch.set_num_threads(threads)
    results.elapsed = time.perf_counter() - start
    results.deals_done = sorted(done)
    results.games = [g for d in results.deals_done for g in done[d]]
    last = results.deals_done[-1] + 1 if done else 0
    results.deal_seeds = list(plan.deal_seeds) if plan.deal_seeds is not None else [
        deal_seed(plan.seed, d) for d in range(last)]
    return results


def run_tournament(
    agent_specs: Sequence[str],
    num_players: int = 4,
    deals: int = 100,
    seed: int = 0,
    rules: dict[str, Any] | None = None,
    workers: int = 1,
    mode: str = "round_robin",
    deal_seeds: Iterable[int] | None = None,
    rotate: bool = True,
    progress: bool = False,
    illegal_action: str = "noop",
    agent_factory: Callable[[str], Agent] | None = None,
    replays: str | None = None,
) -> Results:
    """Plan (:func:`plan_tournament`) and play a tournament in ``workers`` processes; on Ctrl-C the deals
    finished so far, marked ``interrupted``. The arguments: docs/guides/evaluation.md. Statistics:
    :func:`nertz_env.eval.summarize`."""
    tournament = plan_tournament(
        agent_specs, num_players, deals, seed, rules, mode, deal_seeds, rotate, illegal_action, agent_factory, replays
    )
    return play_tournament(tournament, workers, progress)
