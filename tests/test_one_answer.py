"""One answer per question (issue 21): a trained policy plays its most probable action everywhere unless
told to sample, and every result table says which; the single-agent and SB3 vector envs take rules as
keywords like the other envs; refusals name the real cause; the docs state the defaults the code has; the
training progress bar ends at the budget it trains to."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sb3_contrib", reason="needs the train extra")

from nertz_env.agents import AgentSpecError, make_agent
from nertz_env.agents.registry import shipped_models
from nertz_env.eval.cli import main as eval_main
from nertz_env.train import NertzSingleAgentEnv, NertzVecEnv, TrainConfig
from nertz_env.train.evaluate import append_csv, evaluate_checkpoint, format_rows

ROOT = Path(__file__).resolve().parents[1]
PPO = shipped_models()["ppo"]


# ---------------------------------------------------------------- one default for a trained policy
def test_a_zip_by_path_plays_its_most_probable_action_unless_told_to_sample() -> None:
    by_path = make_agent(PPO)  # the same file the shipped name plays
    assert by_path.deterministic and by_path.play == "most probable"  # type: ignore[attr-defined]
    assert make_agent("ppo").deterministic  # type: ignore[attr-defined]
    sampled = make_agent(f"{PPO}:deterministic=false")
    assert not sampled.deterministic and sampled.play == "sampled"  # type: ignore[attr-defined]


def test_nertz_eval_tables_and_files_name_how_each_policy_played(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "out"
    sampled = f"{PPO}:deterministic=false"
    argv = ["round-robin", "ppo", sampled, "random", "--deals", "1", "--workers", "1", "--no-progress"]
    assert eval_main([*argv, "--no-plots", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"policies play: ppo: most probable action; {sampled}: sampled from the policy" in text
    assert "policies play:" in (out / "table.txt").read_text()
    rows = {r["agent"]: r for r in csv.DictReader((out / "summary.csv").open())}
    assert (rows["ppo"]["play"], rows[sampled]["play"], rows["random"]["play"]) == ("most probable", "sampled", "")
    assert {r["agent"]: r["play"] for r in csv.DictReader((out / "tables.csv").open())}["ppo"] == "most probable"
    saved = json.loads((out / "results.json").read_text())
    assert saved["play"] == ["most probable", "sampled", ""]
    assert [a["play"] for a in saved["summary"]["agents"]] == ["most probable", "sampled", ""]


def test_training_evaluation_rows_name_how_the_policy_played() -> None:
    rows = evaluate_checkpoint(PPO, ["random"], 4, {}, deals=1, seed=0)
    assert rows[0].play == "most probable" and "most probable" in format_rows(rows)
    rows = evaluate_checkpoint(PPO, ["random"], 4, {}, deals=1, seed=0, deterministic=False)
    assert rows[0].play == "sampled" and "sampled" in format_rows(rows)


def test_eval_csv_written_before_the_play_column_gains_it_on_the_next_row(tmp_path: Path) -> None:
    path = tmp_path / "eval.csv"
    path.write_text("timesteps,baseline\n100,random\n")
    append_csv(str(path), [{"timesteps": 200, "baseline": "random", "play": "most probable"}])
    rows = list(csv.DictReader(path.open()))
    assert [(r["timesteps"], r["play"]) for r in rows] == [("100", ""), ("200", "most probable")]


# ---------------------------------------------------------------- rules as keywords
def test_single_agent_and_sb3_vector_envs_take_rules_as_keywords() -> None:
    env = NertzSingleAgentEnv(num_players=2, draw=1, opponents=["random"])
    assert env.config.draw == 1 and env.config.num_players == 2
    assert NertzSingleAgentEnv(2, {"draw": 1}).config == env.config  # the rules= form stays
    venv = NertzVecEnv(1, 2, draw=1)
    assert venv.config == env.config
    venv.close()
    with pytest.raises(ValueError, match=r"not both"):
        NertzSingleAgentEnv(2, rules={"draw": 1}, jokers=2)
    with pytest.raises(ValueError, match=r"not both"):
        NertzVecEnv(1, 2, rules={"draw": 1}, jokers=2)
    with pytest.raises(ValueError, match=r"unknown option"):
        NertzSingleAgentEnv(2, drawn=1)


# ---------------------------------------------------------------- refusals name the real cause
def test_a_policy_refused_for_a_rule_names_that_rule_not_the_table_size(capsys: Any) -> None:
    argv = ["gauntlet", "ppo", "heuristic", "--rule", "draw=1", "--no-save", "--no-progress"]
    assert eval_main(argv) == 2
    err = capsys.readouterr().err
    assert "drop --rule draw=1" in err and "--players" not in err, err
    assert eval_main(["gauntlet", "ppo", "heuristic", "--players", "2", "--no-save", "--no-progress"]) == 2
    assert "pass --players 4" in capsys.readouterr().err


def test_a_run_folder_given_as_an_agent_points_to_its_policy(tmp_path: Path, capsys: Any) -> None:
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    with pytest.raises(AgentSpecError, match=r"run folder with no policy\.zip and nothing in checkpoints/"):
        make_agent(str(run))
    (run / "checkpoints" / "step_000000000128.zip").write_bytes(b"")
    with pytest.raises(AgentSpecError, match=r"step_000000000128\.zip"):
        make_agent(str(run))
    shutil.copy(PPO, run / "policy.zip")
    with pytest.raises(AgentSpecError, match=r"nertz-train run folder, not an agent: play its policy with .*policy\.zip"):
        make_agent(str(run))
    assert eval_main(["gauntlet", str(run), "random", "--no-save", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "policy.zip" in err and "RLlib" not in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- the docs state the code's defaults
_DEFAULT_PHRASES = (
    re.compile(r"`(\w+)`,? (\d[\d,_]*) by default"),
    re.compile(r"`(\w+)` defaults to (\d[\d,_]*)"),
    re.compile(r"`(\w+)` \(default (\d[\d,_]*)\)"),
)


def test_docs_give_the_training_options_defaults_the_code_has() -> None:
    defaults = TrainConfig().flat()
    checked = []
    for doc in [ROOT / "README.md", ROOT / "train" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        if not doc.is_file():
            continue
        for pattern in _DEFAULT_PHRASES:
            for name, number in pattern.findall(doc.read_text()):
                if name in defaults:
                    checked.append(name)
                    said = int(number.replace(",", "").replace("_", ""))
                    assert said == defaults[name], f"{doc.name} says {name} defaults to {said}; it is {defaults[name]}"
    assert "eval_deals" in checked


# ---------------------------------------------------------------- the progress bar ends at the budget
def test_training_progress_bar_ends_at_the_rounded_up_budget(tmp_path: Path, capsys: Any) -> None:
    from nertz_env.train import Trainer

    cfg = TrainConfig.from_dict(
        {"num_tables": 2, "n_steps": 16, "batch_size": 64, "n_epochs": 1, "net_arch": [16],
         "total_timesteps": 100, "checkpoint_every": 0, "eval_every": 0, "eval_deals": 0,
         "progress_bar": True, "tensorboard": False, "run_dir": str(tmp_path / "run")}
    )
    Trainer(cfg, log=lambda _: None).train()  # a rollout is 16 x 2 tables x 4 seats = 128 transitions
    err = capsys.readouterr().err
    assert "128/128" in err and "/100" not in err, err[-400:]


# ---------------------------------------------------------------- examples that train show progress and their time
def test_every_documented_training_example_shows_progress_and_says_how_long_it_takes() -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "train" / "README.md"]
    found = 0
    for doc in filter(Path.is_file, docs):
        text = doc.read_text()
        for block in re.finditer(r"```python\n(.*?)```(?=(.{0,800}))", text, re.S):
            code, after = block.group(1), block.group(2)
            for call in re.findall(r"\.learn\((.*total_timesteps.*)\)", code):  # SB3's learn (not another lib's)
                found += 1
                assert "progress_bar=True" in call, f"{doc.name}: model.learn({call}) shows no progress"
                # a figure, or what the time depends on and the benchmark that measures it on your machine
                told = re.search(r"takes about [\d.]+ min|python bench/bench_\w+\.py", code + after)
                assert told, f"{doc.name}: {call}: says nothing of how long it takes"
    assert found >= 1


def test_format_rows__the_star_is_explained_when_a_row_has_one() -> None:
    from nertz_env.train.evaluate import EvalRow

    def row(low: float) -> EvalRow:
        return EvalRow(0, "heuristic", 10, 40, 1.0, 0.5, 0.0, 1.0, low, 2.0, 0.3, 0.2, 0, 1.0, "x.zip")

    above, across = format_rows([row(0.1)]), format_rows([row(-0.1)])
    assert "]*" in above and above.splitlines()[-1] == "  * the 95% interval of diff (policy minus baseline) lies above 0"
    assert "*" not in across and len(across.splitlines()) == 1
