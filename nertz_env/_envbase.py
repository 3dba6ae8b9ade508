"""What every environment class shares: copying (``pickle``, ``copy.deepcopy``), the observation space, the
closed check, the unknown-reset-option warning and the seeds of a reset."""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium.error import ClosedEnvironmentError

from nertz_env._text import short
from nertz_env.config import is_int


class Copyable:
    """Mixin: ``pickle`` and ``copy.deepcopy`` drop the attributes named in ``_derived`` (compiled entry points
    and views bound to the env's arrays) and ``_bind()`` rebuilds them, so a copy continues as the original."""

    _derived: ClassVar[tuple[str, ...]] = ()

    def _bind(self) -> None:
        """(Re)build the derived attributes from the plain ones."""

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in self._derived:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._bind()


class ObsSpace(gymnasium.spaces.Dict):
    """The Dict observation space, whose ``KeyError`` for a missing entry says what it has (and for RLlib's
    ``"observations"``, how to get it)."""

    def __getitem__(self, key: str) -> gymnasium.spaces.Space:
        if key not in self.spaces:
            hint = ""
            if key == "observations":
                hint = (
                    " RLlib's ActionMaskingTorchRLModule reads 'observations': make the env with "
                    "nertz_env.parallel_env(obs_key='observations'), or use nertz_env.rllib.env_creator"
                )
            raise KeyError(f"the observation has entries {sorted(self.spaces)}, not {key!r}.{hint}")
        return self.spaces[key]


def obs_space(env: Any, key: str | None, lead: tuple[int, ...] = ()) -> gymnasium.spaces.Space:
    """The observation space of ``env`` (from its ``obs_layout`` and ``actions``): the vector's ``Box``,
    shaped ``lead + (O,)``; with ``key``, an :class:`ObsSpace` of it under ``key`` beside the mask's ``Box``."""
    vector = gymnasium.spaces.Box(0.0, 1.0, (*lead, env.obs_layout.size), np.float32)
    if key is None:
        return vector
    return ObsSpace({key: vector, "action_mask": gymnasium.spaces.Box(0, 1, (*lead, env.actions.n), np.int8)})


def check_open(env: Any, method: str) -> None:
    """Raise ``gymnasium.error.ClosedEnvironmentError`` when ``env`` has been closed."""
    if getattr(env, "_closed", False):
        raise ClosedEnvironmentError(
            f"{type(env).__name__}.{method}() after close(): a closed environment cannot be used; make a new one"
        )


def warn_unknown_options(options: dict[str, Any], known: tuple[str, ...]) -> None:
    """Warn about ``reset`` option keys outside ``known``, which are ignored (PettingZoo's ``api_test`` passes
    one to check that ``reset`` accepts options)."""
    unknown = sorted(map(str, set(options) - set(known)))
    if unknown:
        takes = "the options are " + ", ".join(repr(k) for k in known) if known else "it takes no options"
        warnings.warn(f"reset() ignores unknown option(s) {short(unknown)}; {takes}", stacklevel=3)


def table_seeds(seed: Any, n: int) -> np.ndarray:
    """The uint64 seeds of ``n`` tables: ``seed + t`` for an int, the given ones for a list of ``n``, fresh
    entropy for None."""
    if seed is None:
        return np.random.SeedSequence().generate_state(n, np.uint64)
    # the last table's seed + t stays below 2**64: no wrap onto seed 0's deal
    if is_int(seed) and 0 <= seed <= 2**64 - n:
        return np.arange(n, dtype=np.uint64) + np.uint64(seed)
    one = isinstance(seed, (list, tuple, np.ndarray)) and getattr(seed, "ndim", 1) == 1
    if one and len(seed) == n and all(is_int(s) and 0 <= s < 2**64 for s in seed):
        return np.array(seed, dtype=np.uint64)
    highest = f"2**64 - {n}" if n > 1 else "2**64 - 1"
    one_per_table = f", or {n} of them (one per table)" if n > 1 else ""
    raise ValueError(f"seed must be an integer from 0 to {highest} or None{one_per_table}, got {short(seed)}")
