"""A trained MaskablePPO policy as an :class:`~nertz_env.agents.Agent`, and the ``.zip`` loader: its most
probable legal action through the numpy forward (:mod:`nertz_env.agents.forward`), or a sample from its own
generator (``deterministic=false``). See docs/guides/learned-agents.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from nertz_env.actions import action_table
from nertz_env.agents.base import policy_params
from nertz_env.agents.forward import NumpyActor, UnsupportedNetwork
from nertz_env.agents.memory import SeatMemory
from nertz_env.agents.meta import (
    ZIP_MEMBER,
    CheckpointError,
    IncompatibleCheckpointError,
    check_compatible,
    make_meta,
    meta_config,
    read_meta,
    sidecar_path,
    write_meta,
)
from nertz_env.config import NertzConfig
from nertz_env.extras import install_command
from nertz_env.observation import O_MEM, obs_layout

_CACHE: dict[tuple[str, float], tuple[Any, dict[str, Any]]] = {}
_CACHE_SIZE = 16  # policies kept loaded (agents hold their own references; this only saves reloading)


def has_record(path: str) -> bool:
    """Does the checkpoint carry a nertz-env record (inside the zip or beside it)?"""
    try:
        with zipfile.ZipFile(path, "r") as zf:
            if ZIP_MEMBER in zf.namelist():
                return True
    except zipfile.BadZipFile:
        return True  # let read_meta say what is wrong with it
    return os.path.isfile(sidecar_path(path))


def _spaces_meta(path: str, obs_space: Any, act_space: Any) -> dict[str, Any]:
    """The record of a zip trained outside nertz-train: its spaces only (its rules are the table's it is
    played at, checked against the spaces; see :class:`PolicyAgent`)."""
    shape = tuple(getattr(obs_space, "shape", None) or ())
    if len(shape) != 1 or not hasattr(act_space, "n"):
        raise CheckpointError(
            f"{path}: a policy for nertz-env takes a flat observation vector and a discrete action "
            f"(NertzSingleAgentEnv's spaces); this one has observation space {obs_space} and action space "
            f"{act_space}"
        )
    return {"format": None, "obs_size": int(shape[0]), "num_actions": int(act_space.n), "outside": True}


def check_network(path: str, obs_shape: tuple[int, ...], n_actions: int, meta: Mapping[str, Any]) -> None:
    """Raise :class:`CheckpointError` unless the network's spaces are those of its nertz-env record."""
    if obs_shape != (int(meta["obs_size"]),) or n_actions != int(meta["num_actions"]):
        raise CheckpointError(
            f"{path}: the network's spaces (observation {obs_shape}, {n_actions} actions) do not match its "
            f"nertz-env record (observation ({meta['obs_size']},), {meta['num_actions']} actions)"
        )


