"""Ray RLlib: the multi-agent env, PPO self-play, the league, checkpoints, ``nertz-train --backend rllib``.
Marked ``rllib``; one Ray of the module's own (2 CPUs, loopback only). Clusters: test_cluster.py."""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("ray.rllib", reason="needs the rllib extra: pip install '.[rllib]'")

import ray
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.connectors.module_to_env import UnBatchToIndividualItems
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env import single_agent_env_runner
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
from ray.rllib.utils.pre_checks.env import check_multiagent_environments
from ray.rllib.utils.spaces.space_utils import unbatch
from ray.tune.registry import register_env

import nertz_env
from conftest import loopback_only, one_line, run_main
from nertz_env import rllib
from nertz_env.agents import make_agent
from nertz_env.config import make_config
from nertz_env.extras import install_command
from nertz_env.infos import RLLIB, ROUND_END_NAMES
from nertz_env.rllib import (
    LEARNER_MODULE_DIR,
    FlatUnBatchToIndividualItems,
    League,
    NertzRLlibEnv,
    NertzRLlibVectorEnv,
    add_snapshot,
    checkpoint_meta,
    env_creator,
    fast_unbatch,
    parse_env_config,
    ppo_config,
    save_checkpoint,
)
from nertz_env.train.cli import main
from nertz_env.train.config import TrainConfig
from nertz_env.train.flags import build_parser, config_from_args
from nertz_env.train.meta import IncompatibleCheckpointError
from nertz_env.train.rllib_backend import (
    budget_note,
    build_config,
    check_options,
    iteration_scalars,
    tensorboard_writer,
)
from variants import VARIANTS, variant_id

pytestmark = pytest.mark.rllib

SMALL = {"num_players": 2, "max_ticks": 120}  # short deals keep PPO iterations in seconds


def _cases() -> list[dict]:
    cases = []
    for v in VARIANTS:
        if "num_players" in v:
            cases.append(dict(v))
        else:  # teams=True pairs seats across the table: an even count of at least 4
            cases += [{**v, "num_players": n} for n in ((4, 8) if v.get("teams") is True else (2, 4, 8))]
    return cases


@pytest.mark.parametrize("env_config", _cases(), ids=variant_id)
def test_check_multiagent_environments(env_config: dict) -> None:
    env = env_creator(env_config)
    check_multiagent_environments(env)
    space = env.observation_spaces["player_0"]
    assert set(space.spaces) == {"observations", "action_mask"}
    obs, _ = env.reset(seed=1)
    assert set(obs) == set(env.possible_agents)
    for o in obs.values():
        assert space.contains(o)
    text = env.render("ansi")  # RLlib calls render with an argument
    assert "player_0" in text


def test_unknown_option_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match=r"unknown env_config option\(s\) \['drwa'\]"):
        env_creator({"drwa": 1})
    with pytest.raises(ValueError, match="learners_per_table"):
        parse_env_config({"num_players": 2, "learners_per_table": 3})
    with pytest.raises(ValueError, match="unknown agent"):
        parse_env_config({"num_players": 2, "learners_per_table": 1, "opponents": {"nobody": 1.0}})
    for seed in (1.5, True, "7"):  # not read as 1, 1 and 7
        with pytest.raises(ValueError, match="seed"):
            env_creator({"num_players": 2}).reset(seed=seed)


def _random_legal(obs: dict, rng: np.random.Generator) -> dict:
    return {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()}


