"""The PettingZoo adapters: the ecosystem's own checks, spaces, infos, bad input, snapshots, rendering."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import nertz_env
from nertz_env.actions import action_table
from nertz_env.infos import score_of
from nertz_env.snapshot import SnapshotError
from variants import VARIANTS, variant_id


def random_legal(obs: dict, rng: np.random.Generator) -> dict:
    return {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()}


def test_engine_import__pulls_in_no_framework() -> None:
    # (gymnasium is loaded by the package itself, which registers its ids; the engine's modules import none)
    code = (
        "import sys, nertz_env.engine.rules, nertz_env.engine.batch, nertz_env.snapshot;"
        "print([m for m in ('pettingzoo', 'torch', 'stable_baselines3', 'matplotlib') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# PettingZoo's own conformance tests (parallel_api_test, api_test, seed_test, max_cycles_test, render_test)
# run in tests/test_clients.py with the other clients.


def test_config_derivations__are_built_once_per_config(monkeypatch: pytest.MonkeyPatch) -> None:
    # The action table, observation layout and config vector of a config are built once and shared by every
    # environment of that config, read-only.
    from nertz_env import actions, observation
    from nertz_env.engine import state

    builds = {"actions": 0, "layout": 0}
    table_init, layout_init = actions.ActionTable.__init__, observation.ObsLayout.__init__

    def count_table(self: actions.ActionTable, config: nertz_env.NertzConfig) -> None:
        builds["actions"] += 1
        table_init(self, config)

    def count_layout(self: observation.ObsLayout, config: nertz_env.NertzConfig) -> None:
        builds["layout"] += 1
        layout_init(self, config)

    monkeypatch.setattr(actions.ActionTable, "__init__", count_table)
    monkeypatch.setattr(observation.ObsLayout, "__init__", count_layout)
    for cached in (actions.action_table, observation.obs_layout, state.config_array):
        cached.cache_clear()
    rules = {"num_players": 3, "work_piles": 5, "draw": 2}
    envs = [nertz_env.parallel_env(**rules), nertz_env.parallel_env(**rules)]
    vec = nertz_env.vector_env(num_tables=2, **rules)
    for e in envs:
        e.reset(seed=1)
    vec.reset(seed=1)
    assert builds == {"actions": 1, "layout": 1}
    assert state.config_array.cache_info().misses == 1
    assert envs[0].actions is envs[1].actions is vec.actions
    shared = (envs[0].actions.layout, envs[0].obs_layout.offsets, state.config_array(envs[0].config))
    assert not any(a.flags.writeable for a in shared)
    with pytest.raises(ValueError, match="read-only"):
        envs[0].actions.layout[0] = 0
    # each table state holds its own writable copies (the compiled rules take writable arrays)
    assert envs[0]._state.cfg.flags.writeable and envs[0]._state.cfg is not state.config_array(envs[0].config)


def test_raw_env__is_the_unwrapped_aec_form() -> None:
    e = nertz_env.raw_env(num_players=3)
    e.reset(seed=0)
    assert e.possible_agents == ["player_0", "player_1", "player_2"]


@pytest.mark.parametrize("rules", VARIANTS, ids=variant_id)
def test_spaces__contain_every_observation_and_masks_are_never_empty(rules: dict) -> None:
    env = nertz_env.parallel_env(**rules)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(150):
        for agent, o in obs.items():
            assert env.observation_space(agent).contains(o)
            assert o["action_mask"].dtype == np.int8 and o["action_mask"].sum() >= 1
            assert o["action_mask"][action_table(env.config).lookup("wait")] == 1
        obs, *_ = env.step(random_legal(obs, rng))
        if not env.agents:
            obs, _ = env.reset()


def test_same_seed__same_game_step_by_step() -> None:
    a, b = nertz_env.parallel_env(), nertz_env.parallel_env()
    oa, _ = a.reset(seed=11)
    ob, _ = b.reset(seed=11)
    rng = np.random.default_rng(5)
    for _ in range(300):
        for agent in oa:
            np.testing.assert_array_equal(oa[agent]["observation"], ob[agent]["observation"])
            np.testing.assert_array_equal(oa[agent]["action_mask"], ob[agent]["action_mask"])
        acts = random_legal(oa, rng)
        oa, ra, ta, tra, _ = a.step(acts)
        ob, rb, tb, trb, _ = b.step(acts)
        assert ra == rb and ta == tb and tra == trb
        if not a.agents:
            oa, _ = a.reset()
            ob, _ = b.reset()
    assert a.snapshot() == b.snapshot()


def test_reset_without_seed__continues_the_sequence_of_the_first_seed() -> None:
    a, b = nertz_env.parallel_env(), nertz_env.parallel_env()
    a.reset(seed=4)
    b.reset(seed=4)
    a.reset()
    b.reset()
    assert a.snapshot() == b.snapshot()
    c = nertz_env.parallel_env()
    c.reset(seed=5)
    c.reset()
    assert c.snapshot()["players"] != a.snapshot()["players"]


def test_illegal_action__is_a_flagged_wait_by_default() -> None:
    env = nertz_env.parallel_env()
    obs, _ = env.reset(seed=0)
    before = env.snapshot()
    illegal = int(np.flatnonzero(obs["player_0"]["action_mask"] == 0)[0])
    acts = {a: 0 for a in env.agents}
    acts["player_0"] = illegal
    acts["player_1"] = 10_000
    acts["player_2"] = -3
    _, _rewards, *_, infos = env.step(acts)
    assert infos["player_0"]["illegal"] and infos["player_1"]["illegal"] and infos["player_2"]["illegal"]
    assert not infos["player_3"]["illegal"]
    assert all(i["action"] == 0 for i in infos.values())
    after = env.snapshot()
    assert after["players"] == before["players"] and after["lake"] == before["lake"]


def test_illegal_action__raise_mode_raises_before_changing_anything() -> None:
    env = nertz_env.parallel_env(illegal_action="raise")
    obs, _ = env.reset(seed=0)
    before = env.snapshot()
    illegal = int(np.flatnonzero(obs["player_0"]["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match="not legal"):
        env.step({**{a: 0 for a in env.agents}, "player_0": illegal})
    assert env.snapshot() == before


@pytest.mark.parametrize("bad", ["flip", 1.5, [1, 2], object()])
def test_non_integer_action__raises_a_clear_error(bad: object) -> None:
    env = nertz_env.parallel_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="player_0"):
        env.step({**{a: 0 for a in env.agents}, "player_0": bad})


def test_numpy_integer_actions__are_accepted() -> None:
    env = nertz_env.parallel_env()
    env.reset(seed=0)
    _, _, _, _, infos = env.step({a: np.int64(0) if i % 2 else np.array(1) for i, a in enumerate(env.agents)})
    assert not any(i["illegal"] for i in infos.values())


def test_unknown_agent__raises_naming_it() -> None:
    env = nertz_env.parallel_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unknown agent 'player_9'"):
        env.step({"player_9": 0})


def test_missing_agent__waits_and_is_flagged() -> None:
    env = nertz_env.parallel_env()
    env.reset(seed=0)
    *_, infos = env.step({"player_0": 1})
    assert infos["player_1"]["missing_action"] and infos["player_1"]["action"] == 0
    assert infos["player_0"]["missing_action"] is False
    strict = nertz_env.parallel_env(illegal_action="raise")
    strict.reset(seed=0)
    with pytest.raises(ValueError, match="no action given"):
        strict.step({"player_0": 1})


def test_step_after_the_end__raises_a_clear_error() -> None:
    env = nertz_env.parallel_env(max_ticks=2)
    env.reset(seed=0)
    env.step({a: 0 for a in env.agents})
    _, _, terms, truncs, _ = env.step({a: 0 for a in env.agents})
    assert all(truncs.values()) and not any(terms.values()) and env.agents == []
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step({"player_0": 0})


@pytest.mark.parametrize(
    ("rules", "match"),
    [
        ({"num_players": 9}, "num_players"),
        ({"num_players": 1}, "num_players"),
        ({"nertz_size": 14}, "nertz_size"),
        ({"work_piles": 3}, "work_piles"),
        ({"draw": 0}, "draw"),
        ({"recycle": "riffle"}, "recycle"),
        ({"call_mode": "shout"}, "call_mode"),
        ({"jokers": 3}, "jokers"),
        ({"teams": True, "num_players": 3}, "teams"),
        ({"teams": [[0, 1], [1, 2, 3]]}, "teams"),
        ({"teams": True, "num_players": 2}, "teams=True .* at least 4"),
        ({"teams": [[0, 1, 2, 3]]}, "teams=.* at least two teams"),
        ({"teams": [[0, 1]], "num_players": 2}, "teams=.* at least two teams"),
        ({"allow_tuck": 1}, "allow_tuck"),
        ({"target_score": 50, "rounds": 3}, "exclusive"),
        ({"max_ticks": 0}, "max_ticks"),
        ({"colour_blind": True}, "unknown option"),
        ({"render_mode": "video"}, "render_mode"),
        ({"illegal_action": "ignore"}, "illegal_action"),
    ],
)
def test_bad_option__value_error_names_it(rules: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        nertz_env.parallel_env(**rules)


@pytest.mark.parametrize("seed", [-1, 1.5, "7", True])
def test_bad_seed__value_error(seed: object) -> None:
    with pytest.raises(ValueError, match="seed"):
        nertz_env.parallel_env().reset(seed=seed)  # type: ignore[arg-type]


def test_unknown_reset_option__is_ignored_with_a_warning_every_time() -> None:
    env = nertz_env.parallel_env()
    for _ in range(2):
        with pytest.warns(UserWarning, match=r"ignores unknown option\(s\) \['snapshots'\]; the options are 'snapshot'"):
            env.reset(seed=0, options={"snapshots": {}})
    assert env.agents


@pytest.mark.parametrize("rules", VARIANTS[::3], ids=variant_id)
def test_snapshot__round_trips_through_json_and_continues_identically(rules: dict) -> None:
    env = nertz_env.parallel_env(**rules)
    obs, _ = env.reset(seed=21)
    rng = np.random.default_rng(1)
    for _ in range(40):
        obs, *_ = env.step(random_legal(obs, rng))
        if not env.agents:
            obs, _ = env.reset()
    snap = json.loads(json.dumps(env.snapshot()))
    assert snap["format"] == "nertz-snapshot/1"
    twin = nertz_env.parallel_env(**rules)
    tobs, _ = twin.reset(options={"snapshot": snap})
    for _ in range(200):
        for agent in obs:
            np.testing.assert_array_equal(obs[agent]["observation"], tobs[agent]["observation"])
            np.testing.assert_array_equal(obs[agent]["action_mask"], tobs[agent]["action_mask"])
        acts = random_legal(obs, rng)
        obs, r1, t1, tr1, _ = env.step(acts)
        tobs, r2, t2, tr2, _ = twin.step(acts)
        assert (r1, t1, tr1) == (r2, t2, tr2)
        assert env.snapshot() == twin.snapshot()
        if not env.agents:
            obs, _ = env.reset()
            tobs, _ = twin.reset()


def test_snapshot__of_another_config_is_refused_naming_the_option() -> None:
    snap = nertz_env.parallel_env(draw=1).snapshot()
    with pytest.raises(SnapshotError, match="draw=1 in the snapshot but 3 here"):
        nertz_env.parallel_env().reset(options={"snapshot": snap})


def test_observation__hides_hidden_cards() -> None:
    """Reordering the hidden cards (stock, Nertz pile below its top) changes no seat's observation."""
    env = nertz_env.parallel_env()
    obs, _ = env.reset(seed=8)
    snap = env.snapshot()
    pl = snap["players"][1]
    pl["stock"] = pl["stock"][::-1]
    pl["nertz"] = pl["nertz"][:-1][::-1] + pl["nertz"][-1:]
    other = nertz_env.parallel_env()
    obs2, _ = other.reset(options={"snapshot": snap})
    for agent in obs:
        np.testing.assert_array_equal(obs[agent]["observation"], obs2[agent]["observation"])


