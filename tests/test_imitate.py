"""Learning from a teacher (nertz_env.train.imitate, distill, expert): behaviour cloning and DAgger, distilling a
planner into the network, and expert iteration with the learned planner (``expert``, shipped as ``best``).
Their bad input is one line and exit 2 before anything is written; their Ctrl-C: test_interrupt.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")

import nertz_env
from conftest import one_line, run_main
from nertz_env.agents import AgentSpecError, BestAgent, known_agents, make_agent
from nertz_env.agents.expert import ExpertAgent
from nertz_env.train import distill, expert, imitate
from nertz_env.train.meta import read_meta
from nertz_env.train.policy_agent import load_policy
from procs import ctrl_c_at
from test_agents import play
from test_train import _policy_file, _quiet, _same_weights

WAIT = nertz_env.action_table(nertz_env.make_config(num_players=3)).lookup("wait")
# a small imitation run with two DAgger rounds (test_interrupt.py stops it and resumes it)
IMITATE = ["--teacher", "greedy", "--players", "2", "--samples", "64", "--epochs", "2", "--batch-size", "32",
           "--net-arch", "16", "--dagger-rounds", "2", "--dagger-samples", "32", "--dagger-epochs", "1"]
# a small expert iteration: two iterations of the planner over ppo_imitation (test_interrupt.py stops it too)
EXPERT = ["--init", "ppo_imitation", "--iterations", "2", "--samples", "24", "--epochs", "1", "--batch-size", "32",
          "--planner", "rollouts=2"]


def _legal_play(spec: str, num_players: int, ticks: int, seed: int = 1) -> list[int]:
    """Seat 0's (``spec``) actions over ``ticks`` ticks against heuristic seats (an illegal one raises)."""
    env = nertz_env.parallel_env(num_players=num_players, illegal_action="raise")
    moves, _ = play(env, [spec] + ["heuristic"] * (num_players - 1), seed, agent_seed=100, ticks=ticks)
    return [m["player_0"] for m in moves]