def test_batched_tables_match_single_tables() -> None:
    """Table k of a batched env is the deal of a one-table env seeded seed + k, and drops out when it ends."""
    cfg = {"num_players": 2, "max_ticks": 60}
    multi = NertzRLlibEnv({**cfg, "num_tables": 3})
    singles = [NertzRLlibEnv(cfg) for _ in range(3)]
    obs, _ = multi.reset(seed=10)
    sobs = [s.reset(seed=10 + k)[0] for k, s in enumerate(singles)]
    for k in range(3):
        np.testing.assert_array_equal(obs[f"t{k}_player_1"]["observations"], sobs[k]["player_1"]["observations"])
    rng = np.random.default_rng(0)
    ticks = 0
    while multi.agents:
        acts = _random_legal(obs, rng)
        obs, rew, term, trunc, _ = multi.step(acts)
        for k, s in enumerate(singles):
            if not s.agents:
                continue
            mine = {a.split("_", 1)[1]: v for a, v in acts.items() if a.startswith(f"t{k}_")}
            _, r, _, tr, _ = s.step(mine)
            for a, v in r.items():
                assert rew[f"t{k}_{a}"] == v
                assert trunc[f"t{k}_{a}"] == tr[a]
        ticks += 1
    assert term["__all__"] or trunc["__all__"]
    assert ticks <= 60


def test_league_env_hides_scripted_seats() -> None:
    env = env_creator(
        {"num_players": 4, "learners_per_table": 1, "opponents": {"heuristic": 1.0}, "module_opponents": 0.0,
         "max_ticks": 50, "num_tables": 2}
    )
    obs, _ = env.reset(seed=3)
    assert sorted(obs) == ["t0_player_0", "t1_player_0"]
    rng = np.random.default_rng(1)
    while env.agents:
        obs, _, _, _, infos = env.step(_random_legal(obs, rng))
        assert not any(i["illegal"] for i in infos.values())
    # the heuristic seats played cards to the lake inside the env, on both tables
    assert all({1, 2, 3} <= {owner for f in env._venv.snapshot(t)["lake"] for _, owner in f} for t in range(2))


def _scalars(folder) -> dict[str, list[tuple[int, float]]]:
    """The scalars of a TensorBoard event folder: tag -> [(step, value)]."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


@pytest.mark.long
def test_cli_a_run_writes_tensorboard_logs_that_match_its_lines(tmp_path, capsys) -> None:
    """A real run (about 10 s) logs one point per iteration of each scalar, as its lines print them."""
    run = tmp_path / "run"
    with loopback_only():  # nertz-train starts a Ray of its own: this test runs before the module's Ray starts
        code = main(["--backend", "rllib", "--num-players", "2", "--rule", "max_ticks=120", "--num-tables", "2",
                     "--n-steps", "32", "--batch-size", "128", "--n-epochs", "1", "--net-arch", "32",
                     "--checkpoint-every", "0", "--total-timesteps", "512", "--run-dir", str(run)])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = re.findall(r"iter +\d+ +steps +(\d+) +agent return +(\S+) +(\d+) steps/s", out)
    assert len(lines) == 4
    written = _scalars(run / "tb" / "RLlibPPO_1")
    steps = [int(s) for s, _, _ in lines]
    assert [s for s, _ in written["time/fps"]] == steps
    # TensorBoard keeps 32-bit floats; the lines print steps/s to a unit and the return to 2 decimals
    assert all(abs(v - int(r)) <= 0.51 for (_, v), (_, _, r) in zip(written["time/fps"], lines, strict=True))
    returns = [(int(s), float(r)) for s, r, _ in lines if r != "-"]
    got = written.get("rollout/agent_return_mean", [])
    assert [s for s, _ in got] == [s for s, _ in returns]
    assert all(abs(v - r) <= 0.0051 for (_, v), (_, r) in zip(got, returns, strict=True))
    for tag in ("train/policy_loss", "train/value_loss", "train/entropy"):
        assert [s for s, _ in written[tag]] == steps


# ---------------------------------------------------------------------------------------------------------
# PPO on a local Ray (2 CPUs)
@pytest.fixture(scope="module")
def local_ray():
    """A Ray of the module's own (address "local"), 2 CPUs, on loopback only until the module ends."""
    with loopback_only():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            yield ray
        finally:
            ray.shutdown()


