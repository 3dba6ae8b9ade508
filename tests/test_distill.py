"""Distillation of a planner into the network (nertz_env.train.distill): a tiny run, saving and resuming exactly."""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

pytest.importorskip("sb3_contrib", reason="needs the train extra: pip install '.[train]'")

# a cheap teacher keeps the run to seconds; the phase's own teacher (best) is the same code path
TINY = {"init": "ppo", "teacher": "heuristic", "samples": 150, "epochs": 1, "lr": 1e-4, "anchor": 0.5,
        "batch_size": 128, "seed": 3}


def _weights(path: str) -> dict[str, np.ndarray]:
    import torch

    with zipfile.ZipFile(path) as z:
        return {k: v.numpy() for k, v in torch.load(z.open("policy.pth"), weights_only=True).items()}


def test_distill__a_resumed_run_ends_with_the_same_network_as_one_that_never_stopped(tmp_path) -> None:
    from nertz_env.agents import make_agent
    from nertz_env.train.distill import distill

    whole = str(tmp_path / "whole")
    distill(whole, rounds=2, log=lambda *_: None, **TINY)
    split = str(tmp_path / "split")
    distill(split, rounds=1, log=lambda *_: None, **TINY)
    distill(split, rounds=2, resume=True, log=lambda *_: None)
    a, b = _weights(os.path.join(whole, "policy.zip")), _weights(os.path.join(split, "policy.zip"))
    assert set(a) == set(b) and all(np.array_equal(a[k], b[k]) for k in a)
    start = _weights(os.path.join(whole, "rounds", "round_00.zip"))
    assert any(not np.array_equal(a[k], start[k]) for k in a)  # the fit moved the network
    with open(os.path.join(split, "log.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert [r["round"] for r in rows] == [1, 2]
    assert rows[1]["fitted_on"] == rows[0]["decisions"] + rows[1]["decisions"]  # DAgger keeps every round
    assert 0.0 <= rows[0]["agreement_before_fit"] <= 1.0 and "anchor_kl" in rows[0]
    agent = make_agent(os.path.join(split, "policy.zip") + ":deterministic=true")  # plays by path, in numpy
    assert agent.actor is not None


def test_distill_cli__bad_options_are_one_line_and_exit_2(tmp_path, capsys) -> None:
    from nertz_env.train.distill import main

    def run(*argv: str) -> tuple[int, str]:
        try:
            code = main(list(argv))
        except SystemExit as e:  # the parser's own errors
            code = int(e.code or 0)
        return code, capsys.readouterr().err

    cases = [
        (["--run-dir", str(tmp_path / "a"), "--rounds", "0"], "--rounds must be at least 1"),
        (["--run-dir", str(tmp_path / "a"), "--anchor", "-1"], "--anchor must be a finite number >= 0"),
        (["--run-dir", str(tmp_path / "a"), "--teacher", "wizard"], "unknown agent 'wizard'"),
        (["--run-dir", str(tmp_path / "a"), "--init", "nope.zip"], "--init: no network"),
        (["--run-dir", str(tmp_path / "a"), "--players", "2"], "num_players"),
        (["--resume", str(tmp_path / "none")], "no distillation run there"),
        (["--resume", str(tmp_path / "none"), "--lr", "1e-3"], "cannot change a run being resumed"),
        ([], "give --run-dir"),
    ]
    for argv, message in cases:
        code, err = run(*argv)
        assert code == 2, (argv, err)
        assert len(err.strip().splitlines()) == 1 and message in err, (argv, err)
    assert not os.path.exists(tmp_path / "a")  # nothing written by a refused run
