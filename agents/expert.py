"""``expert``: the search planner with a trained policy as its default move and prior (the agent behind
``best``). See docs/guides/learned-agents.md.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

import numpy as np

from nertz_env.agents.forward import NumpyActor
from nertz_env.agents.kernels import PRIO_FLIP
from nertz_env.agents.policy import load_policy_agent, shipped_models
from nertz_env.agents.search import SearchAgent
from nertz_env.config import NertzConfig

_LOG_FLOOR = 1e-6  # probabilities below this count as this in the prior (a log of zero is no score)


class ExpertAgent(SearchAgent):
    """Search with a learned policy as its default move and prior. Its options (``policy``, ``prior``, ``top``,
    ``base``, ``margin`` and :class:`~nertz_env.agents.search.SearchAgent`'s) are the table of the ``expert``
    spec in docs/guides/learned-agents.md. Raises FileNotFoundError for no such policy file (a table the
    network was not trained for fails in ``reset``)."""

    name = "expert"
    PARAMS: ClassVar[dict[str, type]] = {
        **SearchAgent.PARAMS,
        "policy": str,
        "prior": float,
        "top": int,
        "base": str,
    }

    def __init__(
        self,
        policy: str = "ppo",
        prior: float | None = None,
        top: int | None = None,
        base: str = "policy",
        margin: float | None = None,
        **search: Any,
    ) -> None:
        # None: not given (the defaults are 0, 2 and 0.3); what was given must be able to take effect
        if search.get("rollouts", 1) == 0:
            if base == "heuristic":
                raise ValueError("expert with base=heuristic and rollouts=0 plays the heuristic: use 'heuristic'")
            given = [k for k, v in (("prior", prior), ("top", top), ("margin", margin)) if v is not None]
            given += sorted(set(search) - {"rollouts", "memory", "wait_prob"})  # the rollouts' own options
            if given:
                raise ValueError(f"{', '.join(given)} cannot take effect with rollouts=0 (the planner then "
                                 "plays its network's first choice)")
        prior = 0.0 if prior is None else prior
        top = 2 if top is None else top
        super().__init__(margin=0.3 if margin is None else margin, **search)
        if base not in ("policy", "heuristic"):
            raise ValueError(f"base must be 'policy' or 'heuristic', got {base!r}")
        if not (np.isfinite(prior) and prior >= 0.0):
            raise ValueError(f"prior must be a finite number >= 0, got {prior}")
        if top < 0:
            raise ValueError(f"top must be >= 0, got {top}")
        if not policy:
            raise ValueError("policy must name a .zip policy file or a shipped model (default ppo)")
        self._policy_path = shipped_models().get(policy, policy)
        if not os.path.isfile(self._policy_path):  # fail when built, not at the first deal
            raise FileNotFoundError(f"checkpoint file not found: {policy}")
        self.policy_spec = policy
        self.prior = float(prior)
        self.top = int(top)
        self.base = base
        self._actor: NumpyActor | None = None
        self._policy_agent: Any = None
        self._probs = np.zeros(0)

    def _load(self) -> Any:
        if self._policy_agent is None:
            agent = load_policy_agent(self._policy_path, deterministic=True, name=self.policy_spec)
            self._actor = agent.actor if agent.actor is not None else NumpyActor.from_policy(agent.policy)
            self._policy_agent = agent
        return self._policy_agent

    @property
    def trained_config(self) -> NertzConfig | None:
        """The table the network inside was trained for (what a refusal of another table names)."""
        return getattr(self._load(), "trained_config", None)

    def reset(self, config: NertzConfig, seat: int, seed: int | None = None) -> None:
        self._load().reset(config, seat, seed)  # refuses a table of other rules than the network's
        super().reset(config, seat, seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        assert self._actor is not None
        self._probs = self._actor.probabilities(self._policy_agent.view(observation), action_mask)
        return self._policy_agent.note(super().act(observation, action_mask))

    def _candidates(self, best: int, action_mask: np.ndarray) -> list[int]:
        """The default move (``base``'s first choice), then the heuristic's ``best``, search's candidates and
        the network's ``top`` most probable actions."""
        prio, probs = self._prio, self._probs
        p_order = np.argsort(-probs, kind="stable")
        cands = [int(p_order[0]) if self.base == "policy" else best]
        for a in [best, *super()._candidates(best, action_mask)[1:], *(int(x) for x in p_order[: self.top])]:
            if a not in cands and action_mask[a] and (prio[a] >= PRIO_FLIP or probs[a] > 0.0):
                cands.append(a)
        return cands

    def _values(self, s: np.ndarray, cands: list[int]) -> np.ndarray | None:
        """Search's rollout values plus ``prior`` times each candidate's log-probability."""
        values = super()._values(s, cands)
        if values is None or self.prior == 0.0:
            return values
        return values + self.prior * np.log(np.maximum(self._probs[cands], _LOG_FLOOR))


class BestAgent(ExpertAgent):
    """The shipped strongest agent, ``best``: the ``expert`` planner with the shipped ``ppo_imitation`` network
    inside, ``margin`` 0.3 and no prior, chosen on screening seeds (``experiments/best/screening.md``; expert
    iteration's networks did not beat that network inside it). It takes the same options as ``expert``."""

    name = "best"

    def __init__(self, policy: str = "ppo_imitation", **options: Any) -> None:
        super().__init__(policy=policy, **options)