def load_policy(path: str, outside: bool = False) -> tuple[Any, dict[str, Any]]:
    """The policy network and the nertz-env record of the checkpoint ``path``, cached per file version
    (shared: copy it before changing it). ``outside=True`` takes a zip without a record with a record of its
    spaces only, ``"outside": True``. Raises FileNotFoundError or CheckpointError in one line."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"checkpoint file not found: {path}")
    try:
        import torch
        from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
        from stable_baselines3.common.save_util import load_from_zip_file
    except ImportError:
        raise ImportError(
            f"loading the policy {path!r} needs the train extra (torch, stable-baselines3, sb3-contrib): "
            f"{install_command('train')}"
        ) from None
    meta = read_meta(path) if has_record(path) or not outside else None
    key = (os.path.abspath(path), os.path.getmtime(path))
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    try:
        data, params, _ = load_from_zip_file(path, device="cpu", load_data=True, print_system_info=False)
    except (ValueError, KeyError, OSError, RuntimeError) as e:
        raise CheckpointError(f"{path}: not a Stable-Baselines3 checkpoint ({e})") from None
    if data is None or "policy" not in params or "policy_class" not in data:
        raise CheckpointError(f"{path}: the zip holds no SB3 policy (no data or policy.pth)")
    for_play = getattr(data["policy_class"], "for_play", None)  # a training-time network, e.g. a privileged critic's
    if callable(for_play):
        data, params["policy"] = for_play(data, params["policy"])
    policy_class = data["policy_class"]
    obs_space, act_space = data["observation_space"], data["action_space"]
    if meta is None:
        meta = _spaces_meta(path, obs_space, act_space)
    else:
        check_network(path, tuple(obs_space.shape), int(act_space.n), meta)
    if not (isinstance(policy_class, type) and issubclass(policy_class, MaskableActorCriticPolicy)):
        raise CheckpointError(
            f"{path}: policy class {getattr(policy_class, '__name__', policy_class)!r} is not a MaskablePPO "
            "policy (sb3_contrib MaskableActorCriticPolicy); nertz-env plays policies that take action masks"
        )
    with torch.random.fork_rng(devices=[]):  # building the network must not move torch's global generator
        policy = policy_class(
            observation_space=obs_space,
            action_space=act_space,
            lr_schedule=lambda _: 0.0,
            **data.get("policy_kwargs", {}),
        )
    state: Any = params["policy"]  # a state dict (typed as a Tensor dict by SB3)
    policy.load_state_dict(state)
    policy.set_training_mode(False)
    policy.to("cpu")
    _CACHE[key] = (policy, meta)
    while len(_CACHE) > _CACHE_SIZE:
        del _CACHE[next(iter(_CACHE))]
    return policy, meta


def numpy_actor(path: str) -> Any:
    """The numpy actor of the checkpoint ``path`` (cached per file version), or None when the numpy forward does
    not evaluate its network. Read from the array file beside the zip; without one, once with torch, which
    writes it (:func:`write_arrays`)."""
    return _numpy_actor(os.path.abspath(path), os.path.getmtime(path))


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _numpy_actor(path: str, mtime: float) -> Any:
    try:
        return NumpyActor.load(path)
    except UnsupportedNetwork:
        try:
            return write_arrays(path)
        except ImportError:  # no torch: the torch route says what to install
            return None


def write_arrays(path: str, policy: Any = None) -> Any:
    """Write the numpy actor of the policy zip ``path`` beside it and return it: from ``policy`` (the network just
    saved there), else read with torch. None, and no file, when the numpy forward does not evaluate the network;
    a folder that cannot be written keeps the actor in memory."""
    if policy is None:
        policy, _ = load_policy(path, outside=True)
    try:
        actor = NumpyActor.from_policy(policy)
    except UnsupportedNetwork:
        return None
    with contextlib.suppress(OSError):
        actor.save(path)
    return actor


def save_policy(policy: Any, policy_kwargs: dict[str, Any], path: str, meta: dict[str, Any]) -> str:
    """Save the network ``policy`` alone (no optimizer) with the nertz-env record ``meta`` and the array file
    beside it: what :func:`load_policy_agent` plays. Returns ``path``."""
    from stable_baselines3.common.save_util import save_to_zip_file

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    data = {
        "policy_class": type(policy),
        "policy_kwargs": policy_kwargs,
        "observation_space": policy.observation_space,
        "action_space": policy.action_space,
    }
    weights = policy.state_dict()
    for_play = getattr(policy, "for_play", None)
    if for_play is not None:  # a player gets the policy over the observation alone
        data, weights = for_play(data, weights)
    save_to_zip_file(path, data=data, params={"policy": weights})
    write_meta(path, meta)
    write_arrays(path, policy)  # policy.npz beside policy.zip: the numpy actor plays it without torch
    return path


def check_spaces(meta: Mapping[str, Any], config: NertzConfig, where: str) -> None:
    """Raise :class:`IncompatibleCheckpointError` unless the policy's spaces are those of a ``config`` table."""

    def spaces(n: int) -> tuple[int, int] | None:  # those of a table of n players with these rules
        try:
            other = NertzConfig.from_dict({**config.to_dict(), "num_players": n})
        except ValueError:  # rules that need another size (teams)
            return None
        return obs_layout(other).size, action_table(other).n

    obs_size, num_actions = obs_layout(config).size, action_table(config).n
    theirs = (int(meta["obs_size"]), int(meta["num_actions"]))
    if theirs != (obs_size, num_actions):
        # the table sizes whose spaces, with these rules, are the policy's: most often the fix is the size
        fits = " or ".join(str(n) for n in range(2, 9) if spaces(n) == theirs)
        hint = f"; with these rules its spaces are those of a table of {fits} players" if fits else ""
        raise IncompatibleCheckpointError(
            f"{where} has no nertz-env record, and its spaces (observation {meta['obs_size']}, "
            f"{meta['num_actions']} actions) are not this table's (observation {obs_size}, {num_actions} "
            f"actions, {config.num_players} players): play it at the table it was trained for (the players "
            f"and rules given to NertzSingleAgentEnv){hint}"
        )


def record_rules(path: str, config: NertzConfig, **extra: Any) -> dict[str, Any]:
    """Write the nertz-env record of ``config`` into the MaskablePPO zip ``path`` (and its sidecar JSON), after
    checking the network's spaces against the table (docs/guides/training-sb3.md); returns the record."""
    _, meta = load_policy(path, outside=True)
    if not meta.get("outside"):
        check_compatible(meta, config, where=f"policy {path!r}", path=path)
    check_spaces(meta, config, where=f"policy {path!r}")
    record = make_meta(config, mode="outside", **extra)
    write_meta(path, record)
    return record