def _rollout_illegal(module, env_config: dict, seed: int) -> tuple[int, int]:
    """Play one deal of ``env_config`` with ``module`` sampling every exposed seat; (illegal, decisions)."""
    env = NertzRLlibEnv(env_config)
    obs, _ = env.reset(seed=seed)
    illegal = decisions = 0
    while env.agents:
        names = list(obs)
        batch = {
            "obs": {
                "observations": torch.as_tensor(np.stack([obs[a]["observations"] for a in names])),
                "action_mask": torch.as_tensor(np.stack([obs[a]["action_mask"] for a in names])),
            }
        }
        with torch.no_grad():
            logits = module.forward_exploration(batch)["action_dist_inputs"]
        acts = torch.distributions.Categorical(logits=logits).sample().tolist()
        obs, _, _, _, infos = env.step(dict(zip(names, acts, strict=True)))
        illegal += sum(i["illegal"] for i in infos.values())
        decisions += len(infos)
    return illegal, decisions


def test_ppo_two_iterations_no_illegal_action(local_ray, tmp_path) -> None:
    algo = ppo_config(SMALL, train_batch_size=256, minibatch_size=128, num_epochs=1, hidden=(32,)).build_algo()
    try:
        for _ in range(2):
            result = algo.train()
        assert sum(result["env_runners"]["num_agent_steps_sampled_lifetime"].values()) >= 500
        module = algo.get_module("learner")
        assert isinstance(module, ActionMaskingTorchRLModule)
        illegal, decisions = _rollout_illegal(module, SMALL, seed=7)
        assert decisions > 100 and illegal == 0
        path = save_checkpoint(algo, str(tmp_path / "ckpt"), num_timesteps=512)
    finally:
        algo.stop()
    _check_loaded_agent(path, module)


def test_vector_env__a_refused_config_leaves_nothing_to_fail_at_garbage_collection(monkeypatch) -> None:
    """A config refused in ``__init__`` leaves nothing for Gymnasium's ``VectorEnv.__del__`` to fail on."""
    seen: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    with pytest.raises(ValueError, match="multiple of num_players"):
        NertzRLlibVectorEnv({**SMALL, "num_envs": 3})
    gc.collect()
    assert seen == []


def test_single_agent_route_trains_and_its_checkpoint_plays(local_ray, tmp_path) -> None:
    """ppo_config(single_agent=True): PPO trains, plays legally, and its checkpoint loads by path."""
    env = NertzRLlibVectorEnv({**SMALL, "num_tables": 1, "num_envs": 4})  # RLlib passes num_envs
    assert env.num_envs == 4 and set(env.single_observation_space.spaces) == {"observations", "action_mask"}
    with pytest.raises(ValueError, match="a league, or learners_per_table, needs the multi-agent env"):
        ppo_config(SMALL, league=League(), single_agent=True)
    algo = ppo_config({**SMALL, "num_tables": 2}, single_agent=True, fast_sampling=True, train_batch_size=256,
                      minibatch_size=128, num_epochs=1, hidden=(32,)).build_algo()
    try:
        result = algo.train()
        sampled = result["env_runners"]["num_agent_steps_sampled"]
        assert sum(sampled.values()) >= 256  # agent steps: 4 seats a tick
        assert algo.env_runner.env.unwrapped.num_envs == 4 and type(algo.env_runner).__name__ == "FastSamplingEnvRunner"
        module = algo.get_module()
        illegal, decisions = _rollout_illegal(module, SMALL, seed=5)
        assert decisions > 100 and illegal == 0
        path = save_checkpoint(algo, str(tmp_path / "ckpt"), num_timesteps=256)
    finally:
        algo.stop()
    _check_loaded_agent(path, module)