def test_decode__reads_back_the_visible_layout() -> None:
    env = nertz_env.parallel_env(jokers=2)
    obs, _ = env.reset(seed=2)
    rng = np.random.default_rng(3)
    for _ in range(60):
        obs, *_ = env.step(random_legal(obs, rng))
    snap = env.snapshot()
    for p, agent in enumerate(env.agents):
        d = nertz_env.decode(obs[agent]["observation"], env.config)
        mine = snap["players"][p]
        assert d["nertz_count"] == len(mine["nertz"])
        assert d["nertz_top"] == (mine["nertz"][-1] if mine["nertz"] else None)
        assert d["waste_top"] == (mine["waste"][-1] if mine["waste"] else None)
        assert d["stock_count"] == len(mine["stock"])
        assert d["work"] == mine["work"]
        opp = snap["players"][(p + 1) % 4]
        assert d["opponents"][0]["nertz_count"] == len(opp["nertz"])


def test_render__ansi_shows_every_layout_and_the_lake() -> None:
    env = nertz_env.parallel_env(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and "Lake" in text
    assert all(f"player_{p}" in text for p in range(4))


def test_describe_action__names_every_index() -> None:
    table = action_table(nertz_env.make_config(allow_tuck=True, jokers=1, call_mode="manual", allow_rotate=True))
    texts = [table.describe(i) for i in range(table.n)]
    assert len(set(texts)) == table.n
    assert nertz_env.describe_action(0) == "wait a tick"
    with pytest.raises(ValueError, match="action index"):
        nertz_env.describe_action(10_000)


def test_round_end_infos__score_breakdown_adds_up_and_counts_the_nertz_cards_left() -> None:
    env = nertz_env.parallel_env(num_players=3, nertz_penalty=3, call_bonus=4, max_ticks=60)
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(0)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    infos: dict = {}
    while env.agents:
        acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
        obs, rew, _, _, infos = env.step(acts)
        for a, r in rew.items():
            totals[a] += r
    for a, info in infos.items():
        s = score_of(info)
        assert s["nertz_penalty"] == -3 * s["nertz_left"]
        assert s["lake"] + s["nertz_penalty"] + s["bonus"] + s["false_calls"] == s["total"] == totals[a]
        assert 0 <= s["nertz_left"] <= 13


@pytest.mark.parametrize(
    "rules",
    [
        {"call_mode": "manual", "call_bonus": 10, "false_call_penalty": 5, "max_ticks": 80},
        {"rounds": 3, "num_players": 3, "nertz_penalty": 3, "call_bonus": 4, "max_ticks": 60},
        {"teams": True, "call_bonus": 4, "max_ticks": 60},
    ],
    ids=variant_id,
)
def test_round_score__is_computed_by_the_engine_and_added_to_the_match(rules: dict) -> None:
    # finish_round writes the round's score once (score_round); the vector env's infos["score"] is that array,
    # it is the sum of the breakdown, and it is what the match total grew by.
    vec = nertz_env.vector_env(num_tables=8, **rules)
    vec.reset(seed=3)
    S, c = vec._state, vec.config
    ends = 0
    for _ in range(300):
        before = S.match_score.copy()
        _, _, _, _, info = vec.step(vec.sample_actions())
        ended = (info["round_end"] != 0) & ~info["autoreset"]
        parts = (
            S.score_lake.astype(np.int64)
            - c.nertz_penalty * S.score_nertz
            + S.score_bonus
            - c.false_call_penalty * S.score_false
        )
        np.testing.assert_array_equal(info["score"][ended], S.score_round[ended])
        np.testing.assert_array_equal(S.score_round[ended], parts[ended])
        np.testing.assert_array_equal(S.match_score[ended] - before[ended], S.score_round[ended])
        ends += int(ended.sum())
    assert ends >= 8


def test_round_so_far__reads_the_running_round_score_from_a_snapshot() -> None:
    from nertz_env.snapshot import round_so_far

    env = nertz_env.parallel_env(num_players=3, nertz_penalty=3)
    obs, _ = env.reset(seed=4)
    rng = np.random.default_rng(2)
    for _ in range(40):
        obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents})
    S = env._state
    want = [int(S.lake_played[0, p]) - 3 * int(S.nertz_len[0, p]) for p in range(3)]
    assert round_so_far(env.snapshot()) == want
    assert any(int(S.lake_played[0, p]) > 0 for p in range(3))


