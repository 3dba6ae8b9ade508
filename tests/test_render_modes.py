"""Every env declares only the render modes that can run in its install, and its render_fps: without the
render extra, rgb_array is not declared (so PettingZoo's render_test passes on a plain install) and is
refused in one line naming the extra."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import nertz_env
from nertz_env import render


def _classes() -> list[type]:
    out: list[type] = [nertz_env.NertzParallelEnv, nertz_env.NertzVectorEnv, nertz_env.NertzAgentVectorEnv]
    try:
        from nertz_env.train.single import NertzSingleAgentEnv
    except ImportError:  # pragma: no cover - the train extra
        return out
    return [*out, NertzSingleAgentEnv]


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_metadata__declares_render_fps_and_the_modes_that_run(cls: type) -> None:
    assert cls.metadata["render_fps"] == render.RENDER_FPS
    assert cls.metadata["render_modes"] == list(render.RENDER_MODES)
    assert ("rgb_array" in cls.metadata["render_modes"]) == render.rgb_available()


def test_without_the_render_extra__rgb_array_is_not_declared_and_render_test_passes() -> None:
    # a plain install, simulated: resvg-py and pillow cannot be imported
    code = textwrap.dedent(
        """
        import sys
        sys.modules["resvg_py"] = None
        sys.modules["PIL"] = None
        import nertz_env
        from pettingzoo.test import render_test
        env = nertz_env.parallel_env(num_players=2)
        assert env.metadata["render_modes"] == ["ansi", "human"], env.metadata
        assert nertz_env.vector_env(1).metadata["render_modes"] == ["ansi", "human"]
        render_test(lambda render_mode=None: nertz_env.env(render_mode=render_mode, num_players=2))
        try:
            nertz_env.parallel_env(render_mode="rgb_array")
        except ValueError as e:
            print(e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == render.rgb_extra_message()  # (render_test printed the human frames first)
