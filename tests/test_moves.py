"""Move features (nertz_env.moves) and the move-scoring policy (nertz_env.train.moves): features of hand-built
positions as the rules say, and of every legal move of random games as the engine's next observation says; the
policy trains, resumes exactly, loads in plain SB3 and plays through every agent route in numpy."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nertz_env
from nertz_env.actions import JOKER_LAKE, KIND_NAMES, LAKE, RUN, TO_WORK, TUCK, action_table
from nertz_env.agents import make_agent
from nertz_env.agents.forward import MovesActor, NumpyActor
from nertz_env.agents.policy import load_policy, policy_probabilities
from nertz_env.moves import FLAGS, move_features, move_layout
from nertz_env.observation import _decode_card, decode
from test_agents import _observations, plays_through_nertz_eval_and_nertz_play
from test_rules import build, play, suit


def named(f: np.ndarray, config: nertz_env.NertzConfig) -> dict[str, Any]:
    """One feature row as words: kind, source, dest, cards as text (a joker played to the lake with its declared
    suit), length, and the set flags."""
    s = move_layout(config).slices
    out: dict[str, Any] = {"kind": KIND_NAMES[int(np.argmax(f[s["kind"]]))]}
    src, dst = f[s["source"]], f[s["dest"]]
    if src.any():
        out["source"] = ("nertz", "waste")[int(np.argmax(src[:2]))] if not src[2] else f"work{np.argmax(src[3:])}"
    if dst.any():
        out["dest"] = "lake" if dst[0] else f"work{np.argmax(dst[2:])}"
    for k in ("card", "dest_top", "uncovers"):
        if f[s[k]].any():
            v = f[s[k]]
            out[k] = _decode_card(v) + ("CDHS"[int(np.argmax(v[13:17]))] if v[17] and v[13:17].any() and not v[:13].any() else "")
    if f[s["length"]][0]:
        out["length"] = round(float(f[s["length"]][0]) * 13)
    out["flags"] = {n for n in ("red", "dest_empty", *FLAGS) if f[s[n]][0]}
    return out


def observe(env: nertz_env.NertzParallelEnv, seat: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The seat's observation and mask now (the engine's, as the last step returned them)."""
    return env._state.obs[0, seat].copy(), env.action_mask(f"player_{seat}")


def features(env: nertz_env.NertzParallelEnv, seat: int = 0, **kw: Any) -> dict[str, dict[str, Any]]:
    """The seat's legal moves by name, each as :func:`named` says."""
    o, m = observe(env, seat)
    f = move_features(o, env.config, m, **kw)
    return {env.actions.name(int(a)): named(f[a], env.config) for a in np.flatnonzero(m)}