def test_observation__lake_tops_stay_in_bounds_when_jokers_top_foundations_too() -> None:
    """With jokers, more foundations than players can show the same top card (every deck's ace of clubs
    and a joker declared as one): the observation stays inside its declared Box and decodes the count."""
    env = nertz_env.parallel_env(num_players=2, jokers=1)
    for seed in range(200):  # a deal whose two aces of clubs and seat 0's joker lie outside the work piles
        env.reset(seed=seed)
        snap = env.snapshot()
        players = snap["players"]
        in_work = [{c for pile in pl["work"] for c in pile} for pl in players]
        if "AC" not in in_work[0] | in_work[1] and "**" not in in_work[0]:
            break
    else:
        pytest.fail("no suitable deal in 200 seeds")
    for seat, card in ((0, "AC"), (1, "AC"), (0, "**")):
        pile = next(name for name in ("nertz", "stock", "waste") if card in players[seat][name])
        players[seat][pile].remove(card)
    snap["lake"] = [[["AC", 0]], [["AC", 1]], [["*AC", 0]]]
    obs, _ = env.reset(options={"snapshot": snap})
    for agent in env.agents:
        assert env.observation_space(agent).contains(obs[agent]), "observation outside its declared space"
    decoded = nertz_env.decode(obs["player_0"]["observation"], env.config)
    assert decoded["lake_tops"]["AC"] == 3


