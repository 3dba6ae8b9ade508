"""The engine: random-rollout invariants in every variant, the fast observation path against a full rewrite,
compiled against plain Python, the generator, pinned observations, the packed state and the compile cache."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest
from numba.core.registry import cpu_target

import nertz_env
from conftest import card_counts, expected_counts
from nertz_env.config import NertzConfig
from nertz_env.engine import _abi, _cache, rules
from nertz_env.engine.state import allocate
from variants import VARIANTS, variant_id

ROOT = Path(__file__).resolve().parent.parent
needs_jit = pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="needs numba's compiler")


# ---------------------------------------------------------------------------------------------- random rollouts
def rollout_and_check(rules_: dict, tables: int, seed: int, rewrite: int, max_steps: int = 20_000) -> int:
    """Random play (one action in ten unmasked) until every table finished an episode. Every tick: each card
    once, the wait legal, observations in [0, 1], exactly the unmasked actions illegal, the first ``rewrite``
    tables' observations and masks those of a full rewrite (``rules.observe_table``). Round ends: the score is
    its breakdown and the match total's growth; episode ends: the rewards sum to the (team's) score."""
    venv = nertz_env.vector_env(tables, copy=False, **rules_)
    venv.reset(seed=seed)
    cfg, state = venv.config, venv._state
    team = np.array(cfg.team_of)
    want = expected_counts(cfg.jokers)
    wait = venv.actions.lookup("wait")
    rng = np.random.default_rng(seed)
    rows, seats = np.arange(tables)[:, None], np.arange(cfg.num_players)[None, :]
    returns = np.zeros((tables, cfg.num_players))
    finished = np.zeros(tables, dtype=np.int64)
    for tick in range(max_steps):
        actions = venv.sample_actions().copy()
        wild = rng.random(actions.shape) < 0.1
        actions[wild] = rng.integers(0, venv.actions.n, size=int(wild.sum()))
        legal = state.mask[rows, seats, actions] == 1
        match_before = state.match_score.copy()
        obs, rew, term, trunc, info = venv.step(actions)
        live = ~info["autoreset"]
        assert (card_counts(state) == want).all(), "a card was lost or duplicated"
        assert (obs["action_mask"][..., wait] == 1).all()
        assert obs["observation"].min() >= 0.0 and obs["observation"].max() <= 1.0, "outside the declared Box"
        np.testing.assert_array_equal(info["illegal"][live], ~legal[live])
        fast_obs, fast_mask = state.obs[:rewrite].copy(), state.mask[:rewrite].copy()
        for t in range(rewrite):
            rules.observe_table(state, t)
        for t, p in zip(*np.nonzero((fast_obs != state.obs[:rewrite]).any(-1) | (fast_mask != state.mask[:rewrite]).any(-1)),
                        strict=True):
            bad_obs = np.flatnonzero(fast_obs[t, p] != state.obs[t, p]).tolist()
            bad_mask = np.flatnonzero(fast_mask[t, p] != state.mask[t, p]).tolist()
            raise AssertionError(f"tick {tick}, table {t}, seat {p}: obs {bad_obs}, mask {bad_mask} differ")
        ended = (info["round_end"] != 0) & live
        parts = (state.score_lake.astype(np.int64) - cfg.nertz_penalty * state.score_nertz + state.score_bonus
                 - cfg.false_call_penalty * state.score_false)
        np.testing.assert_array_equal(info["score"][ended], parts[ended])
        np.testing.assert_array_equal(state.match_score[ended] - match_before[ended], parts[ended])
        returns[live] += rew[live]
        for t in np.flatnonzero(term[:, 0] | trunc[:, 0]):
            assert info["round_end"][t] in (1, 2, 3)
            score = state.match_score[t].astype(np.int64)
            np.testing.assert_array_equal(returns[t], [score[team == team[p]].sum() for p in range(cfg.num_players)])
            returns[t] = 0
            finished[t] += 1
        if (finished >= 1).all():
            return int(finished.sum())
    raise AssertionError(f"{(finished == 0).sum()} tables never finished an episode in {max_steps} ticks")


@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_random_rollouts__keep_every_invariant(variant: dict) -> None:
    assert rollout_and_check(variant, 32, seed=1234, rewrite=8) >= 32


@pytest.mark.long
def test_random_rollouts__large_batch_of_1024_tables() -> None:
    assert rollout_and_check({}, 1024, seed=99, rewrite=0) >= 1024


# ---------------------------------------------------------------------------------------------- the seat's memory
@pytest.mark.parametrize(
    "rules",
    [{}, {"draw": 1, "stall_ticks": 12}, {"recycle": "shuffle", "jokers": 2, "draw": 2},
     {"allow_rotate": True, "jokers": 1, "turn_based": True, "num_players": 3}, {"rounds": 2, "num_players": 2}],
    ids=variant_id,
)
def test_memory__places_only_cards_the_seat_saw_where_they_are(rules: dict) -> None:
    """Random games: the memory places only cards the seat saw this round, where they are; unseen are exactly
    the cards (and jokers) it has not seen."""
    env = nertz_env.parallel_env(memory=True, max_ticks=300, **rules)
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(5)
    deck = {nertz_env.cards.to_text(c) for c in range(52)}
    shown: list[set[str]] = [set() for _ in env.possible_agents]
    placed = 0
    while env.agents:
        snap = env.snapshot()
        for p, a in enumerate(env.possible_agents):
            d = nertz_env.decode(obs[a]["observation"], env.config)
            if snap["tick"] == 0:
                shown[p].clear()
            work = [c for pile in d["work"] for c in pile]
            shown[p] |= {d["nertz_top"], d["waste_top"], *work} - {None}
            me, memory = snap["players"][p], d["memory"]
            for pile in ("stock", "waste"):
                for mine, true in zip(memory[pile], me[pile], strict=True):
                    assert mine is None or (mine == true and mine in shown[p]), (p, pile, mine, true)
                    placed += mine is not None
            assert set(memory["unseen"]) - {"**"} == deck - shown[p]
            lake = [c for f in snap["lake"] for c, q in f if q == p]
            jokers = sum(c.startswith("*") for c in [d["nertz_top"] or "", *work, *lake])
            known = sum(c == "**" for c in memory["stock"] + memory["waste"])
            assert memory["unseen"].count("**") == env.config.jokers - jokers - known
        obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()})
    assert placed > 1000


# ---------------------------------------------------------------------------------------------- determinism
ROLLOUT = """
import json, sys, warnings
import numpy as np
import nertz_env
warnings.simplefilter("ignore")  # uint64 wrap-around warnings of plain-Python numpy scalars
env = nertz_env.parallel_env(jokers=1, allow_tuck=True, allow_rotate=True, num_players=3, stall_ticks=20)
obs, _ = env.reset(seed=3)
rng = np.random.default_rng(0)
snaps = []
for _ in range(int(sys.argv[1])):
    obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()})
    if not env.agents:
        obs, _ = env.reset()
    snaps.append(env.snapshot())
