"""PettingZoo's five conformance tests on a plain install of nertz-env (built from the sdist, its four dependencies,
no extras: no render extra, no torch). Run by tests/test_packaging.py in the sdist's venv; prints a JSON line."""

from __future__ import annotations

import importlib.util
import json

from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, render_test, seed_test

import nertz_env

plain = {m: importlib.util.find_spec(m) is None for m in ("resvg_py", "PIL", "torch", "stable_baselines3")}
api_test(nertz_env.env(num_players=2), num_cycles=200)
parallel_api_test(nertz_env.parallel_env(num_players=2), num_cycles=200)
seed_test(nertz_env.env, num_cycles=200)
max_cycles_test(nertz_env)
render_test(lambda render_mode=None: nertz_env.env(render_mode=render_mode, num_players=2))
print(json.dumps({"plain": plain, "render_modes": nertz_env.parallel_env().metadata["render_modes"]}))
