"""The learned planner (``expert``, shipped as ``best``) and its training loop (expert iteration)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install '.[train]'")
pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")

import nertz_env
from nertz_env.agents import make_agent

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _play(spec: str, seed: int, ticks: int = 60) -> list[int]:
    """The actions seat 0 (``spec``) takes in one 4-player game against three heuristic seats."""
    env = nertz_env.parallel_env(num_players=4)
    obs, _ = env.reset(seed=seed)
    agents = [make_agent(spec)] + [make_agent("heuristic") for _ in range(3)]
    for s, a in enumerate(agents):
        a.reset(env.config, s, seed=100 + s)
    taken = []
    for _ in range(ticks):
        if not env.agents:
            break
        acts = {name: agents[s].act(obs[name]["observation"], obs[name]["action_mask"]) for s, name in enumerate(env.agents)}
        taken.append(acts["player_0"])
        obs, *_ = env.step(acts)
    return taken


def test_same_decisions_run_to_run() -> None:
    first = _play("expert:policy=ppo", seed=4)
    assert first == _play("expert:policy=ppo", seed=4)
    assert len(first) > 20


def test_planner_overrides_its_network_sometimes() -> None:
    """With rollouts the planner is not its network: over a few games some moves differ from the network's
    first choice (and with rollouts=0 none does)."""
    from nertz_env.agents.expert import ExpertAgent

    class Counting(ExpertAgent):
        overrides = 0
        decisions = 0

        def _choose(self, s, action_mask):  # type: ignore[no-untyped-def]
            a = super()._choose(s, action_mask)
            type(self).decisions += 1
            type(self).overrides += int(a != int(np.argmax(self._probs)))
            return a

    env = nertz_env.parallel_env(num_players=4)
    for rollouts in (32, 0):
        Counting.overrides = Counting.decisions = 0
        for seed in range(3):
            obs, _ = env.reset(seed=seed)
            agents = [Counting(policy="ppo", rollouts=rollouts) for _ in range(4)]
            for s, a in enumerate(agents):
                a.reset(env.config, s, seed=s)
            while env.agents:
                acts = {n: agents[s].act(obs[n]["observation"], obs[n]["action_mask"]) for s, n in enumerate(env.agents)}
                obs, *_ = env.step(acts)
        if rollouts:
            assert Counting.overrides > 0
        else:
            # without rollouts it plays the network (a call or a Nertz card to the lake is the one exception)
            assert Counting.overrides <= Counting.decisions * 0.05


def test_numpy_actor_matches_torch() -> None:
    from nertz_env.agents.expert import NumpyActor
    from nertz_env.agents.policy import load_policy, policy_probabilities

    policy, meta = load_policy(os.path.join(ROOT, "agents", "models", "ppo.zip"))
    rng = np.random.default_rng(0)
    env = nertz_env.parallel_env(num_players=4)
    obs, _ = env.reset(seed=1)
    actor = NumpyActor.from_policy(policy)
    for name in env.agents:
        o, m = obs[name]["observation"], obs[name]["action_mask"]
        want = policy_probabilities(policy, o[None], m[None])[0]
        np.testing.assert_allclose(actor.probabilities(o, m), want, atol=1e-5)
    o = rng.random(meta["obs_size"]).astype(np.float32)
    m = (rng.random(meta["num_actions"]) < 0.3).astype(np.int8)
    m[0] = 1
    np.testing.assert_allclose(actor.probabilities(o, m), policy_probabilities(policy, o[None], m[None])[0], atol=1e-5)


def test_refuses_other_tables() -> None:
    from nertz_env.config import make_config

    agent = make_agent("expert:policy=ppo")
    with pytest.raises(ValueError, match=r"players|rules|table"):
        agent.reset(make_config(num_players=2), 0, 0)
    assert agent.trained_config == make_config(num_players=4)  # what nertz-eval's refusal names


def test_nertz_eval_names_the_table_best_was_trained_for() -> None:
    r = _run("-m", "nertz_env.eval.cli", "gauntlet", "best", "heuristic", "--players", "2", "--deals", "1",
             "--no-save", "--no-progress")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "--players 4" in r.stderr, r.stderr


def test_bad_options_are_one_line() -> None:
    from nertz_env.agents import AgentSpecError

    with pytest.raises(AgentSpecError, match="base"):
        make_agent("expert:base=oracle")
    with pytest.raises(AgentSpecError, match="prior"):
        make_agent("expert:prior=-1")
    with pytest.raises(FileNotFoundError, match=r"none\.zip"):  # when built, not at the first deal
        make_agent("expert:policy=runs/none.zip")
    with pytest.raises(AgentSpecError, match="given twice"):
        make_agent("expert:policy=ppo,policy=runs/none.zip")
    for spec, says in (("expert:margin=nan", "margin"), ("search:margin=nan", "margin"), ("best:margin=-1", ">= 0"),
                       ("expert:top=-1", "top must be"), ("expert:policy=", "policy must name"),
                       ("best:others=nan", "others"), ("expert:rollouts=0,prior=1", "prior"),
                       ("expert:rollouts=0,top=3,horizon=5", "top, horizon"),
                       ("expert:rollouts=0,base=heuristic", "use 'heuristic'")):
        with pytest.raises(AgentSpecError, match=says):
            make_agent(spec)
    agent = make_agent("expert:rollouts=0")  # the network's first choice, every tick
    env = nertz_env.parallel_env(num_players=4)
    obs, _ = env.reset(seed=5)
    agent.reset(env.config, 0, 0)
    o = obs["player_0"]
    probs = agent._actor.probabilities(o["observation"], o["action_mask"]) if agent._actor else None
    a = agent.act(o["observation"], o["action_mask"])
    assert probs is not None and o["action_mask"][a] == 1


def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--iterations", "0"], "--iterations must be at least 1"),
        (["--init", "runs/missing.zip"], "no network"),
        (["--planner", "rollouts=-1"], "rollouts"),
        (["--planner", "policy=ppo"], "--init"),
        (["--planner", "policy =ppo"], "--init"),
        (["--rule", "draw=1"], "draw"),
        (["--batch-size", "-1"], "--batch-size must be at least 1"),
        (["--seed", "-3"], "--seed must be >= 0"),
        (["--players", "0"], "num_players"),
        (["--teacher-threads", "5"], "--teacher-threads"),
    ],
)
def test_training_refuses_bad_input(tmp_path, flags: list[str], says: str) -> None:
    r = _run("-m", "nertz_env.train.expert", "--out", str(tmp_path / "p.zip"), "--checkpoint-dir",
             str(tmp_path / "it"), *flags)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], r.stderr
    assert not (tmp_path / "it").exists()


def test_training_refuses_to_mix_runs_and_an_out_directory(tmp_path) -> None:
    """An earlier run's log in --checkpoint-dir would be appended to and its networks overwritten; an --out
    that is a directory would fail only at the last save."""
    (tmp_path / "it").mkdir()
    (tmp_path / "it" / "log.jsonl").write_text('{"iteration": 1}\n')
    (tmp_path / "dir.zip").mkdir()
    for flags, says in ((["--out", str(tmp_path / "p.zip"), "--checkpoint-dir", str(tmp_path / "it")], "earlier run"),
                        (["--out", str(tmp_path / "dir.zip"), "--checkpoint-dir", str(tmp_path / "new")], "directory")):
        r = _run("-m", "nertz_env.train.expert", *flags)
        assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert (tmp_path / "it" / "log.jsonl").read_text() == '{"iteration": 1}\n'


def test_tiny_expert_iteration_saves_loads_and_plays(tmp_path) -> None:
    """A few hundred planner decisions, two iterations: the networks are saved with their record, the
    log's figures are the run's, and the result plays inside the planner through nertz-eval."""
    out, ckpt = tmp_path / "best.zip", tmp_path / "iters"
    r = _run("-m", "nertz_env.train.expert", "--init", "ppo", "--iterations", "2", "--samples", "300",
             "--epochs", "1", "--planner", "rollouts=4", "--out", str(out), "--checkpoint-dir", str(ckpt))
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in (ckpt / "log.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == [1, 2]
    assert rows[0]["decisions"] >= 300 and rows[1]["fitted_on"] == rows[0]["decisions"] + rows[1]["decisions"]
    assert rows[1]["teacher"].startswith(f"expert:policy={ckpt / 'iter_01.zip'}")
    assert (ckpt / "iter_02.zip").is_file() and out.is_file()
    r = _run("-m", "nertz_env.eval.cli", "gauntlet", f"expert:policy={out},rollouts=4", "heuristic",
             "--players", "4", "--deals", "2", "--no-save", "--no-progress", "--workers", "1")
    assert r.returncode == 0, r.stderr
    assert f"expert:policy={out},rollouts=4 - heuristic" in r.stdout


def test_best_is_the_expert_planner_with_the_shipped_network() -> None:
    from nertz_env.agents import BestAgent, known_agents

    agent = make_agent("best")
    assert isinstance(agent, BestAgent) and agent.name == "best"
    assert (agent.policy_spec, agent.margin, agent.prior, agent.base) == ("ppo", 0.3, 0.0, "policy")
    assert "best" in known_agents() and "expert" in known_agents()
    env = nertz_env.parallel_env(num_players=4)
    obs, _ = env.reset(seed=3)
    agent.reset(env.config, 0, seed=1)
    o = obs["player_0"]
    assert o["action_mask"][agent.act(o["observation"], o["action_mask"])] == 1
