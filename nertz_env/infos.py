"""The info schema: every key each environment puts in its infos, on every step and at reset, each with one
type and a "none yet" value, never ``None`` (why: docs/env/api.md, which renders the schema from here;
``tests/test_env.py`` checks every env against it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the round's score breakdown (per-agent envs): the name in :func:`score_of`'s dict -> the info key
SCORE_KEYS = {
    "lake": "score_lake",
    "nertz_penalty": "score_nertz_penalty",
    "bonus": "score_bonus",
    "false_calls": "score_false_calls",
    "total": "score",
    "nertz_left": "nertz_left",
}
#: the name of each ``round_end`` code (the engine's END_* values; the same codes in every env)
ROUND_END_NAMES = ("", "nertz", "stall", "max_ticks")


@dataclass(frozen=True)
class InfoKey:
    """One key of an env's infos: ``kind`` is the Python type (or a batched env's numpy dtype name), ``shape``
    the array shape in the docs' symbols (``A``, ``T``, ``P``, ``N``; ``()`` for scalars), ``none`` the "none
    yet" value as the docs show it."""

    name: str
    kind: str
    shape: tuple[str, ...]
    none: str
    meaning: str


_MASK_MEANING = (
    "the legal actions: the very array of the observation's `action_mask` (no copy, read-only use), or the "
    "only copy where the observation is the bare vector"
)

_END = "why a round ended this step: 1 Nertz (or a call), 2 stall, 3 max_ticks; 0 none"
_ILLEGAL = "the action was not legal and was applied as a wait"
_LOST = "a legal lake play lost its slot to an earlier action of the tick"
_AUTORESET = "the table was dealt anew this step (its actions were ignored)"

#: ``infos[agent]`` of ``parallel_env`` and ``env`` (AEC), at reset and every step
PER_AGENT: tuple[InfoKey, ...] = (
    InfoKey("illegal", "bool", (), "False", _ILLEGAL),
    InfoKey("lost_race", "bool", (), "False", _LOST),
    InfoKey("action", "int", (), "0", "the action applied (0, a wait, when flagged illegal or missing)"),
    InfoKey("missing_action", "bool", (), "False", "the agent was left out of the action dict and waited"),
    InfoKey("round_end", "int", (), "0", _END),
    InfoKey("score", "int", (), "0", "the round's score of the agent, when `round_end` is set"),
    InfoKey("score_lake", "int", (), "0", "its part from own cards in the lake"),
    InfoKey("score_nertz_penalty", "int", (), "0", "its part from cards left in the Nertz pile (<= 0)"),
    InfoKey("score_bonus", "int", (), "0", "its part from the call bonus"),
    InfoKey("score_false_calls", "int", (), "0", "its part from false calls (<= 0)"),
    InfoKey("nertz_left", "int", (), "0", "cards left in the agent's Nertz pile when the round ended"),
    InfoKey("match_score", "int", (), "0", "the agent's match total so far (updated when a round ends)"),
    InfoKey(
        "team_score",
        "int",
        (),
        "0",
        "the round's total of the agent's team when `round_end` is set (without teams, the agent's own score)",
    ),
)

#: ``infos`` of ``vector_env`` (a dict of arrays), at reset and every step
VECTOR: tuple[InfoKey, ...] = (
    InfoKey("illegal", "bool", ("T", "P"), "False", _ILLEGAL),
    InfoKey("lost_race", "bool", ("T", "P"), "False", _LOST),
    InfoKey("round_end", "int8", ("T",), "0", _END),
    InfoKey("score", "int32", ("T", "P"), "0", "the finished round's score, where `round_end > 0`"),
    InfoKey("autoreset", "bool", ("T",), "False", _AUTORESET),
    InfoKey("action_mask", "int8", ("T", "P", "A"), "the mask", _MASK_MEANING),
)

