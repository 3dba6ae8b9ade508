"""A privileged critic for MaskablePPO: the value net also reads the table's global state, the policy
never does, and every policy file holds the policy over the observation alone. See
docs/guides/training-sb3.md.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import MlpExtractor
from torch import nn

FIRST_VALUE_LAYER = "mlp_extractor.value_net.0.weight"


class _SplitExtractor(nn.Module):
    """``MlpExtractor``'s interface with a policy net over the first ``obs_size`` features and a value net over
    all of them (same attribute names, so the state dict has the standard keys)."""

    def __init__(self, obs_size: int, feature_dim: int, net_arch: Any, activation_fn: type[nn.Module], device: Any):
        super().__init__()
        pi = MlpExtractor(obs_size, net_arch=net_arch, activation_fn=activation_fn, device=device)
        vf = MlpExtractor(feature_dim, net_arch=net_arch, activation_fn=activation_fn, device=device)
        self.obs_size = obs_size
        self.policy_net = pi.policy_net
        self.value_net = vf.value_net
        self.latent_dim_pi = pi.latent_dim_pi
        self.latent_dim_vf = vf.latent_dim_vf

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return self.policy_net(features[..., : self.obs_size])

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.value_net(features)


class PrivilegedCriticPolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy whose actor reads ``obs[..., :obs_size]`` and whose critic reads the whole input
    (the remaining columns are the global state); without ``obs_size``, the standard policy. The other
    arguments are ``MaskableActorCriticPolicy``'s. The move-scoring policy is a subclass."""

    def __init__(self, *args: Any, obs_size: int | None = None, **kwargs: Any) -> None:
        self.obs_size = None if obs_size is None else int(obs_size)
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        if self.obs_size is None:
            return super()._build_mlp_extractor()
        self.mlp_extractor = _SplitExtractor(  # type: ignore[assignment]
            self.obs_size, self.features_dim, self.net_arch, self.activation_fn, self.device
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        if self.obs_size is not None:
            data["obs_size"] = self.obs_size
        return data

    @classmethod
    def for_play(
        cls, data: dict[str, Any], state: dict[str, torch.Tensor]
    ) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        """The SB3 ``data`` and weights of a file of this class as those of the same policy over the
        observation alone: no ``obs_size``, the observation space cut to it, the critic's state columns
        dropped (a flat policy becomes the standard one): what a saved policy file holds, and what
        :func:`~nertz_env.agents.policy.load_policy` makes of a privileged run's checkpoint."""
        kwargs = dict(data.get("policy_kwargs") or {})
        if "obs_size" not in kwargs:
            return data, state
        n = int(kwargs.pop("obs_size"))
        space = data["observation_space"]
        out = {**data, "policy_class": MaskableActorCriticPolicy if cls is PrivilegedCriticPolicy else cls,
               "policy_kwargs": kwargs,
               "observation_space": gymnasium.spaces.Box(space.low[:n], space.high[:n], (n,), space.dtype)}
        return out, {**state, FIRST_VALUE_LAYER: state[FIRST_VALUE_LAYER][:, :n].clone()}

