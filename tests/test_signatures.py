"""The env factories' keyword signatures (what help() and IDEs show) match the rules options of NertzConfig,
the option table (nertz_env.config.OPTION_DOCS) documents exactly those options, the single-agent and SB3 vector
envs take them as keywords too, and dir(nertz_env) lists the public API."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import nertz_env
from nertz_env.config import OPTION_DOCS, OPTION_NAMES, OPTION_TYPES, NertzConfig

FACTORIES = {
    "parallel_env": ("render_mode", "illegal_action", "max_cycles", "obs_key"),
    "env": ("render_mode", "illegal_action", "max_cycles", "obs_key"),
    "vector_env": ("num_tables", "autoreset", "copy", "render_mode"),
    "agent_vector_env": ("num_tables", "copy", "render_mode", "obs_format"),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factory__every_rules_option_is_a_typed_keyword_with_its_default(name: str) -> None:
    params = inspect.signature(getattr(nertz_env, name)).parameters
    defaults = {f.name: f.default for f in dataclasses.fields(NertzConfig)}
    named = [p for p in params.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    assert {p.name for p in named} == set(OPTION_NAMES) | set(FACTORIES[name])
    for option in OPTION_NAMES:
        p = params[option]
        assert p.default == defaults[option], option
        assert p.annotation == OPTION_TYPES[option], option
    for p in named:
        assert p.annotation is not inspect.Parameter.empty, p.name
    assert list(params)[-1] == "unknown"  # a keyword outside the options is refused by name (below)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['drwa'\]; the options are"):
        getattr(nertz_env, name)(**({"num_tables": 1} if "num_tables" in params else {}), drwa=1)


def test_factory__passes_every_keyword_to_the_table() -> None:
    e = nertz_env.parallel_env(num_players=3, draw=1, teams=False, jokers=2, max_cycles=50)
    assert (e.config.num_players, e.config.draw, e.config.jokers, e.config.max_ticks) == (3, 1, 2, 50)
    v = nertz_env.vector_env(2, 5, work_piles=6, copy=False)
    assert (v.num_envs, v.config.num_players, v.config.work_piles, v.copy) == (2, 5, 6, False)
    a = nertz_env.agent_vector_env(2, num_players=2, recycle="shuffle")
    assert (a.num_envs, a.config.recycle) == (4, "shuffle")
    aec = nertz_env.env(nertz_size=9, illegal_action="raise")
    assert aec.unwrapped.config.nertz_size == 9 and aec.unwrapped.illegal_action == "raise"


def test_option_table__documents_exactly_the_options() -> None:
    assert list(OPTION_DOCS) == list(OPTION_NAMES) and set(OPTION_TYPES) == set(OPTION_NAMES)


def test_single_agent_and_sb3_vector_envs__take_rules_as_keywords() -> None:
    pytest.importorskip("sb3_contrib", reason="needs the train extra")
    from nertz_env.train import NertzSingleAgentEnv, NertzVecEnv

    env = NertzSingleAgentEnv(num_players=2, draw=1, opponents=["random"])
    assert (env.config.draw, env.config.num_players) == (1, 2)
    assert NertzSingleAgentEnv(2, {"draw": 1}).config == env.config  # the rules= form stays
    venv = NertzVecEnv(1, 2, draw=1)
    assert venv.config == env.config
    venv.close()
    for make in (NertzSingleAgentEnv, lambda *a, **k: NertzVecEnv(1, *a, **k)):
        with pytest.raises(ValueError, match=r"not both"):
            make(2, rules={"draw": 1}, jokers=2)
    with pytest.raises(ValueError, match=r"unknown option"):
        NertzSingleAgentEnv(2, drawn=1)


def test_dir__lists_the_public_api_and_every_name_resolves() -> None:
    assert dir(nertz_env) == sorted(nertz_env.__all__)
    for name in nertz_env.__all__:
        assert getattr(nertz_env, name) is not None
    assert "importlib" not in dir(nertz_env) and "parallel_env" in dir(nertz_env)