# ---------------------------------------------------------------- bad input: one line, exit 2, nothing written
REFUSED = [
    # the checks the three commands share (imitate.check_common), once each
    ("imitate", ["--samples", "0"], "argument --samples: must be at least 1, got 0"),
    ("expert", ["--lr", "0"], "--lr must be a finite number > 0"),
    ("imitate", ["--teacher-threads", "5"], "--teacher-threads must be from 1 to the 4 seats"),
    ("imitate", ["--rule", "target_score=100"], "single rounds"),
    ("imitate", ["--out", "{tmp}/policy"], "must end in .zip"),
    # an --out that is a folder would fail only at the last save
    ("expert", ["--out", "{tmp}/folder.zip"], "directory"),
    ("imitate", ["--checkpoint-dir", "{tmp}/three.zip"], "is a file, not a directory"),
    # each command's own
    ("imitate", ["--dagger-samples", "5000"], "--dagger-samples has no effect without DAgger rounds"),
    ("imitate", ["--gamma", "2"], "--gamma must be in (0, 1]"),
    ("imitate", ["--net-arch", "16,0"], "comma-separated positive integers"),
    ("imitate", ["--teacher", "nobody"], "unknown agent 'nobody'"),
    ("imitate", ["--teacher", "{tmp}/three.zip"], "num_players:"),
    ("expert", ["--init", "runs/missing.zip"], "no network"),
    ("expert", ["--init", "scratch"], "scores moves or reads last_moves"),  # a moves network, with last_moves
    ("distill", ["--run-dir", "{tmp}/a", "--init", "ppo"], "such as ppo_imitation"),
    ("expert", ["--planner", "rollouts=-1"], "rollouts"),
    ("expert", ["--planner", "policy =ppo"], "--init"),
    ("expert", ["--rule", "draw=1"], "draw"),
    # an earlier run's log would be appended to
    ("expert", ["--checkpoint-dir", "{tmp}/earlier"], "earlier run"),
    ("distill", ["--run-dir", "{tmp}/a", "--anchor", "-1"], "--anchor must be a finite number >= 0"),
    ("distill", ["--run-dir", "{tmp}/a", "--init", "nope.zip"], "--init: no network"),
    ("distill", ["--run-dir", "{tmp}/a", "--players", "2"], "num_players"),
    ("distill", ["--resume", "{tmp}/none"], "no distillation run there"),
    ("distill", ["--resume", "{tmp}/none", "--lr", "1e-3"], "cannot change a run being resumed"),
    ("distill", [], "give --run-dir"),
]
DEFAULTS = {
    "imitate": {"--out": "{tmp}/bc/policy.zip", "--checkpoint-dir": "{tmp}/rounds", "--samples": "50"},
    "expert": {"--out": "{tmp}/p.zip", "--checkpoint-dir": "{tmp}/it"},
    "distill": {},
}


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize(("command", "flags", "message"), REFUSED, ids=[f"{c} {' '.join(f)}" for c, f, _ in REFUSED])
def test_bad_input__one_line_exit_2_and_nothing_written(
    command: str, flags: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    if "{tmp}/three.zip" in flags:
        _policy_file(str(tmp_path / "three.zip"), 3)
    (tmp_path / "earlier").mkdir()
    (tmp_path / "earlier" / "log.jsonl").write_text('{"iteration": 1}\n')
    (tmp_path / "folder.zip").mkdir()
    before = _files(tmp_path)
    argv = [*flags, *(x for k, v in DEFAULTS[command].items() if k not in flags for x in (k, v))]
    main = {"imitate": imitate, "expert": expert, "distill": distill}[command].main
    code, _, err = run_main(main, [a.format(tmp=tmp_path) for a in argv], capsys)
    assert code == 2 and message in one_line(err, f"python -m nertz_env.train.{command}"), err
    assert _files(tmp_path) == before


# ---------------------------------------------------------------- behaviour cloning and DAgger
def test_imitation_returns__discount_the_shaped_rewards_backwards() -> None:
    # 3 steps: the Nertz pile goes 3 -> 2 -> 2, rewards 1, 0, -4 (the round's end penalty for 2 cards)
    got = imitate._returns([1.0, 0.0, -4.0], [3, 2, 2], gamma=0.5, coef=2.0)
    # shaped: r0 = 1 + (-4 - -6) = 3; r1 = 0 + (-4 - -4) = 0; r2 = -4 + (0 - -4) = 0
    np.testing.assert_allclose(got, [3.0, 0.0, 0.0])
    np.testing.assert_allclose(imitate._returns([1.0, 0.0, -4.0], [3, 2, 2], gamma=1.0, coef=0.0),
                               [-3.0, -4.0, -4.0])


def test_imitation__fits_the_teacher_and_writes_a_policy_that_plays(tmp_path: Path) -> None:
    out = str(tmp_path / "bc.zip")
    res = imitate.imitate(out, teacher="heuristic", num_players=3, samples=3000, seed=3, net_arch=[64],
                          epochs=10, log=_quiet)
    assert res["samples"] >= 3000 and res["accuracy"] > 0.6, res
    meta = read_meta(out)
    assert meta["num_players"] == 3 and meta["mode"] == "imitation"
    _legal_play(out + ":deterministic=true", 3, ticks=30)  # through load_policy, as init_from reads it


def test_imitation__relative_returns_are_the_score_minus_the_rivals_mean() -> None:
    config = nertz_env.make_config(num_players=3)
    # one round, the same deal twice
    plain = imitate.collect("heuristic", config, 10, seed=5, gamma=1.0, shaping=False)
    relative = imitate.collect("heuristic", config, 10, seed=5, gamma=1.0, shaping=False,
                               relative_reward=True)
    scores = plain.returns[:3]  # every seat's first record: with gamma 1 and no shaping, its round score
    assert len(set(scores.tolist())) > 1
    np.testing.assert_allclose(relative.returns[:3], scores - (scores.sum() - scores) / 2, atol=1e-5)


def test_dagger__the_student_drives_one_seat_and_the_teacher_labels_it() -> None:
    class Waiter:  # a student that always waits: the teacher's labels must still be its own moves
        name = "waiter"

        def reset(self, config: Any, seat: int, seed: int | None = None) -> None:
            self.seat = seat

        def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
            return WAIT

    config = nertz_env.make_config(num_players=3)
    teacher_only = imitate.collect("heuristic", config, 600, seed=2)
    dagger = imitate.collect("heuristic", config, 600, seed=2, student=Waiter())
    # seat 0 of the first round waits all the time, so that round is not the teacher-only round ...
    assert not np.array_equal(dagger.obs[:600], teacher_only.obs[:600])
    # ... but every label is a legal teacher move, and the driven seat's labels are not all waits
    assert dagger.masks[np.arange(len(dagger.actions)), dagger.actions].all()
    assert (dagger.actions[0 : 3 * 200 : 3] != WAIT).any()  # seat 0's records of the first 200 ticks


def test_imitation__teachers_in_threads_record_exactly_what_one_thread_records() -> None:
    config = nertz_env.make_config(num_players=3)
    one = imitate.collect("search", config, 150, seed=9)
    two = imitate.collect("search", config, 150, seed=9, teacher_threads=2)
    for field in ("obs", "masks", "actions", "returns"):
        assert np.array_equal(getattr(one, field), getattr(two, field)), field


def test_dagger__checkpoints_every_round_and_the_last_is_the_saved_policy(tmp_path: Path) -> None:
    out, ckpt = tmp_path / "bc.zip", tmp_path / "rounds"
    assert imitate.main([*IMITATE, "--out", str(out), "--checkpoint-dir", str(ckpt)]) == 0
    assert sorted(p.name for p in ckpt.glob("*.zip")) == ["round_00.zip", "round_01.zip", "round_02.zip"]
    assert [read_meta(str(ckpt / f"round_0{k}.zip"))["imitation"]["dagger_rounds"] for k in range(3)] == [0, 1, 2]
    final = load_policy(str(out))[0].state_dict()
    assert _same_weights(load_policy(str(ckpt / "round_02.zip"))[0].state_dict(), final)
    assert not _same_weights(load_policy(str(ckpt / "round_00.zip"))[0].state_dict(), final)  # the rounds fit something


# ---------------------------------------------------------------- distillation
DISTILL = {"init": "ppo_imitation", "teacher": "heuristic", "samples": 150, "epochs": 1, "lr": 1e-4, "anchor": 0.5,
           "batch_size": 128, "seed": 3}  # a cheap teacher; the phase's own teacher (best) is the same code path


def test_distill__a_resumed_run_ends_with_the_same_network_as_one_that_never_stopped(tmp_path: Path) -> None:
    whole, split = tmp_path / "whole", tmp_path / "split"
    distill.distill(str(whole), rounds=2, log=_quiet, **DISTILL)
    distill.distill(str(split), rounds=1, log=_quiet, **DISTILL)
    distill.distill(str(split), rounds=2, resume=True, log=_quiet)
    final = load_policy(str(whole / "policy.zip"))[0].state_dict()
    assert _same_weights(final, load_policy(str(split / "policy.zip"))[0].state_dict())
    assert not _same_weights(final, load_policy(str(whole / "rounds" / "round_00.zip"))[0].state_dict())  # the fit moved it
    rows = [json.loads(line) for line in (split / "log.jsonl").read_text().splitlines()]
    assert [r["round"] for r in rows] == [1, 2]
    assert rows[1]["fitted_on"] == rows[0]["decisions"] + rows[1]["decisions"]  # DAgger keeps every round
    assert 0.0 <= rows[0]["agreement_before_fit"] <= 1.0 and "anchor_kl" in rows[0]
    assert make_agent(str(split / "policy.zip") + ":deterministic=true").actor is not None  # plays in numpy


def test_distill__ctrl_c_prints_the_rounds_on_disk_and_the_command_that_continues(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ctrl_c_at(monkeypatch, distill, "collect", 2, sigint=False)  # while the second round plays
    argv = [f"--{k.replace('_', '-')}={v}" for k, v in DISTILL.items()]
    assert distill.main(["--run-dir", str(tmp_path / "r"), "--rounds", "3", *argv]) == 130
    err = capsys.readouterr().err
    assert f"interrupted; saved 1 of 3 rounds in {tmp_path / 'r'}" in err
    assert err.strip().endswith(f"--rounds 3 --resume {tmp_path / 'r'}")


# ---------------------------------------------------------------- the learned planner and expert iteration
def test_expert__same_decisions_run_to_run_and_the_planner_overrides_its_network_sometimes() -> None:
    """With rollouts the planner sometimes overrides its network's first choice; with rollouts=0, hardly."""
    first = _legal_play("expert:policy=ppo", 4, ticks=40, seed=4)
    assert first == _legal_play("expert:policy=ppo", 4, ticks=40, seed=4) and len(first) > 20
    # scratch was trained with its last move in view, which this table lacks: the network reads its own record
    _legal_play("expert:policy=scratch,rollouts=4", 4, ticks=20)

    class Counting(ExpertAgent):
        overrides = decisions = 0

        def _choose(self, s, action_mask):  # type: ignore[no-untyped-def]
            a = super()._choose(s, action_mask)
            type(self).decisions += 1
            type(self).overrides += int(a != int(np.argmax(self._probs)))
            return a

    env = nertz_env.parallel_env(num_players=4)
    for rollouts in (16, 0):
        Counting.overrides = Counting.decisions = 0
        play(env, [Counting(policy="ppo", rollouts=rollouts) for _ in range(4)], seed=0, agent_seed=0)
        assert Counting.overrides > 0 if rollouts else Counting.overrides <= Counting.decisions * 0.05


def test_expert__bad_specs_and_other_tables_are_refused_and_best_is_the_planner_with_ppo() -> None:
    for spec, says in (("expert:base=oracle", "base"), ("expert:prior=-1", "prior"),
                       ("expert:policy=ppo,policy=runs/none.zip", "given twice"), ("expert:margin=nan", "margin"),
                       ("search:margin=nan", "margin"), ("best:margin=-1", ">= 0"), ("expert:top=-1", "top must be"),
                       ("expert:policy=", "policy must name"), ("best:others=nan", "others"),
                       ("expert:rollouts=0,prior=1", "prior"), ("expert:rollouts=0,top=3,horizon=5", "top, horizon"),
                       ("expert:rollouts=0,base=heuristic", "use 'heuristic'")):
        with pytest.raises(AgentSpecError, match=says):
            make_agent(spec)
    with pytest.raises(FileNotFoundError, match=r"none\.zip"):  # when built, not at the first deal
        make_agent("expert:policy=runs/none.zip")
    agent = make_agent("expert:policy=ppo_imitation")
    with pytest.raises(ValueError, match=r"players|rules|table"):
        agent.reset(nertz_env.make_config(num_players=2), 0, 0)
    assert agent.trained_config == nertz_env.make_config(num_players=4)  # what nertz-eval's refusal names
    _legal_play("expert:rollouts=0", 4, ticks=5)  # the network's first choice, every tick
    best = make_agent("best")
    assert isinstance(best, BestAgent) and best.name == "best"
    assert (best.policy_spec, best.margin, best.prior, best.base) == ("ppo_imitation", 0.3, 0.0, "policy")
    assert "best" in known_agents() and "expert" in known_agents()
    _legal_play("best", 4, ticks=3)


def test_expert_iteration__a_tiny_run_saves_loads_and_plays_in_nertz_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Two tiny iterations: networks saved with their record, the log the run's, the result plays."""
    from nertz_env.eval.cli import main as eval_main

    out, ckpt = tmp_path / "best.zip", tmp_path / "iters"
    assert expert.main([*EXPERT, "--out", str(out), "--checkpoint-dir", str(ckpt)]) == 0
    rows = [json.loads(line) for line in (ckpt / "log.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in rows] == [1, 2]
    assert rows[0]["decisions"] >= 24 and rows[1]["fitted_on"] == rows[0]["decisions"] + rows[1]["decisions"]
    assert rows[1]["teacher"].startswith(f"expert:policy={ckpt / 'iter_01.zip'}")
    assert (ckpt / "iter_02.zip").is_file() and out.is_file()
    capsys.readouterr()
    spec = f"expert:policy={out},rollouts=4"
    assert eval_main(["gauntlet", spec, "heuristic", "--players", "4", "--deals", "1", "--no-save", "--no-progress",
                      "--workers", "1"]) == 0
    assert f"{spec} - heuristic" in capsys.readouterr().out
