"""A move-scoring policy for MaskablePPO: each legal move's logit is ``f(h(observation), phi(move))``, one network
``f`` shared by every move, where ``phi`` are the move's features (:func:`nertz_env.moves.move_features`). Only
the legal moves are scored. See docs/guides/training-sb3.md ("The move-scoring policy").
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import partial
from typing import Any, cast

import numpy as np
import torch
from sb3_contrib.common.maskable.distributions import MaskableDistribution
from torch import nn

from nertz_env.config import NertzConfig
from nertz_env.moves import legal_moves, move_layout
from nertz_env.observation import obs_layout
from nertz_env.train.privileged import PrivilegedCriticPolicy


class MoveScorer(nn.Module):
    """``f``: an MLP over ``[h, phi]`` (hidden widths ``arch``, at least one) to one logit. Its first layer's
    ``h`` columns are applied once per observation, its ``phi`` columns once per move."""

    def __init__(self, latent: int, features: int, arch: list[int], activation_fn: type[nn.Module]) -> None:
        super().__init__()
        if not arch:
            raise ValueError("move_arch needs at least one hidden layer (f must combine h and the move's features)")
        dims = [latent + features, *arch]
        layers = [m for a, b in itertools.pairwise(dims) for m in (nn.Linear(a, b), activation_fn())]
        self.net = nn.Sequential(*layers, nn.Linear(dims[-1], 1))
        self.latent = latent

    def forward(self, h: torch.Tensor, rows: torch.Tensor, phi: torch.Tensor) -> torch.Tensor:
        first = cast(nn.Linear, self.net[0])
        z = nn.functional.linear(h, first.weight[:, : self.latent])[rows]
        z = z + nn.functional.linear(phi, first.weight[:, self.latent :], first.bias)
        return self.net[1:](z).squeeze(-1)


class MovesPolicy(PrivilegedCriticPolicy):
    """MaskablePPO policy whose actor scores each legal move: ``h`` is the policy net over the observation
    (``net_arch["pi"]``), ``f`` a :class:`MoveScorer` (``move_arch``) kept as ``action_net``. ``rules`` is
    the table's ``NertzConfig.to_dict()``; ``obs_size`` adds a privileged critic. See the module docstring."""

    def __init__(self, *args: Any, rules: dict[str, Any], move_arch: Sequence[int] = (128,),
                 **kwargs: Any) -> None:
        self.rules, self.move_arch = dict(rules), list(move_arch)
        self.config = NertzConfig.from_dict(self.rules)
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = MoveScorer(self.mlp_extractor.latent_dim_pi, move_layout(self.config).size, self.move_arch,
                                     self.activation_fn)
        if self.ortho_init:  # SB3's gains: sqrt(2) for hidden layers, 0.01 for the policy's output
            self.action_net.apply(partial(self.init_weights, gain=np.sqrt(2)))
            self.init_weights(self.action_net.net[-1], gain=0.01)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "rules": self.rules, "move_arch": self.move_arch}

    def _moves(self, obs: torch.Tensor, latent_pi: torch.Tensor, action_masks: Any) -> MaskableDistribution:
        """The masked distribution: the legal moves scored by ``f``, the rest masked out (every action is scored
        when there is no mask)."""
        x = obs[:, : obs_layout(self.config).size].detach().cpu().numpy()
        n, a = x.shape[0], int(self.action_space.n)  # type: ignore[attr-defined]
        masks = np.ones((n, a), bool) if action_masks is None else (
            action_masks.detach().cpu().numpy() if isinstance(action_masks, torch.Tensor) else np.asarray(action_masks)
        ).reshape(n, a)
        rows, acts, phi = legal_moves(x, masks, self.config)
        rows_t = torch.as_tensor(rows, device=latent_pi.device)
        scores = self.action_net(latent_pi, rows_t, torch.as_tensor(phi, device=latent_pi.device))
        logits = latent_pi.new_zeros((n, a)).index_put((rows_t, torch.as_tensor(acts, device=latent_pi.device)), scores)
        distribution = self.action_dist.proba_distribution(action_logits=logits)
        if action_masks is not None:
            distribution.apply_masking(masks)
        return distribution

    def _heads(self, obs: torch.Tensor, action_masks: Any) -> tuple[MaskableDistribution, torch.Tensor]:
        latent_pi, latent_vf = self.mlp_extractor(cast(torch.Tensor, self.extract_features(obs)))
        return self._moves(obs, latent_pi, action_masks), self.value_net(latent_vf)

    def forward(self, obs: torch.Tensor, deterministic: bool = False,
                action_masks: np.ndarray | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        distribution, values = self._heads(obs, action_masks)
        actions = distribution.get_actions(deterministic=deterministic)
        return actions, values, distribution.log_prob(actions)

    def evaluate_actions(self, obs: torch.Tensor, actions: torch.Tensor,
                         action_masks: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        distribution, values = self._heads(obs, action_masks)
        return values, distribution.log_prob(actions), distribution.entropy()

    def get_distribution(self, obs: Any, action_masks: np.ndarray | None = None) -> MaskableDistribution:
        return self._moves(obs, self.mlp_extractor.forward_actor(cast(torch.Tensor, self.extract_features(obs))),
                           action_masks)