def test_fast_unbatch_and_flat_connector_give_rllib_s_results_and_change_no_module_of_rllib() -> None:
    """The single-agent route's fast paths (rows of flat arrays) return what RLlib's own code returns and are
    taken with the pinned Ray, where fast_sampling asks for them only: building an env changes no RLlib module."""
    rllib.NertzRLlibVectorEnv({**SMALL, "num_tables": 1}).close()
    assert single_agent_env_runner.unbatch is unbatch
    copies = (rllib.FastSamplingEnvRunner._sample, rllib.FastSamplingEnvRunner._reset_envs,
              FlatUnBatchToIndividualItems.__call__)
    assert all(fast_unbatch in m.__globals__.values() for m in copies)

    rng = np.random.default_rng(0)
    obs = {"observations": rng.random((5, 7), dtype=np.float32), "action_mask": rng.random((5, 3)).round()}
    for struct in (obs, np.arange(5), rng.random((5, 2)), {"a": (np.arange(5), np.arange(5))}):
        want, got = unbatch(struct), fast_unbatch(struct)
        assert len(want) == len(got) == 5
        for w, g in zip(want, got, strict=True):
            assert type(w) is type(g)
            if isinstance(w, dict):
                assert list(w) == list(g)
                for k in w:
                    np.testing.assert_array_equal(w[k], g[k])
            else:
                np.testing.assert_array_equal(w, g)
    order = ["e0", "e1", "e0x", "e3", "e4"]
    batch = {"actions": np.arange(5), "action_dist_inputs": rng.random((5, 3))}
    args = {"rl_module": None, "episodes": [], "shared_data": {"memorized_map_structure": order}}
    want = UnBatchToIndividualItems(None, None)(batch=dict(batch), **args)
    got = FlatUnBatchToIndividualItems(None, None)(batch=dict(batch), **args)
    assert want.keys() == got.keys()
    for column in want:
        assert want[column].keys() == got[column].keys()
        for key in want[column]:
            np.testing.assert_array_equal(np.array(want[column][key]), np.array(got[column][key]))


def _check_loaded_agent(path: str, module) -> None:
    """make_agent loads the checkpoint directory, plays like the trained module, refuses other tables."""
    agent = make_agent(f"{path}:deterministic=true")
    agent.reset(make_config(**SMALL), seat=1, seed=0)
    env = NertzRLlibEnv(SMALL)
    obs, _ = env.reset(seed=3)
    o = obs["player_1"]
    batch = {"obs": {k: torch.as_tensor(v[None]) for k, v in o.items()}}
    with torch.no_grad():
        want = int(torch.argmax(module.forward_inference(batch)["action_dist_inputs"][0]))
    assert agent.act(o["observations"], o["action_mask"].astype(np.int8)) == want
    with pytest.raises(IncompatibleCheckpointError, match=r"num_players: .* has 2, the table has 4"):
        agent.reset(make_config(num_players=4, max_ticks=120), seat=0)
    with pytest.raises(IncompatibleCheckpointError, match=r"rules\.draw"):
        agent.reset(make_config(num_players=2, max_ticks=120, draw=1), seat=0)


def test_league_one_iteration(local_ray) -> None:
    """Learner seat 0 of 3; the others heuristic (in the env) or a frozen snapshot module, per deal."""
    league = League(learners_per_table=1, opponents={"heuristic": 1.0}, snapshot_weight=1.0, max_snapshots=1)
    cfg = {"num_players": 3, "max_ticks": 120, "num_tables": 2}
    algo = ppo_config(cfg, league=league, train_batch_size=64, minibatch_size=128, num_epochs=1, hidden=(32,)).build_algo()
    def weights(module_id: str) -> dict:
        state = algo.learner_group.get_state(components=f"learner/rl_module/{module_id}")
        return {k: torch.as_tensor(v) for k, v in state["learner"]["rl_module"][module_id].items()}

    def same(a: dict, b: dict, keys) -> bool:
        return all(torch.equal(a[k], b[k]) for k in keys)

    try:
        assert add_snapshot(algo, 0) == "snapshot_0"
        before = weights("learner")
        assert same(before, weights("snapshot_0"), before)
        result = algo.train()
        steps = result["env_runners"]["num_module_steps_sampled_lifetime"]
        assert steps.get("learner", 0) > 0 and steps.get("snapshot_0", 0) > 0
        assert not same(before, weights("learner"), before)  # the learner learned
        assert same(before, weights("snapshot_0"), before)  # the snapshot stayed frozen
        # the env runner acts with the snapshot's old weights too (it holds the actor part: inference only)
        runner = {k: v.detach() for k, v in algo.env_runner.module["snapshot_0"].state_dict().items()}
        actor = [k for k in runner if "critic" not in k and not k.startswith("vf")]
        assert actor and same(before, runner, actor)
    finally:
        algo.stop()