DECK_2 = {"num_players": 2}
LAKE_AS_2D = [suit("S", 1, 1), suit("D", 1, 2)]
CASES = [  # (rules, seat 0's layout, lake, move, what it does)
    ({}, {"nertz": ["KS", "AH"]}, (), "wait", {"kind": "wait", "flags": set()}),
    ({}, {}, (), "flip", {"kind": "flip", "flags": {"reveals"}}),
    ({}, {"filler": "waste"}, (), "flip", {"kind": "flip", "flags": {"recycles"}}),
    ({}, {"nertz": ["KS", "AH"]}, (), "lake:nertz",
     {"kind": "lake", "source": "nertz", "dest": "lake", "card": "AH", "length": 1, "flags": {"red", "reveals"}}),
    ({"call_mode": "manual"}, {"nertz": ["AH"]}, (), "lake:nertz",
     {"kind": "lake", "source": "nertz", "dest": "lake", "card": "AH", "length": 1, "flags": {"red", "empties"}}),
    ({}, {"nertz": ["KS", "2C"], "work": [["3D", "2S"]]}, LAKE_AS_2D, "lake:work0",
     {"kind": "lake", "source": "work0", "dest": "lake", "card": "2S", "length": 1, "uncovers": "3D",
      "flags": {"to_lake", "frees_nertz"}}),
    ({}, {"nertz": ["KS", "5H"], "work": [["9C"], ["6S"]]}, (), "to_work:nertz>1",
     {"kind": "to_work", "source": "nertz", "dest": "work1", "card": "5H", "length": 1, "dest_top": "6S",
      "flags": {"red", "reveals"}}),
    ({}, {"nertz": ["KS", "5H"], "waste": ["JD", "5D"], "work": [["9C"], ["6S"]]}, (), "to_work:waste>1",
     {"kind": "to_work", "source": "waste", "dest": "work1", "card": "5D", "length": 1, "dest_top": "6S",
      "flags": {"red", "reveals", "blocks_nertz"}}),
    ({}, {"nertz": ["KS", "8D"], "work": [["9C", "8H", "7S"], ["9S"]]}, (), "run:work0>1x2",
     {"kind": "run", "source": "work0", "dest": "work1", "card": "8H", "length": 2, "dest_top": "9S",
      "uncovers": "9C", "flags": {"red", "frees_nertz", "blocks_nertz"}}),  # 9S took 8D too
    ({}, {"nertz": ["KS", "KH"], "waste": ["JD"], "work": [["7S"], [], ["2C"], ["2D"]]}, (), "run:work0>1x1",
     {"kind": "run", "source": "work0", "dest": "work1", "card": "7S", "length": 1,
      "flags": {"dest_empty", "empties", "frees_nertz", "frees_waste", "blocks_nertz"}}),
    ({"empty_pile_from_nertz_first": True}, {"nertz": ["KS", "KH"], "waste": ["JD"], "work": [["AC"], ["2C"]]},
     (), "lake:work0", {"kind": "lake", "source": "work0", "dest": "lake", "card": "AC", "length": 1,
                        "flags": {"empties", "frees_nertz"}}),  # the waste may not take the emptied pile
    ({"allow_tuck": True}, {"nertz": ["KS", "9H"], "waste": ["9D"], "work": [["8S", "7H"], [], ["KC"], ["2D"]]},
     (), "tuck:waste>0", {"kind": "tuck", "source": "waste", "dest": "work0", "card": "9D", "length": 1,
                          "dest_top": "8S", "flags": {"red", "empties"}}),  # the base it goes under
    ({"jokers": 1}, {"nertz": ["KS", "**"]}, (), "joker_lake:nertz:H",
     {"kind": "joker_lake", "source": "nertz", "dest": "lake", "card": "**H", "length": 1,
      "flags": {"red", "reveals"}}),
    ({"jokers": 2}, {"nertz": ["KS", "7D"], "work": [["9C", "*8r", "**"], ["8S"]]}, (), "run:work0>1x1",
     {"kind": "run", "source": "work0", "dest": "work1", "card": "**", "length": 1, "dest_top": "8S",
      "uncovers": "*8r", "flags": {"blocks_nertz"}}),  # a wild joker on a fixed one
    ({"allow_rotate": True}, {}, (), "rotate", {"kind": "rotate", "flags": set()}),
]


@pytest.mark.parametrize(("rules", "layout", "lake", "move", "want"), CASES, ids=[f"{c[3]}-{i}" for i, c in enumerate(CASES)])
def test_move_features__say_what_each_kind_of_move_does_and_uncovers(rules: dict, layout: dict, lake: Any, move: str,
                                                                     want: dict) -> None:
    env = build({**DECK_2, **rules}, {0: layout}, lake)
    assert features(env)[move] == want


def test_move_features__undo_is_a_run_straight_back_from_the_last_moves_slice_or_the_agents_own_record() -> None:
    layout = {"nertz": ["KS", "KH"], "work": [["8H", "7S"], ["9S"], ["8D"]]}
    for rules in ({"last_moves": 1}, {}):
        env = build({**DECK_2, **rules}, {0: layout})
        moved = env.actions.lookup("run:work0>1x2")
        play(env, {0: "run:work0>1x2"}, {0: {"work": [[], ["9S", "8H", "7S"], ["8D"], []]}})
        last = None if rules else moved  # the slice when the observation has one, else the argument
        back = features(env, last_move=last)
        assert {"run:work1>0x1", "run:work1>0x3"} <= set(back) and "undo" in back["run:work1>0x2"]["flags"]
        assert all("undo" not in f["flags"] for name, f in back.items() if name != "run:work1>0x2")
        if not rules:
            assert "undo" not in features(env)["run:work1>0x2"]["flags"]  # no last move known
    o, _ = observe(env)
    full = move_features(o, env.config)  # every action; a batch of two is two of the same
    assert full.shape == (env.actions.n, move_layout(env.config).size)
    assert np.array_equal(move_features(np.stack([o] * 2), env.config)[1], full)
    with pytest.raises(ValueError, match="move_features takes observations of shape"):
        move_features(o[:-1], env.config)


@pytest.mark.parametrize("rules", [{}, {"work_piles": 6, "draw": 1}, {"jokers": 2, "allow_tuck": True},
                                   {"empty_pile_from_nertz_first": True, "last_moves": 2}])
