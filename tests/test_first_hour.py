"""A new user's first hour, replayed: the commands a user types, through the console scripts' modules, checked for the answers that were wrong before (issue 14).

Each step is a separate test so a failure names the step. The README's own commands are run by
``tests/test_readme.py``; this file follows the path a user takes after reading it: a gauntlet with several
opponents whose printed differences must be same-table figures, a tiny training run that says how its budget
rounds, a MaskablePPO model trained outside ``nertz-train`` evaluated with no metadata file, the bad inputs
that used to print tracebacks, and copies of every environment.
"""

from __future__ import annotations

import copy
import csv
import os
import pickle
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _command(module: str) -> list[str]:
    """``python -m`` of a console script's module, run from the checkout root: the code under test (an
    installed script may be an older copy of the package)."""
    return [sys.executable, "-m", module]


EVAL = _command("nertz_env.eval.cli")
TRAIN = _command("nertz_env.train.cli")


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env, check=False)


def _one_line_exit_2(proc: subprocess.CompletedProcess[str], needle: str) -> None:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    errors = [line for line in lines if "error" in line]
    assert len(errors) == 1 and needle in errors[0], lines


def test_gauntlet_with_several_opponents__differences_are_same_table_figures(tmp_path: Path) -> None:
    """``ppo - search`` must be ppo against the three search seats at their table, recomputed from games.csv;
    two opponents that never sat together get no difference."""
    out = tmp_path / "g"
    proc = _run([*EVAL, "gauntlet", "heuristic", "random", "greedy", "--deals", "3", "--seed", "1",
                 "--workers", "1", "--no-progress", "--out", str(out)], ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open(out / "games.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    # per table (lineup) and deal: the candidate's mean minus the opponents' mean, as the README defines it
    cand: dict[tuple[int, int], list[float]] = defaultdict(list)
    opp: dict[tuple[int, int], list[float]] = defaultdict(list)
    opponent_of: dict[int, str] = {}
    for r in rows:
        key = (int(r["lineup"]), int(r["deal"]))
        score = int(r["score"]) / int(r["rounds"])
        if r["agent"] == "heuristic":
            cand[key].append(score)
        else:
            opp[key].append(score)
            opponent_of[int(r["lineup"])] = r["agent"]
    assert sorted(opponent_of.values()) == ["greedy", "random"]
    with open(out / "differences.csv", newline="") as f:
        diffs = list(csv.DictReader(f))
    pairs = {tuple(sorted((d["agent_a"], d["agent_b"]))) for d in diffs} if diffs and "agent_a" in diffs[0] else None
    for lineup, other in opponent_of.items():
        per_deal = [np.mean(cand[(lineup, d)]) - np.mean(opp[(lineup, d)]) for d in range(3)]
        expected = f"{np.mean(per_deal):.2f}"
        row = [line for line in proc.stdout.splitlines() if f" heuristic - {other} " in line]
        assert len(row) == 1, proc.stdout
        assert expected in row[0].replace("+", ""), (row[0], expected)
    assert "random - greedy" not in proc.stdout and "greedy - random" not in proc.stdout
    if pairs is not None:
        assert ("greedy", "random") not in pairs


def test_a_tiny_training_run_says_how_its_budget_rounds(tmp_path: Path) -> None:
    proc = _run([*TRAIN, "--total-timesteps", "100", "--num-tables", "2", "--n-steps", "16", "--batch-size", "32",
                 "--eval-deals", "0", "--checkpoint-every", "0", "--run-dir", str(tmp_path / "run")], ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = proc.stdout + proc.stderr
    assert "not total_timesteps 100" in said, said[-2000:]
    assert (tmp_path / "run" / "policy.zip").is_file()


def test_a_flag_that_cannot_take_effect_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = _run([*TRAIN, "--opponent", "search=1", "--run-dir", str(tmp_path / "run")], ROOT)
    _one_line_exit_2(proc, "--learners-per-table")
    assert not (tmp_path / "run").exists()


def test_a_policy_for_another_table_is_refused_before_the_first_deal(tmp_path: Path) -> None:
    proc = _run([*EVAL, "gauntlet", "ppo", "heuristic", "--players", "2", "--deals", "1", "--no-save"], ROOT)
    _one_line_exit_2(proc, "--players 4")
    proc = _run([*EVAL, "gauntlet", "ppo", "heuristic", "--rule", "draw=1", "--deals", "1", "--no-save"], ROOT)
    _one_line_exit_2(proc, "draw")


def test_a_maskable_ppo_model_trained_elsewhere_plays_in_nertz_eval(tmp_path: Path) -> None:
    """The README's single-agent example, shortened: the zip plays with no metadata file."""
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from nertz_env.train import NertzSingleAgentEnv

    env = NertzSingleAgentEnv(num_players=4, opponents={"heuristic": 1.0})
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, seed=0,
                                    policy_kwargs={"net_arch": [16]})
    model.learn(total_timesteps=64)
    path = tmp_path / "outside.zip"
    model.save(path)
    assert not path.with_suffix(".json").exists()
    proc = _run([*EVAL, "gauntlet", str(path), "heuristic", "--players", "4", "--deals", "1", "--no-save",
                 "--no-progress"], ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "outside.zip" in proc.stdout
    proc = _run([*EVAL, "gauntlet", str(path), "heuristic", "--players", "3", "--deals", "1", "--no-save"], ROOT)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]


def _envs() -> dict[str, object]:
    import nertz_env

    return {
        "parallel_env": nertz_env.parallel_env(num_players=3),
        "vector_env": nertz_env.vector_env(num_tables=2, num_players=3),
        "agent_vector_env": nertz_env.agent_vector_env(num_tables=2, num_players=3),
    }


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_copies_of_every_environment_continue_exactly(how: str) -> None:
    """A copy made mid-game continues as the original: same observations for the same actions."""
    for name, env in _envs().items():
        obs, _ = env.reset(seed=3)  # type: ignore[attr-defined]
        rng = np.random.default_rng(0)

        def actions(o: object, env: object = env, rng: np.random.Generator = rng, name: str = name) -> object:
            if name == "parallel_env":
                return {a: int(rng.choice(np.flatnonzero(o[a]["action_mask"]))) for a in env.agents}  # type: ignore[index, attr-defined]
            masks = o["action_mask"]  # type: ignore[index]
            flat = masks.reshape(-1, masks.shape[-1])
            return np.array([rng.choice(np.flatnonzero(m)) for m in flat]).reshape(masks.shape[:-1])

        for _ in range(5):
            obs, *_ = env.step(actions(obs))  # type: ignore[attr-defined]
        twin = pickle.loads(pickle.dumps(env)) if how == "pickle" else copy.deepcopy(env)
        for _ in range(20):
            act = actions(obs)
            obs, *_ = env.step(act)  # type: ignore[attr-defined]
            obs2, *_ = twin.step(act)
            if name == "parallel_env":
                for a in obs:
                    assert np.array_equal(obs[a]["observation"], obs2[a]["observation"]), name
            else:
                assert np.array_equal(obs["observation"], obs2["observation"]), name
            if name == "parallel_env" and not env.agents:  # type: ignore[attr-defined]
                break