def _fake_run(run, num_players: int = 2, module: str | None = None) -> str:
    """``run`` as a finished run of this backend, each checkpoint holding only its record (enough for the
    checks before Ray); ``module``: the learner module's folder. Returns its step checkpoint."""
    meta = checkpoint_meta(make_config(num_players=num_players), module or LEARNER_MODULE_DIR, num_timesteps=64,
                           mode="rllib",
                           train_config={**TrainConfig(num_players=num_players).to_dict(), "run_dir": "somewhere"})
    step = run / "checkpoints" / "step_000000000064"
    for folder in (step, run / "final"):
        folder.mkdir(parents=True)
        (folder / "nertz_meta.json").write_text(json.dumps(meta))
    return str(step)


def _train(argv, capsys, monkeypatch) -> tuple[int, str, str]:
    """``nertz-train --backend rllib ARGV`` with ray.init refusing to start (nothing here may start Ray)."""
    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("Ray was started"))
    code, out, err = run_main(main, ["--backend", "rllib", *argv], capsys)
    return code, out, err.strip()


# what the run refuses before Ray starts: --print-config refuses it too, with the same line
REFUSED_BEFORE_RAY = [
    (["--rule", "drwa=1"], "unknown option(s) ['drwa']"),
    (["--shaping"], "unrecognized arguments: --shaping"),  # an SB3-only option has no flag here
    (["--num-env-runners", "-1"], "argument --num-env-runners: must be at least 0, got -1"),
    (["--tables-per-env", "4"], "--tables-per-env has no effect in self-play"),
    (["--num-tables", "24", "--tables-per-env", "16", "--learners-per-table", "1", "--opponent", "heuristic=1"],
     "not a multiple of --tables-per-env 16"),
    (["--learners-per-table", "1", "--tables-per-env", "0"], "--tables-per-env: must be at least 1, got 0"),
    (["--address", "127.0.0.1:1"], "no Ray cluster at 127.0.0.1:1"),  # eval.cluster's check, as nertz-eval's
    (["--resume", "{run}/final", "--num-players", "4"], "num_players: checkpoint {run}/final has 2, the table has 4"),
    (["--resume", "{run}/final", "--net-arch", "32"], "net_arch: checkpoint has [256, 256], the config has [32]"),
    (["--resume", "{run}/final", "--total-timesteps", "32"], "below the 64 transitions {run}/final has trained"),
    (["--resume", "{tmp}"], "not an RLlib checkpoint"),
    (["--resume", "{run}/../loose"], "--run-dir"),  # a checkpoint outside a run folder
    (["--resume", "{run}/checkpoints/step_000000000064", "--run-dir", "{other}"], "already holds a run (eval.csv)"),
    (["--resume", "{run}/final", "--run-dir", "{other}"], "leave out --run-dir to continue in {run}"),
    (["--run-dir", "{run}"], "already holds a run (checkpoints/step_000000000064)"),
    (["--run-dir", "{other}"], "already holds a run (eval.csv)"),
    (["--batch-size", "99999"], "batch_size 99,999 is larger than an iteration (8,192 learner transitions"),
    # a checkpoint of RLlib's single-agent route (module default_policy) resumed as a league would start the
    # league's "learner" module untrained (RLlib's restore has nothing to fill it from, and says nothing)
    (["--resume", "{sp}/final", "--learners-per-table", "1", "--opponent", "heuristic=1"], "is a self-play checkpoint"),
]
# a package the run needs, missing (find_spec finds none): refused before Ray as well
WITHOUT = [("tensorboardX", "tensorboard = true needs the tensorboardX package (ray[rllib] installs it)"),
           ("ray", f"needs the rllib extra ({install_command('rllib')}): No module named 'ray'")]
