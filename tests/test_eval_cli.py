"""``nertz-eval`` refuses what it cannot do, before the first deal: agents that cannot play at the table,
flags that could not take effect; and it plays a MaskablePPO zip trained outside ``nertz-train``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openskill", reason="needs the eval extra: pip install '.[eval]'")
pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")

import nertz_env
from nertz_env.agents import make_agent
from nertz_env.eval.cli import main
from nertz_env.eval.tournament import IncompatibleAgentError, plan_tournament
from nertz_env.extras import install_command


def _fails(argv: list[str], message: str, capsys: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    extra = [] if "--no-save" in argv else ["--out", str(out)]
    assert main([*argv, *extra, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not out.exists()


# ---------------------------------------------------------------- agents that cannot play at the table
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["gauntlet", "ppo", "heuristic", "--players", "2"],
            "num_players: policy 'ppo' has 4, the table has 2; observation size",
        ),
        (
            ["gauntlet", "ppo", "heuristic", "--rule", "draw=1"],
            "rules.draw: policy 'ppo' has 3, the table has 1",
        ),
        (["round-robin", "heuristic", "ppo", "--players", "3"], "num_players: policy 'ppo' has 4"),
    ],
)
def test_incompatible_policy__one_line_exit_2_and_the_table_it_was_trained_for(
    argv: list[str], message: str, capsys: Any, tmp_path: Path
) -> None:
    _fails(argv, message, capsys, tmp_path)


def test_incompatible_policy__refused_in_the_parent_before_any_worker_starts(tmp_path: Path) -> None:
    # the README's promise, as a user sees it: one line, exit 2, even with worker processes
    out = subprocess.run(
        [
            *(sys.executable, "-m", "nertz_env.eval.cli", "gauntlet", "ppo", "heuristic", "--players", "2"),
            *("--workers", "2", "--deals", "4", "--no-save", "--no-progress"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [out.stderr.strip()]
    assert "cannot play at this table" in out.stderr and "--players 4" in out.stderr
    assert out.stdout == ""


def test_plan_tournament__checks_every_agent_against_the_table() -> None:
    with pytest.raises(IncompatibleAgentError, match=r"rules\.draw") as info:
        plan_tournament(["heuristic", "ppo"], num_players=4, deals=1, rules={"draw": 1})
    assert info.value.spec == "ppo" and info.value.trained is not None
    assert info.value.trained.num_players == 4


# ---------------------------------------------------------------- flags that could not take effect
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["round-robin", "random", "greedy", "--deals", "3", "--deal-seeds", "1,2"],
            "--deals 3 would be ignored",
        ),
        (["round-robin", "random", "greedy", "--deal-seeds", "4,5,4"], "--deal-seeds repeats 4"),
        (["round-robin", "random", "greedy", "--deal-seeds", "1,,2"], "--deal-seeds has an empty item"),
        (["round-robin", "random", "greedy", "--deal-seeds", "1,2,"], "--deal-seeds has an empty item"),
        (["round-robin", "random", "greedy", "--deals", "1", "--workers", "2"], "pass --workers 1"),
        (
            ["round-robin", "random", "greedy", "--target-score", "50", "--rule", "target_score=100"],
            "--target-score and --rule target_score",
        ),
        (
            ["round-robin", "random", "greedy", "--no-save", "--out", "somewhere"],
            "--out has no effect with --no-save",
        ),
        (
            ["round-robin", "random", "greedy", "--no-save", "--no-plots"],
            "--no-plots has no effect with --no-save",
        ),
        (["round-robin", "random", "--deals", "2", "--no-rotate"], "--no-rotate has no effect"),
        (["round-robin", "heuristic", "random", "--players", "2", "--rule", "teams=true"], "at least 4"),
        (
            ["round-robin", "heuristic", "random", "--players", "4", "--rule", "teams=[[0,1,2,3]]"],
            "at least two teams",
        ),
    ],
)
def test_cli__a_flag_that_cannot_take_effect_is_an_error(
    argv: list[str], message: str, capsys: Any, tmp_path: Path
) -> None:
    _fails(argv, message, capsys, tmp_path)


def test_cli__default_workers_never_exceed_the_deals(tmp_path: Path, capsys: Any) -> None:
    assert main(["round-robin", "random", "greedy", "--players", "2", "--deals", "1", "--no-save"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("1 worker(s))")
    assert main(["round-robin", "random", "greedy", "--players", "2", "--deal-seeds", "7", "--no-save"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("1 worker(s))")


@pytest.mark.parametrize(
    "command",
    [["round-robin", "random", "greedy"], ["gauntlet", "heuristic", "random"], ["ladder"]],
)
def test_cli__an_out_folder_that_cannot_be_written_is_refused_before_any_deal(
    command: list[str], tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    import nertz_env.eval.cli as cli

    def play(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a deal was played before --out was checked")

    monkeypatch.setattr(cli, "play_tournament", play)
    monkeypatch.chdir(tmp_path)
    Path("q1.py").write_text("print('mine')\n")
    cases = [
        ("q1.py", "--out q1.py: a file of that name exists"),
        ("q1.py/results", "q1.py is a file, not a folder"),
    ]
    if os.path.isdir("/proc/self"):  # Linux: a folder nothing can be created in, even by root
        cases.append(("/proc/self/nertz/out", "cannot create a folder in /proc/self"))
    for out, message in cases:
        assert main([*command, "--players", "2", "--deals", "2", "--out", out, "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    assert Path("q1.py").read_text() == "print('mine')\n"
    assert sorted(os.listdir(tmp_path)) == ["q1.py"]  # nothing left behind, not even the probe


def test_cli__a_new_out_folder_is_made_only_when_the_results_are_saved(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "a" / "b"
    argv = ["round-robin", "random", "greedy", "--players", "2", "--deals", "1", "--no-plots", "--no-progress"]
    assert main([*argv, "--out", str(out), "--rule", "draw=4"]) == 2  # refused after --out was checked
    assert os.listdir(tmp_path) == []
    assert main([*argv, "--out", str(out)]) == 0
    assert (out / "results.json").is_file()
    capsys.readouterr()


# ---------------------------------------------------------------- a model trained outside nertz-train
@pytest.fixture(scope="module")
def outside_model(tmp_path_factory: Any) -> Path:
    """A MaskablePPO trained for a few hundred steps on NertzSingleAgentEnv (2 players, draw=1) and saved
    by SB3 itself: no nertz-env record inside or beside it."""
    import torch
    from sb3_contrib import MaskablePPO

    from nertz_env.train.single import NertzSingleAgentEnv

    torch.set_num_threads(1)
    env = NertzSingleAgentEnv(num_players=2, rules={"draw": 1}, opponents="random")
    model = MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, verbose=0)
    model.learn(256)
    path = tmp_path_factory.mktemp("outside") / "outside.zip"
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        assert "nertz_meta.json" not in zf.namelist()
    assert not path.with_suffix(".json").exists()
    return path


def test_outside_model__plays_in_nertz_eval_at_the_table_given_by_flags(
    outside_model: Path, tmp_path: Path, capsys: Any
) -> None:
    out = tmp_path / "out"
    argv = ["gauntlet", str(outside_model), "random", "--players", "2", "--rule", "draw=1", "--deals", "2"]
    assert main([*argv, "--workers", "1", "--no-progress", "--no-plots", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "has no nertz-env record: assumed trained for this table's rules" in captured.err
    assert f"{outside_model} - random" in captured.out
    games = json.loads((out / "results.json").read_text())["games"]
    assert len(games) == 2 * 2 and all(sum(g["illegal"]) == 0 for g in games)


def test_outside_model__refused_at_a_table_of_other_spaces(
    outside_model: Path, capsys: Any, tmp_path: Path
) -> None:
    _fails(
        ["gauntlet", str(outside_model), "random", "--players", "3", "--deals", "1", "--no-save"],
        "its spaces (observation",
        capsys,
        tmp_path,
    )


def test_outside_model__one_call_each(outside_model: Path, tmp_path: Path) -> None:
    from nertz_env.agents.registry import load_policy_agent, record_rules

    table = nertz_env.make_config(num_players=2, draw=1)
    # make_agent: plays at a table of matching spaces
    agent = make_agent(f"{outside_model}:deterministic=true")
    agent.reset(table, 0, 0)
    env = nertz_env.parallel_env(num_players=2, draw=1)
    obs, _ = env.reset(seed=3)
    a = agent.act(obs["player_0"]["observation"], obs["player_0"]["action_mask"])
    assert obs["player_0"]["action_mask"][a] == 1
    # load_policy_agent with the rules it was trained for: refuses any other table, even of equal spaces
    pinned = load_policy_agent(str(outside_model), config=table)
    pinned.reset(table, 1, 0)
    with pytest.raises(ValueError, match=r"rules\.draw"):
        pinned.reset(nertz_env.make_config(num_players=2, draw=3), 0, 0)
    with pytest.raises(ValueError, match="spaces"):
        load_policy_agent(str(outside_model), config=nertz_env.make_config(num_players=4))
    # record_rules: the zip becomes a nertz-env checkpoint (record inside and beside it)
    copy = tmp_path / "copy.zip"
    copy.write_bytes(outside_model.read_bytes())
    record = record_rules(str(copy), table)
    assert record["num_players"] == 2 and record["rules"]["draw"] == 1
    assert json.loads(copy.with_suffix(".json").read_text()) == record
    with pytest.raises(ValueError, match=r"rules\.draw"):
        make_agent(str(copy)).reset(nertz_env.make_config(num_players=2, draw=3), 0, 0)
    with pytest.raises(ValueError, match=r"num_players: policy .* has 2, the table has 3"):
        record_rules(str(copy), nertz_env.make_config(num_players=3))
    fresh = tmp_path / "fresh.zip"
    fresh.write_bytes(outside_model.read_bytes())
    with pytest.raises(ValueError, match="spaces"):
        record_rules(str(fresh), nertz_env.make_config(num_players=3))
    assert not fresh.with_suffix(".json").exists()


def test_a_zip_that_is_not_a_maskable_policy__one_clear_line(tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("hello.txt", "not a model")
    _fails(["gauntlet", str(bad), "random", "--players", "2", "--no-save"], "bad.zip", capsys, tmp_path)
    assert os.path.isfile(bad)


# ---------------------------------------------------------------- threads
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="torch defaults to one thread on one core anyway")
def test_workers__each_runs_torch_in_one_thread(monkeypatch: Any) -> None:
    import multiprocessing as mp

    from nertz_env.eval import tournament

    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    plan = plan_tournament(["ppo", "heuristic"], num_players=4, deals=2, mode="gauntlet").plan
    with mp.get_context("spawn").Pool(1, initializer=tournament._init_worker, initargs=(plan,)) as pool:
        # in the worker, after its first deal loaded the policy (and torch)
        assert len(pool.apply(tournament._work_many, ([0],))) == 1
        assert pool.apply(eval, ("__import__('torch').get_num_threads()",)) == 1


def test_play_tournament__one_torch_thread_while_playing_then_restored() -> None:
    import torch

    seen = []
    policy = make_agent("ppo")
    act = policy.act

    def spying_act(obs: Any, mask: Any) -> int:
        seen.append(torch.get_num_threads())
        return act(obs, mask)

    policy.act = spying_act  # type: ignore[method-assign]
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        t = plan_tournament(
            ["ppo", "heuristic"],
            num_players=4,
            deals=1,
            mode="gauntlet",
            agent_factory=lambda spec: policy if spec == "ppo" else make_agent(spec),
        )
        from nertz_env.eval.tournament import play_tournament

        play_tournament(t, workers=1)
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_summary_failure__keeps_the_finished_games(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    import nertz_env.eval.cli as cli

    def broken(results: Any) -> Any:
        raise ValueError("teams must have at least 2 teams")

    monkeypatch.setattr(cli, "summarize", broken)
    out = tmp_path / "out"
    argv = ["round-robin", "random", "greedy", "--players", "2", "--deals", "1", "--no-progress", "--out", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "summarising failed (ValueError: teams must have at least 2 teams)" in err, err
    saved = json.loads((out / "results.json").read_text())
    assert len(saved["games"]) == 2 and "summary" not in saved


DEMO_WITHOUT_OPENSKILL = """
import sys
sys.modules["openskill"] = None  # as if the eval extra were not installed
from nertz_env.eval.demo import main
sys.exit(main(["--deals", "1"]))
"""


def test_demo__without_the_eval_extra_says_so_in_one_line() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", DEMO_WITHOUT_OPENSKILL], cwd=root, capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "needs the eval extra" in out.stderr


def test_demo__shows_a_table_and_the_ladder(capsys: Any) -> None:
    from nertz_env.eval.demo import main as demo_main

    assert demo_main(["--deals", "1", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "A 4-player table" in out and "search - heuristic" in out
    assert "nertz-eval ladder --deals 1200 --seed 0" in out  # the README's ladder command


def test_demo__help_says_what_it_shows(capsys: Any) -> None:
    from nertz_env.eval.demo import main as demo_main

    with pytest.raises(SystemExit):
        demo_main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "one rendered tick" not in text
    assert "a 4-player table after 25 ticks of greedy play" in text  # what it prints, see the next test
    assert demo_main(["--deals", "1"]) == 0
    assert "A 4-player table after 25 ticks of greedy play" in capsys.readouterr().out


def test_demo__ctrl_c_in_the_tournament_shows_what_finished_and_exits_130(capsys: Any, monkeypatch: Any) -> None:
    import dataclasses

    import nertz_env.eval.tournament as tournament
    from nertz_env.eval.demo import main as demo_main

    real = tournament.run_tournament

    def interrupted(*args: Any, **kwargs: Any) -> Any:  # as play_tournament returns after a Ctrl-C at deal 2
        results = real(*args, **{**kwargs, "deals": 1})
        return dataclasses.replace(results, interrupted=True)

    monkeypatch.setattr(tournament, "run_tournament", interrupted)
    assert demo_main(["--deals", "5"]) == 130
    captured = capsys.readouterr()
    assert "search - heuristic" in captured.out
    assert "nertz-demo: interrupted; the tables above cover the 1 of 5 deal(s) finished" in captured.err


EVAL_WITHOUT_TORCH = """
import os, sys
sys.modules["torch"] = None  # as if the train extra were not installed
import nertz_env.agents
from nertz_env.eval.cli import main
zip_path = os.path.join(os.path.dirname(nertz_env.agents.__file__), "models", "ppo.zip")
sys.exit(main(["gauntlet", {spec}, "random", "--players", "4", "--deals", "1", "--no-save", "--no-progress"]))
"""


def test_eval__a_sampling_zip_policy_without_the_train_extra_says_what_to_install() -> None:
    # a .zip that samples (deterministic=false) plays through torch and stable-baselines3: the train extra
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = EVAL_WITHOUT_TORCH.format(spec="zip_path + ':deterministic=false'")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and install_command("train") in out.stderr, out.stderr


def test_eval__ppo_by_name_plays_without_the_train_extra() -> None:
    # the shipped networks (ppo, best, expert) play through a numpy forward: no torch needed
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = EVAL_WITHOUT_TORCH.format(spec="'ppo'")
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_every_subcommand_saves_under_eval_out_by_default() -> None:
    # one documented place for nertz-eval's files, relative to where it runs (ladder wrote to bench/out/ladder,
    # a checkout's folder, wherever the user stood)
    import argparse

    from nertz_env.eval.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        assert p.get_default("default_out") == f"eval_out/{name}", name


# ---------------------------------------------------------------- a huge --deals, an absurd --workers
def _no_seeds_up_front(monkeypatch: Any) -> None:
    """Fail at once where the seeds of every deal were built before the first deal (6 µs and about 50 bytes a
    deal: --deals 10000000000 took hours and hundreds of GB with no message)."""
    import nertz_env.eval.tournament as tournament

    real, calls = tournament.deal_seed, [0]

    def counted(seed: int, deal: int) -> int:
        calls[0] += 1
        assert calls[0] <= 1000, "the deal seeds were built up front"
        return real(seed, deal)

    monkeypatch.setattr(tournament, "deal_seed", counted)


def _ctrl_c_at_deal(monkeypatch: Any, stop: int) -> None:
    """Ctrl-C when deal ``stop`` would start (deals ``0 .. stop-1`` finished; one process plays them in order)."""
    import nertz_env.eval.tournament as tournament

    real = tournament._Player.play_deal

    def play_deal(self: Any, deal: int) -> Any:
        if deal == stop:
            raise KeyboardInterrupt
        return real(self, deal)

    monkeypatch.setattr(tournament._Player, "play_deal", play_deal)


def test_plan_tournament__a_huge_number_of_deals_computes_each_seed_when_dealt(monkeypatch: Any) -> None:
    import pickle

    from nertz_env.eval.tournament import deal_seed

    _no_seeds_up_front(monkeypatch)
    plan = plan_tournament(["random", "greedy"], num_players=2, deals=10**10, seed=3).plan
    assert len(plan.deal_seeds) == 10**10
    assert plan.deal_seeds[7] == deal_seed(3, 7) and plan.deal_seeds[-1] == deal_seed(3, 10**10 - 1)
    assert plan.deal_seeds[:3] == [deal_seed(3, i) for i in range(3)]
    assert pickle.loads(pickle.dumps(plan)) == plan  # as the worker processes and Ray tasks get it
    with pytest.raises(IndexError):
        plan.deal_seeds[10**10]


def test_cli__a_huge_deals_starts_at_once_and_ctrl_c_saves_the_finished_deals(
    tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    from nertz_env.eval.tournament import deal_seed

    _no_seeds_up_front(monkeypatch)
    _ctrl_c_at_deal(monkeypatch, 3)
    out = tmp_path / "out"
    argv = ["round-robin", "random", "greedy", "--players", "2", "--deals", "10000000000", "--workers", "1"]
    assert main([*argv, "--out", str(out), "--no-plots", "--no-progress"]) == 130
    assert "interrupted; kept 3 finished deal(s)" in capsys.readouterr().err
    data = json.loads((out / "results.json").read_text())
    assert data["deals_done"] == [0, 1, 2] and data["deals_planned"] == 10**10 and data["interrupted"]
    assert data["deal_seeds"] == [deal_seed(0, i) for i in range(3)]  # only the seeds of deals played
    assert "[interrupted: 3 of 10000000000 deals]" in (out / "table.txt").read_text()


def test_cli__more_workers_than_cpus_is_refused(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    # --workers 1000 --deals 1000 started 999 processes on 2 cores (load average 198), none finished a deal
    import nertz_env.eval.cli as cli

    monkeypatch.setattr(cli, "usable_cpus", lambda: 2)
    argv = ["round-robin", "random", "greedy", "--deals", "1000", "--workers", "3"]
    _fails(argv, "--workers 3 is more than the 2 CPU(s) this process can use", capsys, tmp_path)
    _fails([*argv[:-1], "1000000000000"], "pass --workers 2 or fewer", capsys, tmp_path)


def test_demo__a_huge_deals_starts_at_once_and_ctrl_c_shows_the_finished(capsys: Any, monkeypatch: Any) -> None:
    from nertz_env.eval.demo import main as demo_main

    _no_seeds_up_front(monkeypatch)
    _ctrl_c_at_deal(monkeypatch, 1)
    assert demo_main(["--deals", "10000000000"]) == 130
    captured = capsys.readouterr()
    assert "search - heuristic" in captured.out and "[interrupted: 1 of 10000000000 deals]" in captured.out
    assert "the tables above cover the 1 of 10000000000 deal(s) finished" in captured.err


def test_demo__ctrl_c_before_any_deal_finished_shows_no_empty_table(capsys: Any, monkeypatch: Any) -> None:
    from nertz_env.eval.demo import main as demo_main

    _ctrl_c_at_deal(monkeypatch, 0)
    assert demo_main(["--deals", "5"]) == 130
    captured = capsys.readouterr()
    assert "score difference" not in captured.out and "agent " not in captured.out  # no table of dashes
    assert captured.err.strip().splitlines()[-1] == "nertz-demo: interrupted before any of the 5 deal(s) finished"
