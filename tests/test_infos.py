"""The info schema (nertz_env.infos): every env returns exactly its schema's keys, with their types, at reset
and on every step, and the mask in the infos is the observation's mask."""

from __future__ import annotations

from typing import Any

import numpy as np

import nertz_env
from nertz_env import infos as schema

# short rounds of a two-round match, so a few dozen steps cross round ends and the episode's end
RULES = {"num_players": 3, "max_ticks": 25, "rounds": 2}
_PY = {"bool": bool, "int": int, "float": float, "str": str, "dict": dict}


def check_per_agent(info: dict[str, Any], keys: tuple[schema.InfoKey, ...], mask: np.ndarray | None, n_act: int) -> None:
    assert set(info) == {k.name for k in keys}, sorted(info)
    for k in keys:
        v = info[k.name]
        if k.kind == "array":
            assert isinstance(v, np.ndarray) and v.dtype == np.int8 and v.shape == (n_act,), k.name
        else:
            assert type(v) is _PY[k.kind], (k.name, type(v))
    assert info["round_end"] in range(len(schema.ROUND_END_NAMES))
    if not info["round_end"]:  # "none yet": every round field 0
        assert set(schema.score_of(info).values()) == {0} and info["team_score"] == 0
    else:
        s = schema.score_of(info)
        assert s["lake"] + s["nertz_penalty"] + s["bonus"] + s["false_calls"] == s["total"]
    if mask is not None:
        assert info["action_mask"] is mask  # the very array, no copy


def check_tensorable(info: dict[str, Any]) -> None:
    """Every value a number or a numeric array: TorchRL's PettingZooWrapper makes a tensor of each (it failed
    on a string round_end and a dict score)."""
    for key, v in info.items():
        assert np.asarray(v).dtype.kind in "biuf", (key, v)


def check_batched(info: dict[str, Any], keys: tuple[schema.InfoKey, ...], dims: dict[str, int], mask: np.ndarray) -> None:
    assert set(info) == {k.name for k in keys}, sorted(info)
    for k in keys:
        v = info[k.name]
        assert isinstance(v, np.ndarray) and v.dtype.name == k.kind, (k.name, v.dtype)
        assert v.shape == tuple(dims[s] for s in k.shape), (k.name, v.shape)
    assert info["action_mask"] is mask


def test_parallel_env__every_info_key_on_every_step_with_its_type() -> None:
    env = nertz_env.parallel_env(**RULES)
    rng = np.random.default_rng(0)
    n_act = env.actions.n
    ends = 0
    for episode in range(2):
        obs, infos = env.reset(seed=episode)
        assert set(infos) == set(env.agents)
        for a in env.agents:
            check_per_agent(infos[a], schema.PER_AGENT, None, n_act)
            check_tensorable(infos[a])
        while env.agents:
            acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
            acts.pop("player_2")  # a missing agent: the key is there on every step anyway
            obs, _, _, _, infos = env.step(acts)
            for a in infos:
                check_per_agent(infos[a], schema.PER_AGENT, None, n_act)
                check_tensorable(infos[a])
            assert infos["player_2"]["missing_action"] and not infos["player_0"]["missing_action"]
            ends += bool(infos["player_0"]["round_end"])
    assert ends == 4  # every round ended at max_ticks at the latest, and each end was seen


def test_bare_observation__the_mask_is_in_the_infos_only() -> None:
    env = nertz_env.parallel_env(obs_key=None, **RULES)
    obs, infos = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(30):
        for a in infos:
            check_per_agent(infos[a], schema.PER_AGENT_BARE, None, env.actions.n)
            check_tensorable(infos[a])
            assert isinstance(obs[a], np.ndarray) and obs[a].shape == (env.obs_layout.size,)
        if not env.agents:
            break
        obs, _, _, _, infos = env.step({a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"]))) for a in env.agents})


def test_aec_env__every_info_key_on_every_step() -> None:
    env = nertz_env.env(**RULES)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    n_act = env.unwrapped.actions.n
    steps = 0
    for _agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        check_per_agent(info, schema.PER_AGENT, None, n_act)
        check_tensorable(info)
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        steps += 1
    assert steps > 50


def test_vector_env__same_keys_at_reset_and_every_step() -> None:
    venv = nertz_env.vector_env(4, **RULES)
    dims = {"T": 4, "P": 3, "A": venv.actions.n}
    obs, info = venv.reset(seed=0)
    check_batched(info, schema.VECTOR, dims, obs["action_mask"])
    ended = 0
    for _ in range(60):
        obs, _, _, _, info = venv.step(venv.sample_actions())
        check_batched(info, schema.VECTOR, dims, obs["action_mask"])
        ended += int((info["round_end"] > 0).sum())
    assert ended > 0


def test_agent_vector_env__same_keys_at_reset_and_every_step() -> None:
    envs = nertz_env.agent_vector_env(2, **RULES)
    dims = {"N": 6, "A": envs.single_action_space.n}
    obs, info = envs.reset(seed=0)
    check_batched(info, schema.AGENT_VECTOR, dims, obs["action_mask"])
    rng = np.random.default_rng(0)
    for _ in range(60):
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
        obs, _, _, _, info = envs.step(acts)
        check_batched(info, schema.AGENT_VECTOR, dims, obs["action_mask"])
        np.testing.assert_array_equal(info["_score"], info["round_end"] > 0)


def test_single_agent_view__same_keys_at_reset_and_every_step() -> None:
    from nertz_env.train import single
    env = single.NertzSingleAgentEnv(num_players=3, rules={"max_ticks": 25}, opponents=["random"])
    keys = schema.SINGLE
    n_act = env.action_space.n
    _, info = env.reset(seed=0)
    check_per_agent(info, keys, None, n_act)
    np.testing.assert_array_equal(info["action_mask"], env.action_masks())
    rng = np.random.default_rng(0)
    done = False
    while not done:
        _, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        check_per_agent(info, keys, None, n_act)
        done = term or trunc
    assert info["max_ticks"] is True  # the round was cut off at 25 ticks


def test_info_schema__the_docs_table_lists_every_key_of_every_env() -> None:
    text = schema.markdown()
    for keys in schema.SCHEMAS.values():
        for k in keys:
            assert f"| `{k.name}` |" in text