def test_move_features__of_every_legal_move_are_what_the_next_observation_shows(rules: dict) -> None:
    """Random games; at each tick every legal move of seat 0 is applied to a copy (the other seats wait) and its
    features checked against the tick's outcome: the card that lands and the destination's top, the card
    uncovered, an emptied pile, what can go to the lake or onto the source pile next, a flip's waste."""
    env = nertz_env.parallel_env(num_players=2, **rules)
    acts = action_table(env.config)
    rng = np.random.default_rng(0)
    checked: dict[str, int] = {}
    for game in range(2):
        env.reset(seed=game)
        for _ in range(40):
            if not env.agents:
                break
            o, mask = observe(env)
            before = decode(o, env.config)
            f = move_features(o, env.config, mask)
            last = before.get("last_moves", [-1])[0] if before.get("last_moves") else -1
            for a in rng.permutation(np.flatnonzero(mask))[:6]:
                row, got = acts[a], named(f[a], env.config)
                after_env = copy.deepcopy(env)
                after_env.step({"player_0": int(a), "player_1": 0})
                o2, m2 = observe(after_env)
                after = decode(o2, env.config)
                flags = got["flags"]
                if row.kind in (TO_WORK, RUN):
                    assert got["card"] == after["work"][row.dst][-row.length], (acts.name(a), got)
                    assert got.get("dest_top") == before["work_exposed"][row.dst]
                    assert ("blocks_nertz" in flags) == (row.src != 0 and bool(mask[acts.index(TO_WORK, 0, row.dst)]))
                if row.kind == TUCK:
                    assert got["dest_top"] == before["work"][row.dst][0] and got["card"] == after["work"][row.dst][0]
                if row.src >= 2:
                    i = row.src - 2
                    assert got.get("uncovers") == after["work_exposed"][i] and ("empties" in flags) == (not after["work"][i])
                    assert ("frees_nertz" in flags) == bool(m2[acts.index(TO_WORK, 0, i)])
                    assert ("frees_waste" in flags) == bool(m2[acts.index(TO_WORK, 1, i)])
                    if row.kind != JOKER_LAKE:  # (a joker declared as a suit may let the uncovered card follow it)
                        assert ("to_lake" in flags) == bool(m2[acts.index(LAKE, row.src)])
                elif row.src in (0, 1):
                    left = after["nertz_count"] if row.src == 0 else after["waste_count"]
                    assert ("empties" in flags, "reveals" in flags) == (left == 0, left > 0)
                elif acts.name(a) == "flip":
                    assert ("reveals" in flags, "recycles" in flags) == (before["stock_count"] > 0, before["stock_count"] == 0)
                undo = last >= 0 and row.kind == RUN and acts[last].kind == RUN and (
                    (acts[last].src - 2, acts[last].dst, acts[last].length) == (row.dst, row.src - 2, row.length))
                assert ("undo" in flags) == undo
                checked[KIND_NAMES[row.kind]] = checked.get(KIND_NAMES[row.kind], 0) + 1
            legal = np.flatnonzero(mask)
            env.step({"player_0": int(rng.choice(legal)), "player_1": int(rng.choice(np.flatnonzero(observe(env, 1)[1])))})
    assert {"lake", "to_work", "run", "flip"} <= set(checked), checked


# ---------------------------------------------------------------- the move-scoring policy (train.moves)
# A tiny run of the shipped scratch shape with the moves head and a privileged critic: one learner a table
# against heuristic, the seat's last move in its observation (so the undo feature is read from it).
MOVES = {"num_tables": 2, "learners_per_table": 1, "n_steps": 16, "batch_size": 32, "n_epochs": 2, "net_arch": [16],
         "policy": "moves", "move_arch": [8], "privileged_critic": True, "rules": {"last_moves": 1},
         "total_timesteps": 128, "checkpoint_every": 64, "eval_deals": 0, "progress_bar": False, "tensorboard": False}


@pytest.fixture(scope="module")
def moves_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("sb3_contrib")
    from nertz_env.train import TrainConfig, Trainer

    run = tmp_path_factory.mktemp("moves") / "run"
    trainer = Trainer(TrainConfig.from_dict({**MOVES, "run_dir": str(run)}), log=lambda _: None)
    start = {k: v.clone() for k, v in trainer.model.policy.state_dict().items()}
    trainer.train()
    return {"trainer": trainer, "run": run, "start": start, "policy": str(run / "policy.zip"),
            "ckpt": str(run / "checkpoints" / "step_000000000064.zip")}


def test_moves_policy__a_tiny_run_trains_and_resumes_exactly(moves_run: dict[str, Any], tmp_path: Path) -> None:
    from nertz_env.train import MovesPolicy, TrainConfig, Trainer
    from test_train import _assert_same_run

    straight = moves_run["trainer"]
    assert isinstance(straight.model.policy, MovesPolicy)
    trained = straight.model.policy.state_dict()
    assert any(not (trained[k] == v).all() for k, v in moves_run["start"].items())
    resumed = Trainer(TrainConfig.from_dict({**MOVES, "run_dir": str(tmp_path / "b")}), resume=moves_run["ckpt"],
                      log=lambda _: None)
    resumed.train()
    _assert_same_run(straight, resumed)
    flat = {k: v for k, v in MOVES.items() if k != "move_arch"} | {"policy": "flat"}
    for options, message in ((flat, "policy: checkpoint has 'moves'"), ({**MOVES, "move_arch": [4]}, "move_arch")):
        with pytest.raises(nertz_env.train.IncompatibleCheckpointError, match=message):
            Trainer(TrainConfig.from_dict({**options, "run_dir": str(tmp_path / "c")}), resume=moves_run["ckpt"])
    with pytest.raises(nertz_env.train.ConfigError, match=r"move_arch .* applies only to policy moves"):
        TrainConfig.from_dict({"move_arch": [4]})