print(json.dumps(snaps))
"""


def test_compiled_rules__equal_the_same_rules_run_as_plain_python() -> None:
    def rollout(disable_jit: bool) -> list:
        env = {**os.environ, "NUMBA_DISABLE_JIT": "1" if disable_jit else "0"}
        out = subprocess.run([sys.executable, "-c", ROLLOUT, "150"], env=env, capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout)

    compiled, plain = rollout(False), rollout(True)
    assert len(compiled) == 150
    for tick, (a, b) in enumerate(zip(compiled, plain, strict=True)):
        assert a == b, f"diverged at tick {tick}"


@pytest.mark.parametrize(
    ("rules", "digest"),
    [
        ({}, "ab58a3e614f81ee1"),
        ({"num_players": 3, "rounds": 2}, "77245a24a086e990"),
        ({"jokers": 1, "allow_tuck": True, "allow_rotate": True, "turn_based": True}, "0d7d0bfe3b01683f"),
    ],
)
def test_observations__are_pinned_when_the_observation_options_are_off(rules: dict, digest: str) -> None:
    """A seeded game's observations and masks, hashed before the last_moves and memory options existed."""
    env = nertz_env.parallel_env(**rules)
    obs, _ = env.reset(seed=11)
    h = hashlib.sha256()
    rng = np.random.default_rng(5)
    while env.agents:
        actions = {}
        for a in env.agents:
            h.update(obs[a]["observation"].tobytes())
            h.update(obs[a]["action_mask"].tobytes())
            actions[a] = int(rng.choice(np.flatnonzero(obs[a]["action_mask"])))
        obs, *_ = env.step(actions)
    assert h.hexdigest()[:16] == digest