#: ``infos`` of ``agent_vector_env`` (arrays over the N = T * P sub-environments), at reset and every step
AGENT_VECTOR: tuple[InfoKey, ...] = (
    InfoKey("illegal", "bool", ("N",), "False", _ILLEGAL),
    InfoKey("lost_race", "bool", ("N",), "False", _LOST),
    InfoKey("round_end", "int8", ("N",), "0", "the table's: 1 Nertz or call, 2 stall, 3 max_ticks; 0 none"),
    InfoKey("score", "int32", ("N",), "0", "the finished round's score, where `_score`"),
    InfoKey("_score", "bool", ("N",), "False", "Gymnasium's mask of `score`: a round ended there this step"),
    InfoKey("autoreset", "bool", ("N",), "False", _AUTORESET),
    InfoKey("action_mask", "int8", ("N", "A"), "the mask", _MASK_MEANING),
)

#: ``infos[agent]`` of ``nertz_env.rllib.NertzRLlibEnv``, at reset and every step
RLLIB: tuple[InfoKey, ...] = (
    InfoKey("illegal", "bool", (), "False", _ILLEGAL),
    InfoKey("lost_race", "bool", (), "False", _LOST),
    InfoKey("round_end", "int", (), "0", _END),
    InfoKey("score", "int", (), "0", "the finished round's score of the agent, when `round_end` is set"),
)

#: ``info`` of the single-agent view ``nertz_env.single.NertzSingleAgentEnv``, at reset and every step:
#: the learner's ``parallel_env`` infos, its mask (the observation is the bare vector) and its own keys
SINGLE: tuple[InfoKey, ...] = (
    *PER_AGENT[:4],
    InfoKey("action_mask", "array", ("A",), "the mask", "the learner's legal actions (int8)"),
    *PER_AGENT[4:],
    InfoKey("seat", "int", (), "(always set)", "the learner's seat this episode"),
    InfoKey("opponents", "dict", (), "(always set)", "the opponents' names by seat"),
    InfoKey("rivals_reward", "float", (), "0.0", "the mean reward of the seats on other teams this step"),
    InfoKey("max_ticks", "bool", (), "False", "the round was cut off at `max_ticks` (and terminated)"),
)

#: ``infos[agent]`` of ``parallel_env(obs_key=None)`` and ``env(obs_key=None)``: the observation is the bare
#: vector, so the mask is in the infos (only there: TorchRL's wrapper fails on a mask in both places)
PER_AGENT_BARE = (*PER_AGENT, InfoKey("action_mask", "array", ("A",), "the mask", _MASK_MEANING))

SCHEMAS: dict[str, tuple[InfoKey, ...]] = {
    "parallel_env, env": PER_AGENT,
    "parallel_env(obs_key=None), env(obs_key=None)": PER_AGENT_BARE,
    "vector_env": VECTOR,
    "agent_vector_env": AGENT_VECTOR,
    "nertz_env.rllib": RLLIB,
    "single-agent view (nertz_env.single)": SINGLE,
}


#: one agent's infos with every key of :data:`PER_AGENT` at its "none yet" value (no event), in the schema's order
_NO_EVENT: dict[str, Any] = {k.name: False if k.kind == "bool" else 0 for k in PER_AGENT}


def no_event_infos(match_score: int = 0) -> dict[str, Any]:
    """One agent's infos when nothing happened to it yet: every key at its "none yet" value and the match score
    so far (what ``reset`` returns, without the mask of an env whose observation holds none)."""
    return _NO_EVENT | {"match_score": int(match_score)}


def score_of(info: dict[str, Any]) -> dict[str, int]:
    """A per-agent info's round score as a dict: ``lake``, ``nertz_penalty``, ``bonus``, ``false_calls``,
    ``total``, ``nertz_left`` (all 0 on a step where no round ended)."""
    return {name: int(info[key]) for name, key in SCORE_KEYS.items()}


def round_end_name(info: dict[str, Any]) -> str:
    """``"nertz"``, ``"stall"`` or ``"max_ticks"`` for a step that ended a round, else ``""``."""
    return ROUND_END_NAMES[int(info["round_end"])]