def play_name(deterministic: bool) -> str:
    """How a policy agent picks its action, as result tables name it: ``"most probable"`` (the argmax of the
    legal actions) or ``"sampled"`` (a draw from the policy)."""
    return "most probable" if deterministic else "sampled"


def policy_probabilities(policy: Any, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Action probabilities (float64, (n, A)) of ``policy`` for a batch; masked actions get 0."""
    import torch

    with torch.no_grad():
        obs_t = torch.as_tensor(np.asarray(observations, dtype=np.float32))
        dist = policy.get_distribution(obs_t, action_masks=np.asarray(masks, dtype=bool))
        probs = dist.distribution.probs.cpu().numpy().astype(np.float64)
    probs[~np.asarray(masks, dtype=bool)] = 0.0
    return probs


class OwnMemory:
    """The observation options a policy agent was trained with and its table lacks (``memory``: a
    :class:`~nertz_env.agents.memory.SeatMemory`; ``last_moves``: its own record), kept by the agent as the
    engine writes them (docs/env/nertz.md)."""

    def __init__(self, table: NertzConfig, trained: NertzConfig) -> None:
        layout = obs_layout(table)
        self.tick = layout.slices["status"].start
        self.cut = int(layout.offsets[O_MEM])  # where the memory slices start (or would start)
        self.base = self.cut + (4 * table.deck_size if trained.memory else 0)  # where the last moves start
        self.seat = SeatMemory(table) if trained.memory and not table.memory else None
        self.k, self.n = trained.last_moves, action_table(table).n
        self.moves: list[int] = []

    def observe(self, observation: np.ndarray) -> np.ndarray:
        if observation[self.tick] == 0:
            self.moves.clear()
        out = np.zeros(self.base + self.k * self.n, dtype=np.float32)
        out[: self.cut] = observation[: self.cut]
        if self.seat is not None:
            self.seat.observe(observation)
            self.seat.write(out, self.cut)
        elif self.base > self.cut:  # the table's own memory slices
            out[self.cut : self.base] = observation[self.cut : self.base]
        for i, a in enumerate(self.moves):
            out[self.base + i * self.n + a] = 1.0
        return out

    def remember(self, action: int) -> None:
        if self.seat is not None:
            self.seat.predict(action)
        if action != 0 and self.k:
            self.moves = [action, *self.moves[: self.k - 1]]


class TrainedAgent:
    """What the agents of trained networks share: the record ``meta``, ``deterministic`` play (else a draw
    from the agent's own generator), the ``name``, and :attr:`play`."""

    def __init__(self, meta: dict[str, Any], deterministic: bool, name: str) -> None:
        self.meta = meta
        self.deterministic = bool(deterministic)
        self.name = name
        self.rng = np.random.default_rng()
        self.seat = 0

    @property
    def play(self) -> str:
        """How the agent picks its action, as result tables name it: ``"most probable"`` or ``"sampled"``."""
        return play_name(self.deterministic)

    def choose(self, probs: np.ndarray) -> int:
        """An action from one row of the agent's ``probabilities``: the argmax, or a draw from the own generator."""
        if self.deterministic:
            return int(np.argmax(probs))
        cdf = np.cumsum(probs)
        k = int(np.searchsorted(cdf, self.rng.random() * cdf[-1], side="right"))
        k = min(k, probs.shape[0] - 1)
        if probs[k] <= 0.0:  # rounding at the edge of the cdf: fall back to the most probable action
            k = int(np.argmax(probs))
        return k

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, deterministic={self.deterministic})"


class PolicyAgent(TrainedAgent):
    """A MaskablePPO ``policy`` (None: loaded from ``meta["path"]`` when first needed) with its nertz-env
    record ``meta`` behind the Agent protocol (docs/guides/learned-agents.md). A deterministic agent plays
    with the numpy ``actor`` when given one: only for a network that does not change (a file)."""

    def __init__(
        self, policy: Any, meta: dict[str, Any], deterministic: bool = True, name: str = "policy",
        actor: Any = None,
    ) -> None:
        super().__init__(meta, deterministic, name)
        self._policy = policy
        self.actor = actor
        # None: a policy trained outside nertz-train, given no rules: it plays at tables of matching spaces
        self.trained_config: NertzConfig | None = None if meta.get("outside") else meta_config(meta)
        self.memory: OwnMemory | None = None

    @property
    def policy(self) -> Any:
        """The torch network (loaded from the file on first use when the agent was built with its numpy actor)."""
        if self._policy is None:
            self._policy, _ = load_policy(str(self.meta["path"]), outside=True)
        return self._policy

    @property
    def table_note(self) -> str | None:
        """What a report should say about the table this agent assumes (policies without a record)."""
        if self.trained_config is not None:
            return None
        return (
            f"{self.name} has no nertz-env record: assumed trained for this table's rules (its spaces match; "
            "to pin its rules use nertz_env.agents.record_rules)"
        )

    def reset(self, config: NertzConfig, seat: int, seed: int | None = None) -> None:
        self.memory = None
        if self.trained_config is None:
            check_spaces(self.meta, config, where=f"policy {self.name!r}")
        else:
            # the observation options may differ: the agent then keeps what the table lacks itself (OwnMemory)
            trained = self.trained_config
            table = dataclasses.replace(config, last_moves=trained.last_moves, memory=trained.memory)
            if table != trained:
                check_compatible(self.meta, table, where=f"policy {self.name!r}")
            if config != table:
                self.memory = OwnMemory(config, trained)
        self.seat = seat
        self.rng = np.random.default_rng(seed)

    def probabilities(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Action probabilities for a batch of observations (the pool batches seats sharing a policy)."""
        return policy_probabilities(self.policy, observations, masks)

    def view(self, observation: np.ndarray) -> np.ndarray:
        """The observation as the policy was trained to see it (:class:`OwnMemory` adds what the table lacks)."""
        return observation if self.memory is None else self.memory.observe(observation)

    def note(self, action: int) -> int:
        """Record the seat's ``action`` in the agent's own memory, when it keeps one; returns ``action``."""
        if self.memory is not None:
            self.memory.remember(action)
        return action

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        observation = self.view(observation)
        if self.deterministic and self.actor is not None:
            return self.note(int(self.actor.first_choice(observation, action_mask)))
        return self.note(self.choose(self.probabilities(observation[None, :], action_mask[None, :])[0]))

    def __getstate__(self) -> dict[str, Any]:
        # Pickled inside training checkpoints: keep the file and generator, not the network.
        # The path is relative to the current folder, so a training checkpoint (pickled in its run folder)
        # names its snapshots inside the run, and a moved run finds its own.
        state = dict(self.__dict__)
        state["_policy"] = None
        state["actor"] = state["actor"] is not None  # rebuilt from the file
        if self.meta.get("path") is not None:
            state["meta"] = {**self.meta, "path": os.path.relpath(self.meta["path"])}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        had_actor, self.actor = self.actor, None
        if self.meta.get("path") is not None:
            path = os.path.abspath(self.meta["path"])
            self.meta = {**self.meta, "path": path}
            self.actor = numpy_actor(path) if had_actor else None
            if self.actor is None:
                self._policy, _ = load_policy(path, outside=True)


def load_policy_agent(path: str, config: NertzConfig | None = None, **params: Any) -> PolicyAgent:
    """The registry loader for ``.zip`` checkpoints (``params``: ``deterministic``, ``name``). ``config``: the
    table a zip without a nertz-env record was trained for, then the only one it plays at
    (docs/guides/training-sb3.md). Raises FileNotFoundError, AgentSpecError or CheckpointError in one line."""
    det, name = policy_params(f"checkpoint {path!r}", params)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"checkpoint file not found: {path}")
    actor = numpy_actor(path) if det and has_record(path) else None
    policy: Any = None
    if actor is not None:  # plays in numpy: the record and the network's sizes are checked without torch
        meta = read_meta(path)
        check_network(path, (actor.obs_size,), actor.n_actions, meta)
    else:
        policy, meta = load_policy(path, outside=True)
    meta = dict(meta, path=os.path.abspath(path))
    if config is not None and meta.get("outside"):
        check_spaces(meta, config, where=f"policy {path!r}")
        meta = dict(make_meta(config, mode="outside"), path=os.path.abspath(path))
    agent = PolicyAgent(policy, meta, deterministic=det, name=str(name) if name is not None else path, actor=actor)
    if config is not None:
        agent.reset(config, 0)  # the check of every table
    return agent


#: trained policies shipped with the package (``models/<name>.zip``), playable by name (``"ppo"``)
MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")


def shipped_models() -> dict[str, str]:
    """Trained policies that come with the package: name -> file (they need the ``train`` extra to play)."""
    if not os.path.isdir(MODELS_DIR):
        return {}
    return {
        os.path.splitext(f)[0]: os.path.join(MODELS_DIR, f)
        for f in sorted(os.listdir(MODELS_DIR))
        if f.endswith(".zip")
    }