# ---------------------------------------------------------------- conventions clients expect
@pytest.mark.parametrize("make", [nertz_env.parallel_env, nertz_env.env, nertz_env.raw_env], ids=["parallel", "env", "raw"])
def test_max_cycles__is_the_tick_bound_of_a_one_round_episode(make: object) -> None:
    e = make(max_cycles=3, num_players=2)  # type: ignore[operator]
    assert e.unwrapped.config.max_ticks == 3
    with pytest.raises(ValueError, match="not both"):
        make(max_cycles=3, max_ticks=4)  # type: ignore[operator]
    with pytest.raises(ValueError, match="several rounds"):
        make(max_cycles=3, rounds=2)  # type: ignore[operator]
    with pytest.raises(ValueError, match="max_cycles"):
        make(max_cycles=0)  # type: ignore[operator]


def test_max_cycles__parallel_episode_lasts_exactly_that_many_steps() -> None:
    env = nertz_env.parallel_env(max_cycles=5)
    env.reset(seed=0)
    steps = 0
    while env.agents:
        _, _, _, truncs, _ = env.step({a: 0 for a in env.agents})
        steps += 1
    assert steps == 5 and all(truncs.values())


def test_render__takes_the_mode_rllib_passes() -> None:
    """RLlib's ParallelPettingZooEnv calls ``par_env.render(self.render_mode)`` (its own, often None) and its
    PettingZooEnv calls ``env.render(self.render_mode)`` on the AEC form."""
    env = nertz_env.parallel_env(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert env.render(None) == text and env.render("ansi") == text
    quiet = nertz_env.parallel_env()
    quiet.reset(seed=0)
    assert quiet.render("ansi") == text  # an explicit mode renders even without a render_mode
    aec = nertz_env.env(render_mode="ansi")
    aec.reset(seed=0)
    assert aec.render(None) == aec.render("ansi") == aec.render() == text
    with pytest.raises(ValueError, match="render_mode"):
        env.render("rgb")


def _every_env() -> list:
    def single() -> object:
        from nertz_env.train import NertzSingleAgentEnv

        return NertzSingleAgentEnv(num_players=2, opponents=["random"])

    def sb3_vec() -> object:
        from nertz_env.train import NertzVecEnv

        return NertzVecEnv(num_tables=2, num_players=2, seed=0)

    return [
        pytest.param(lambda: nertz_env.parallel_env(num_players=2), id="parallel_env"),
        pytest.param(lambda: nertz_env.env(num_players=2), id="env"),
        pytest.param(lambda: nertz_env.raw_env(num_players=2), id="raw_env"),
        pytest.param(lambda: nertz_env.vector_env(2, num_players=2), id="vector_env"),
        pytest.param(lambda: nertz_env.agent_vector_env(2, num_players=2), id="agent_vector_env"),
        pytest.param(single, id="NertzSingleAgentEnv"),
        pytest.param(sb3_vec, id="NertzVecEnv"),
    ]


def _reset(env: object, **kw: object) -> None:
    if type(env).__name__ == "NertzVecEnv":
        env.reset()  # type: ignore[attr-defined]  (SB3's VecEnv.reset takes no arguments)
    else:
        env.reset(seed=0, **kw)  # type: ignore[attr-defined]


def _step(env: object) -> None:
    name = type(env).__name__
    if name in ("NertzParallelEnv",):
        env.step({a: 0 for a in env.possible_agents})  # type: ignore[attr-defined]
    elif name in ("NertzVectorEnv",):
        env.step(np.zeros((2, 2), dtype=np.int64))  # type: ignore[attr-defined]
    elif name in ("NertzAgentVectorEnv",):
        env.step(np.zeros(4, dtype=np.int64))  # type: ignore[attr-defined]
    elif name == "NertzVecEnv":
        env.step(np.zeros(env.num_envs, dtype=np.int64))  # type: ignore[attr-defined]
    else:
        env.step(0)  # type: ignore[attr-defined]


@pytest.mark.parametrize("make", _every_env())
def test_step_and_reset_after_close__raise_a_clear_error_in_every_env(make: object) -> None:
    from gymnasium.error import ClosedEnvironmentError

    env = make()  # type: ignore[operator]
    _reset(env)
    _step(env)
    env.close()  # type: ignore[attr-defined]
    env.close()  # type: ignore[attr-defined]  (closing twice is harmless)
    with pytest.raises(ClosedEnvironmentError, match=r"step\(\) after close\(\)"):
        _step(env)
    with pytest.raises(ClosedEnvironmentError, match=r"reset\(\) after close\(\)"):
        _reset(env)


@pytest.mark.parametrize("make", [p for p in _every_env() if p.id != "NertzVecEnv"])
def test_unknown_reset_option__warns_the_same_way_in_every_env(make: object) -> None:
    env = make()  # type: ignore[operator]
    with pytest.warns(UserWarning, match=r"reset\(\) ignores unknown option\(s\) \['colour'\]"):
        _reset(env, options={"colour": 1})
    _step(env)  # and the env is usable


def test_sb3_vec_env__options_set_for_reset_warn_as_everywhere() -> None:
    from nertz_env.train import NertzVecEnv

    env = NertzVecEnv(num_tables=1, num_players=2, seed=0)
    env.set_options({"colour": 1})
    with pytest.warns(UserWarning, match=r"ignores unknown option\(s\) \['colour'\]; it takes no options"):
        env.reset()