# ---------------------------------------------------------------------------------------------- imports and config
# One fresh process, its imports in the order a user's would come: a user's own @njit that types a state
# before the rules are imported; the rules alone (what the compile cache must key on); the engine's drivers and
# snapshots (no framework); then play without a render mode (no drawing).
FRESH = """
import json, sys, numba
from nertz_env.config import NertzConfig
from nertz_env.engine.state import allocate
out = {"rules_before_njit": "nertz_env.engine.rules" in sys.modules}
f = numba.njit(lambda state: state.tick[0])
f(allocate(NertzConfig(num_players=2), 1))
out["njit_type"] = type(f.signatures[0][0]).__name__
import nertz_env.engine.rules
out["rules_imports"] = [m for m in sys.modules if m.startswith("nertz_env")]
import nertz_env.engine.batch, nertz_env.snapshot
out["frameworks"] = [m for m in ("pettingzoo", "torch", "stable_baselines3", "matplotlib") if m in sys.modules]
from nertz_env.environment import parallel_env
from nertz_env.vector import vector_env
e = parallel_env(num_players=3); e.reset(seed=1)
for _ in range(20): e.step({a: 1 for a in e.agents})
v = vector_env(4); v.reset(seed=0)
for _ in range(20): v.step(v.sample_actions())
out["drawing"] = [m for m in ("nertz_env.render.draw", "resvg_py", "PIL") if m in sys.modules]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def fresh() -> dict:
    out = subprocess.run([sys.executable, "-c", FRESH], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_imports__the_engine_pulls_in_no_framework_and_play_without_a_render_mode_no_drawing(fresh: dict) -> None:
    assert fresh["frameworks"] == [] and fresh["drawing"] == []


def test_config_derivations__are_built_once_per_config_and_shared_read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from nertz_env import actions, observation
    from nertz_env.engine import state

    builds = {"actions": 0, "layout": 0}
    for name, cls in (("actions", actions.ActionTable), ("layout", observation.ObsLayout)):
        def counted(self: object, config: NertzConfig, _init=cls.__init__, _name=name) -> None:  # type: ignore[no-untyped-def]
            builds[_name] += 1
            _init(self, config)

        monkeypatch.setattr(cls, "__init__", counted)
    for cached in (actions.action_table, observation.obs_layout, state.config_array):
        cached.cache_clear()
    rules_ = {"num_players": 3, "work_piles": 5, "draw": 2}
    envs = [nertz_env.parallel_env(**rules_), nertz_env.parallel_env(**rules_)]
    vec = nertz_env.vector_env(num_tables=2, **rules_)
    for e in [*envs, vec]:
        e.reset(seed=1)
    assert builds == {"actions": 1, "layout": 1} and state.config_array.cache_info().misses == 1
    assert envs[0].actions is envs[1].actions is vec.actions
    shared = (envs[0].actions.layout, envs[0].obs_layout.offsets, state.config_array(envs[0].config))
    assert not any(a.flags.writeable for a in shared)
    # each table state holds its own writable copy (the compiled rules take writable arrays)
    assert envs[0]._state.cfg.flags.writeable and envs[0]._state.cfg is not state.config_array(envs[0].config)


# ---------------------------------------------------------------------------------------------- the packed state
def test_a_table_state_is_one_argument_of_a_compiled_call() -> None:
    """The state crosses compiled calls as one struct value (``engine._abi``), not flattened to scalars."""
    state = allocate(NertzConfig(num_players=4), 2)
    typ = numba.typeof(state)
    assert isinstance(typ, _abi.PackedNamedTuple)
    assert typ.fields == type(state)._fields and typ.types == tuple(numba.typeof(a) for a in state)
    assert len(cpu_target.target_context.get_arg_packer([typ, numba.int64]).argument_types) == 2
    plain = numba.core.types.NamedTuple(typ.types, type(state))
    assert len(cpu_target.target_context.get_arg_packer([plain]).argument_types) > 200
    # a short name (it is mangled into every symbol), one type per field types
    assert len(str(typ)) < 40 and numba.typeof(allocate(NertzConfig(num_players=4), 5)) is typ
    state = allocate(NertzConfig(num_players=3), 2)  # and every entry point type-checks on it
    rules.reset_block(state, 0, 2)
    rules.step_block(state, np.zeros((2, 3), np.int64), True, 0, 2)
    assert int(state.tick.sum()) == 2


def test_a_users_own_njit_that_sees_a_state_first_gets_the_packed_type(fresh: dict) -> None:
    """numba types a named tuple once per process: else every call of the rules would be typed slowly."""
    assert not fresh["rules_before_njit"] and fresh["njit_type"] == "PackedNamedTuple"


# ---------------------------------------------------------------------------------------------- the compile cache
# numba's own cache=True notices only edits to the file a function is defined in; keyed_jit keys the cache on
# the engine's sources (_cache.SOURCES) too.
def test_cache_sources__list_every_module_of_the_package_the_compiled_code_imports(fresh: dict) -> None:
    loaded = list(fresh["rules_imports"])
    for file in ("agents/kernels.py", "agents/forward.py", "moves.py"):  # their own files are keyed by numba
        text = (_cache.PACKAGE / file).read_text() if (_cache.PACKAGE / file).is_file() else (ROOT / file).read_text()
        loaded += re.findall(r"^from (nertz_env\.[\w.]+) import", text, re.M)
    files = set()
    for module in set(loaded) - {"nertz_env", "nertz_env.registration"}:
        rel = module.removeprefix("nertz_env.").replace(".", "/")
        files.add(f"{rel}/__init__.py" if (_cache.PACKAGE / rel).is_dir() else f"{rel}.py")
    assert files <= set(_cache.SOURCES), sorted(files - set(_cache.SOURCES))


def _run(tmp: Path, code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh process with ``tmp`` on the path and its own numba cache (unless ``env`` says)."""
    base = {k: v for k, v in os.environ.items() if k not in ("NUMBA_DISABLE_JIT", "XDG_CACHE_HOME")}
    base.update({"NUMBA_CACHE_DIR": str(tmp / "cache"), "PYTHONPATH": f"{tmp}{os.pathsep}{ROOT}", **(env or {})})
    out = subprocess.run([sys.executable, "-c", code], env=base, cwd=tmp, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out


def _package(tmp: Path, name: str, files: dict[str, str]) -> None:
    (tmp / name).mkdir()
    for file, text in {"__init__.py": "", **files}.items():
        (tmp / name / file).write_text(textwrap.dedent(text))


NOTICE = "nertz_env: compiling the rules with numba for their first use; later processes load them from numba's cache"


@needs_jit
def test_cache__editing_a_listed_source_never_runs_the_stale_code_and_a_compile_is_announced_once(tmp_path: Path) -> None:
    """``g() = f() + 1``, ``f() = helper() * 10``, ``helper`` a constant two files away, keyed on a copy of
    the engine's sources. A process that compiles says so in one line; one that loads says nothing."""
    for name in _cache.SOURCES:
        (tmp_path / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(_cache.PACKAGE / name, tmp_path / "src" / name)
    _package(tmp_path, "cachepkg", {
        "consts.py": "VALUE = 1\n",
        "helpers.py": "import numba\nfrom cachepkg.consts import VALUE\n\n@numba.njit\ndef helper():\n    return VALUE\n",
        "keyed.py": "from cachepkg.helpers import helper\nfrom nertz_env.engine._cache import keyed_jit\n\n"
                    "@keyed_jit({})\ndef f():\n    return helper() * 10\n\n"
                    "@keyed_jit({})\ndef g():\n    return f() + 1\n",
    })
    code = (f"from pathlib import Path; from nertz_env.engine import _cache; _cache.PACKAGE = Path({str(tmp_path / 'src')!r})\n"
            "from cachepkg.keyed import g; v = g(); print(v, sum(g.stats.cache_hits.values()))")

    def run() -> tuple[int, int, list[str]]:
        out = _run(tmp_path, code)
        value, hits = out.stdout.split()
        return int(value), int(hits), [x for x in out.stderr.splitlines() if "compiling" in x]

    assert run() == (11, 0, [NOTICE])  # compiled (two functions, one notice), then saved
    assert run() == (11, 1, [])  # loaded from the cache
    (tmp_path / "cachepkg" / "consts.py").write_text("VALUE = 2\n")
    with open(tmp_path / "src" / "cards.py", "a") as f:  # and an edit to a listed source
        f.write("\n# edited\n")
    assert run() == (21, 0, [NOTICE])  # compiled afresh (numba's own cache would load the old code)


_NO_CACHE_CHILD = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from ropkg.fns import f, g
    value = f() + g()
print(json.dumps({"value": value, "warnings": [[w.category.__name__, str(w.message)] for w in caught]}))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="numba's user-wide cache is under HOME on Linux only (macOS: /Library/Caches, writable by admins; Windows: no HOME), and read-only folders are made with chmod or root's geteuid")
@needs_jit
def test_cache__no_writable_folder_compiles_in_memory_with_one_warning(tmp_path: Path) -> None:
    """No writable NUMBA_CACHE_DIR, __pycache__ or home: the rules compile in memory, one warning."""
    _package(tmp_path, "ropkg", {"fns.py": "from nertz_env.engine._cache import keyed_jit\n\n"
                                           "@keyed_jit({})\ndef f():\n    return 1\n\n"
                                           "@keyed_jit({})\ndef g():\n    return 2\n"})
    pkg, cache, home = tmp_path / "ropkg", tmp_path / "cache", "/"
    cache.mkdir()
    if os.geteuid() == 0:  # root writes through any permission: files in the way instead of folders
        (tmp_path / "blocker").write_text("")
        (pkg / "__pycache__").write_text("")
        cache, home = tmp_path / "blocker" / "cache", str(tmp_path / "blocker" / "home")
    else:
        cache.chmod(0o555)
        pkg.chmod(0o555)
    try:
        out = _run(tmp_path, _NO_CACHE_CHILD, {"HOME": home, "NUMBA_CACHE_DIR": str(cache)})
    finally:
        pkg.chmod(0o755)
        if cache.is_dir():
            cache.chmod(0o755)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["value"] == 3
    ours = [m for c, m in result["warnings"] if c == "CompileCacheWarning"]
    assert len(ours) == 1, result["warnings"]  # one for the process, not one per function
    assert "NUMBA_CACHE_DIR" in ours[0] and "compile in memory" in ours[0]