CASES = [(flags, message, None) for flags, message in REFUSED_BEFORE_RAY] + [([], m, name) for name, m in WITHOUT]


@pytest.mark.parametrize(("flags", "message", "missing"), CASES, ids=[" ".join(f) or f"no {m}" for f, _, m in CASES])
def test_cli_print_config_refuses_what_the_run_refuses(flags, message, missing, tmp_path, capsys, monkeypatch) -> None:
    """--print-config refuses what the run refuses before Ray (no Ray, no torch), in the same line."""
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == missing else find_spec(n, *a))
    run, other, sp = tmp_path / "runs" / "rl", tmp_path / "runs" / "sb3", tmp_path / "runs" / "sp"
    _fake_run(run)
    _fake_run(sp, module=os.path.join("learner_group", "learner", "rl_module", "default_policy"))
    other.mkdir()
    (other / "eval.csv").write_text("")
    (run.parent / "loose").mkdir()
    shutil.copy(run / "final" / "nertz_meta.json", run.parent / "loose")
    flags = [f.format(run=run, other=other, tmp=tmp_path, sp=sp) for f in flags]
    message = message.format(run=run)
    lines = []
    for extra in (["--print-config"], []):
        defaults = [f for k, v in (("--num-players", "2"), ("--run-dir", str(tmp_path / "new")))
                    if k not in flags and (k != "--run-dir" or "--resume" not in flags) for f in (k, v)]
        code, out, err = _train([*defaults, *flags, *extra], capsys, monkeypatch)
        assert code == 2 and out == "" and message in err and len(err.splitlines()) == 1, (extra, err)
        lines.append(err)
    assert lines[0] == lines[1]
    assert sorted(os.listdir(tmp_path)) == ["runs"] and sorted(os.listdir(other)) == ["eval.csv"]  # nothing made


