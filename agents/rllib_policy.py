"""An RLlib checkpoint (``nertz-train --backend rllib``) as an :class:`~nertz_env.agents.Agent`: only the
learner's RLModule is loaded, and ``reset`` refuses a table of other rules or size. Ray and torch are
imported only here. See docs/guides/rllib.md.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from nertz_env.agents.base import policy_params
from nertz_env.agents.meta import FORMAT, CheckpointError, check_compatible, meta_config
from nertz_env.agents.policy import TrainedAgent, check_network
from nertz_env.config import NertzConfig
from nertz_env.extras import install_command
from nertz_env.threads import limit_threads

META_FILE = "nertz_meta.json"
_CACHE: dict[tuple[str, float], Any] = {}  # the learner modules by checkpoint and record version


def read_rllib_meta(path: str) -> dict[str, Any]:
    """The nertz-env record of the RLlib checkpoint directory ``path``. Raises FileNotFoundError, or
    CheckpointError for a directory without a valid record (not written by nertz-env's RLlib backend)."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"checkpoint directory not found: {path}")
    meta_path = os.path.join(path, META_FILE)
    if not os.path.isfile(meta_path):
        raise CheckpointError(
            f"{path} is a directory without {META_FILE}: not an RLlib checkpoint of nertz-env "
            "(write checkpoints with nertz-train --backend rllib or nertz_env.rllib.save_checkpoint)"
        )
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{meta_path} could not be read: {e}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or "learner_module" not in meta:
        raise CheckpointError(f"{meta_path} is not a nertz-env RLlib checkpoint record")
    return meta


class RLlibPolicyAgent(TrainedAgent):
    """The learner module of an RLlib checkpoint behind the Agent protocol."""

    def __init__(self, module: Any, meta: dict[str, Any], deterministic: bool = True, name: str = "rllib") -> None:
        super().__init__(meta, deterministic, name)
        self.module = module
        self.trained_config = meta_config(meta)

    def reset(self, config: NertzConfig, seat: int, seed: int | None = None) -> None:
        if config != self.trained_config:
            check_compatible(self.meta, config, where=f"RLlib checkpoint {self.name!r}")
        self.seat = seat
        self.rng = np.random.default_rng(seed)

    def probabilities(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Action probabilities (float64, (n, A)) for a batch; masked actions get 0."""
        import torch

        m = np.asarray(masks, dtype=np.float32)
        batch = {
            "obs": {
                "observations": torch.as_tensor(np.asarray(observations, dtype=np.float32)),
                "action_mask": torch.as_tensor(m),
            }
        }
        with torch.no_grad():
            logits = self.module.forward_inference(batch)["action_dist_inputs"]
            probs = torch.softmax(logits.double(), dim=-1).numpy()
        probs[m == 0] = 0.0
        return probs

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self.choose(self.probabilities(observation[None], action_mask[None])[0])


def load_rllib_agent(path: str, **params: Any) -> RLlibPolicyAgent:
    """The agent of the RLlib checkpoint directory ``path`` (``make_agent`` calls this for such a directory).
    ``params``: ``deterministic`` (default true; false samples) and ``name`` (default: the directory's name)."""
    deterministic, name = policy_params(f"RLlib checkpoint {path!r}", params)
    meta = read_rllib_meta(path)
    key = (os.path.abspath(path), os.path.getmtime(os.path.join(path, META_FILE)))
    if key not in _CACHE:
        try:
            import torch
            from ray.rllib.core.rl_module.rl_module import RLModule
        except ImportError:
            raise CheckpointError(
                f"{path} is an RLlib checkpoint: loading it needs the rllib extra ({install_command('rllib')})"
            ) from None
        limit_threads(1)
        module_dir = os.path.abspath(os.path.join(path, meta["learner_module"]))  # Ray reads a relative path as a URI
        if not os.path.isdir(module_dir):
            raise CheckpointError(f"{path}: the learner module {meta['learner_module']} is missing")
        with torch.random.fork_rng(devices=[]):  # building the module must not move torch's global generator
            module = RLModule.from_checkpoint(module_dir)
        module.eval()
        space = getattr(module, "observation_space_with_mask", None)
        if space is not None:
            check_network(path, tuple(space["observations"].shape), int(module.action_space.n), meta)
        _CACHE[key] = module
    name = str(name or os.path.basename(os.path.normpath(path)))
    return RLlibPolicyAgent(_CACHE[key], meta, deterministic=deterministic, name=name)
