"""Rule variants the tests sweep: every option of RULES.md appears in at least one."""

from __future__ import annotations

from typing import Any

VARIANTS: list[dict[str, Any]] = [
    {},
    {"num_players": 2},
    {"num_players": 3, "draw": 1},
    {"num_players": 8, "work_piles": 6},
    {"work_piles": 5, "nertz_size": 8},
    {"recycle": "shuffle", "max_redeals": 2},
    {"empty_pile_from_nertz_first": True},
    {"call_mode": "manual", "call_bonus": 10, "false_call_penalty": 5},
    {"call_bonus": 25, "nertz_penalty": 0},
    {"stall_ticks": 8, "max_ticks": 300},
    {"target_score": 40},
    {"rounds": 2, "num_players": 3},
    {"teams": True},
    {"num_players": 6, "teams": [[0, 3], [1, 4], [2, 5]]},
    {"turn_based": True, "num_players": 3},
    {"jokers": 2},
    {"jokers": 1, "allow_tuck": True, "allow_rotate": True, "memory": True},
    {"allow_tuck": True, "draw": 2},
    {"last_moves": 2, "rounds": 2, "memory": True},
]


def variant_id(v: dict[str, Any]) -> str:
    return ",".join(f"{k}={val}" for k, val in v.items()) or "default"