def test_cli_an_sb3_only_option_set_in_a_file_is_refused_and_one_at_what_the_backend_does_passes(
    tmp_path, capsys, monkeypatch
) -> None:
    """An SB3-only option set in a shared file is refused before Ray; one at what this backend does passes."""
    path = tmp_path / "run.json"
    for options, code in (({"shaping": True}, 2), ({"mode": "single"}, 2), ({"eval_every": 0}, 2),
                          ({"shaping": False, "eval_deals": 0, "mode": "vector", "lr_schedule": "constant"}, 0)):
        path.write_text(json.dumps(options))
        for extra in (["--print-config"], []) if code else (["--print-config"],):
            got, out, err = _train(["--num-players", "2", "--run-dir", str(tmp_path / "run"), "--config", str(path),
                                    *extra], capsys, monkeypatch)
            assert got == code, err
            if code:
                assert "SB3 backend only" in one_line(err, "nertz-train")
    assert not (tmp_path / "run").exists()
    config = os.path.join(os.path.dirname(__file__), "..", "train", "configs", "rllib_league.toml")
    code, out, err = _train(["--config", config, "--run-dir", str(tmp_path / "b"), "--print-config"], capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["pool"]["max_snapshots"] == 5


def test_tensorboard_log_writes_each_iterations_scalars(tmp_path) -> None:
    """Each iteration's scalars go to run_dir/tb/RLlibPPO_<n> (a NaN left out); a resume writes the next n."""
    result = {
        "learners": {
            "learner": {"policy_loss": 0.25, "vf_loss": 1.5, "entropy": 1.125, "mean_kl_loss": 0.0625,
                        "vf_explained_var": float("nan"), "default_optimizer_learning_rate": 3e-4},
            "snapshot_0": {"policy_loss": 9.0},
        },
    }
    scalars = iteration_scalars(result, "learner", -13.75, 1210.5)
    assert scalars == {"train/policy_loss": 0.25, "train/value_loss": 1.5, "train/entropy": 1.125,
                       "train/approx_kl": 0.0625, "train/learning_rate": 3e-4, "time/fps": 1210.5,
                       "rollout/agent_return_mean": -13.75}
    assert "rollout/agent_return_mean" not in iteration_scalars(result, "learner", None, 1.0)
    log = tensorboard_writer(str(tmp_path))
    for steps, points in ((128, scalars), (256, {"time/fps": 1300.0})):
        for tag, value in points.items():
            log.add_scalar(tag, value, steps)
    log.close()
    assert log.logdir == str(tmp_path / "tb" / "RLlibPPO_1")
    written = _scalars(log.logdir)
    assert written["time/fps"] == [(128, 1210.5), (256, 1300.0)]
    assert written["rollout/agent_return_mean"] == [(128, -13.75)]
    assert set(written) == set(scalars)
    again = tensorboard_writer(str(tmp_path))
    again.close()
    assert again.logdir == str(tmp_path / "tb" / "RLlibPPO_2")


def test_cli_print_config_takes_what_the_run_takes(tmp_path, capsys, monkeypatch) -> None:
    """A resume in the checkpoint's own run folder (named or not), a new folder, a folder without a run: passed."""
    run, sp = tmp_path / "rl", tmp_path / "sp"
    step = _fake_run(run)
    _fake_run(sp, module=os.path.join("learner_group", "learner", "rl_module", "default_policy"))
    (tmp_path / "empty").mkdir()
    for flags, run_dir in [
        (["--resume", str(run / "final")], run),
        (["--resume", str(sp / "final")], sp),  # a self-play checkpoint resumed in self-play
        (["--run-dir", str(tmp_path / "new"), "--no-tensorboard"], tmp_path / "new"),
        (["--resume", step], run),
        (["--resume", step, "--run-dir", str(run)], run),
        (["--resume", step, "--run-dir", str(tmp_path / "new")], tmp_path / "new"),
        (["--run-dir", str(tmp_path / "empty")], tmp_path / "empty"),
    ]:
        code, out, err = _train([*flags, "--num-players", "2", "--print-config"], capsys, monkeypatch)
        assert code == 0, (flags, err)
        assert os.path.abspath(json.loads(out)["run_dir"]) == str(run_dir)


def test_cli_print_config_imports_neither_ray_nor_torch(tmp_path) -> None:
    """The checks --print-config makes (the run's, before Ray) need neither Ray nor torch: a second at most."""
    run = tmp_path / "rl"
    _fake_run(run)
    code = (
        "import sys; from nertz_env.train.cli import main; "
        f"code = main(['--backend', 'rllib', '--resume', {str(run / 'final')!r}, '--num-players', '2', "
        "'--learners-per-table', '1', '--opponent', 'heuristic=1', '--print-config']); "
        "heavy = sorted({'ray', 'torch'} & set(sys.modules)); "
        "sys.exit(f'{code} {heavy}' if code or heavy else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_cli_a_run_folder_is_refused_in_the_same_line_by_both_backends(tmp_path, capsys, monkeypatch) -> None:
    """A fresh run into a folder holding a run: the same line from the SB3 and the RLlib backend."""
    run = tmp_path / "rl"
    _fake_run(run)
    code, _, rllib = _train(["--num-players", "2", "--run-dir", str(run), "--print-config"], capsys, monkeypatch)
    sb3 = main(["--num-players", "2", "--run-dir", str(run), "--print-config"])
    assert code == sb3 == 2
    assert rllib == capsys.readouterr().err.strip()
    assert rllib.endswith(f"pass a new --run-dir, or continue that run with --backend rllib --resume {run / 'final'}"), rllib


@pytest.mark.parametrize(
    "name", sorted(f for f in os.listdir(os.path.join(os.path.dirname(__file__), "..", "train", "configs")) if f.startswith("rllib"))
)
def test_every_shipped_rllib_config_builds(name: str) -> None:
    path = os.path.join(os.path.dirname(__file__), "..", "train", "configs", name)
    cfg = config_from_args(build_parser().parse_args(["--config", path]))
    check_options(cfg)
    config = build_config(cfg, num_env_runners=2)
    assert config.env_config["num_players"] == cfg.num_players


def test_a_rounded_budget_is_said() -> None:
    cfg = TrainConfig.from_dict(dict(num_tables=16, n_steps=64, learners_per_table=1, total_timesteps=2000))
    note = budget_note(cfg, num_env_runners=2)  # 64 ticks x 16 tables x 1 learner x 2 runners = 2,048
    assert note is not None and "2,048" in note and "2,000" in note
    cfg = TrainConfig.from_dict(dict(num_tables=16, n_steps=64, learners_per_table=1, total_timesteps=4096))
    assert budget_note(cfg, num_env_runners=2) is None


def test_infos__the_schema_keys_at_reset_and_every_step() -> None:
    """Every agent's infos hold nertz_env.infos.RLLIB's keys, typed, at reset and on every step."""
    types = {"bool": bool, "int": int}
    env = env_creator({"num_players": 2, "num_tables": 2, "max_ticks": 20})
    obs, infos = env.reset(seed=0)
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(30):
        for info in infos.values():
            assert set(info) == {k.name for k in RLLIB}
            assert all(type(info[k.name]) is types[k.kind] for k in RLLIB)
            assert info["round_end"] in range(len(ROUND_END_NAMES)) and (info["score"] == 0 or info["round_end"])
        ends += sum(bool(i["round_end"]) for i in infos.values())
        if not env.agents:
            break
        acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
        obs, _, _, _, infos = env.step(acts)
    assert ends == 4  # both tables' rounds ended at max_ticks, seen by both seats


# ---------------------------------------------------------------------------------------------------------
# RLlib's own PettingZoo route (docs/clients/index.md): ParallelPettingZooEnv over nertz_env.parallel_env
def test_parallel_pettingzoo_env_route__one_ppo_iteration_with_rllibs_masking_module(local_ray) -> None:
    """RLlib's documented PettingZoo recipe (``obs_key="observations"``): PPO trains, then plays legally."""
    register_env("nertz_pz", lambda config: ParallelPettingZooEnv(nertz_env.parallel_env(**config)))
    config = (
        PPOConfig()
        .environment("nertz_pz", env_config={"obs_key": "observations", **SMALL})
        .multi_agent(policies={"p0"}, policy_mapping_fn=lambda agent_id, *args, **kwargs: "p0")
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "p0": RLModuleSpec(module_class=ActionMaskingTorchRLModule, model_config={"fcnet_hiddens": [32]})
                }
            )
        )
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
    )
    algo = config.build_algo()
    try:
        before = {k: v.clone() for k, v in algo.get_module("p0").state_dict().items()}
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 256
        module = algo.get_module("p0")
        assert isinstance(module, ActionMaskingTorchRLModule)
        assert any(not (before[k] == v).all() for k, v in module.state_dict().items())
        illegal, decisions = _rollout_illegal(module, SMALL, seed=11)
        assert decisions > 100 and illegal == 0
    finally:
        algo.stop()


def test_parallel_pettingzoo_env_route__without_obs_key_the_masking_module_names_the_way_out() -> None:
    """Without ``obs_key="observations"`` the masking module fails in one line that names the way out."""
    env = ParallelPettingZooEnv(nertz_env.parallel_env(**SMALL))
    with pytest.raises(KeyError, match=r"obs_key='observations'\), or use nertz_env\.rllib\.env_creator"):
        ActionMaskingTorchRLModule(
            observation_space=env.observation_space["player_0"],
            action_space=env.action_space["player_0"],
            model_config={"fcnet_hiddens": [32]},
        )