PLAIN_SB3 = """
import json, sys
import numpy as np
from sb3_contrib import MaskablePPO
model = MaskablePPO.load(sys.argv[1], device="cpu")
z = np.load(sys.argv[2])
actions, _ = model.predict(z["obs"], action_masks=z["masks"], deterministic=True)
print(json.dumps([type(model.policy).__module__, actions.tolist()]))
"""


def test_moves_policy__loads_in_plain_sb3_and_its_file_holds_the_policy_over_the_observation(
        moves_run: dict[str, Any], tmp_path: Path) -> None:
    import torch

    from nertz_env.train import MovesPolicy

    trainer = moves_run["trainer"]
    obs, masks = np.asarray(trainer.model._last_obs), trainer.base_env.action_masks()
    np.savez(tmp_path / "x.npz", obs=obs, masks=masks)
    out = subprocess.run([sys.executable, "-c", PLAIN_SB3, str(trainer.checkpoints[-1]), str(tmp_path / "x.npz")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    module, actions = json.loads(out.stdout.splitlines()[-1])
    assert module == "nertz_env.train.moves"
    assert actions == trainer.model.predict(obs, action_masks=masks, deterministic=True)[0].tolist()
    assert all(masks[i, a] for i, a in enumerate(actions))
    saved, _ = load_policy(moves_run["policy"])  # the player's file: the critic's state columns cut away
    o = nertz_env.obs_layout(trainer.config).size
    assert isinstance(saved, MovesPolicy) and saved.obs_size is None and saved.observation_space.shape == (o,)
    with torch.no_grad():
        x = torch.as_tensor(obs)
        want = trainer.model.policy.get_distribution(x, masks).distribution.probs
        assert torch.allclose(saved.get_distribution(x[:, :o], masks).distribution.probs, want)


@pytest.mark.parametrize(("activation", "move_arch"), [("relu", [8]), ("tanh", [12, 6])])
def test_moves_actor__numpy_plays_torchs_choices_with_its_probabilities(activation: str, move_arch: list[int]) -> None:
    """The numpy forward (one compiled call, legal moves only) against the torch policy, on game observations."""
    torch = pytest.importorskip("torch")
    from nertz_env.train.imitate import build_policy

    config = nertz_env.make_config(num_players=4)
    torch.manual_seed(len(move_arch))
    policy, _ = build_policy(config, [32, 16], activation, move_arch=move_arch)
    with torch.no_grad():  # away from SB3's near-zero output init, so the choices differ between moves
        policy.action_net.net[-1].weight.normal_()
    actor = NumpyActor.from_policy(policy)
    assert isinstance(actor, MovesActor)
    obs, masks = _observations(("heuristic",), 0)
    want = policy_probabilities(policy, obs, masks)
    assert [actor.first_choice(o, m) for o, m in zip(obs, masks, strict=True)] == np.argmax(want, axis=1).tolist()
    np.testing.assert_allclose(actor.probabilities(obs[5], masks[5]), want[5], atol=1e-5)


def test_moves_policy__plays_through_make_agent_nertz_eval_and_nertz_play_in_numpy(
        moves_run: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = moves_run["policy"]
    agent = make_agent(path)
    assert isinstance(agent.actor, MovesActor) and agent._policy is None  # read from policy.npz, no torch
    obs, masks = _observations(("heuristic",), 0, last_moves=1)  # the table it was trained at
    policy, _ = load_policy(path)
    want = np.argmax(policy_probabilities(policy, obs, masks), axis=1)
    assert [agent.actor.first_choice(o, m) for o, m in zip(obs, masks, strict=True)] == want.tolist()
    sampled = make_agent(path + ":deterministic=false")  # torch's distribution
    plain = nertz_env.make_config(num_players=4)  # a table without last_moves: the agents keep their own record
    for a in (agent, sampled):
        a.reset(plain, 0, 0)
        o, m = _observations(("heuristic",), 0)
        assert all(m[i, a.act(o[i], m[i].astype(np.int8))] for i in range(40))  # the env's int8 mask
    bots = plays_through_nertz_eval_and_nertz_play(path, tmp_path, capsys)
    assert all(isinstance(bot.actor, MovesActor) for bot in bots)
