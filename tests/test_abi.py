"""The engine's state crosses compiled calls as one struct value (``nertz_env.engine._abi``), not flattened."""

from __future__ import annotations

import numba
import numpy as np
from numba.core.registry import cpu_target

from nertz_env.config import NertzConfig
from nertz_env.engine import _abi, rules
from nertz_env.engine.state import allocate


def test_a_table_state_is_one_argument_of_a_compiled_call() -> None:
    S = allocate(NertzConfig(num_players=4), 2)
    typ = numba.typeof(S)
    assert isinstance(typ, _abi.PackedNamedTuple)
    assert typ.fields == type(S)._fields and typ.types == tuple(numba.typeof(a) for a in S)
    packer = cpu_target.target_context.get_arg_packer([typ, numba.int64])
    # a plain named tuple of these arrays flattens to hundreds of scalars
    assert len(packer.argument_types) == 2
    plain = numba.core.types.NamedTuple(typ.types, type(S))
    assert len(cpu_target.target_context.get_arg_packer([plain]).argument_types) > 200
    # a short name (it is mangled into every symbol), one type per field types
    assert len(str(typ)) < 40 and numba.typeof(allocate(NertzConfig(num_players=4), 5)) is typ


def test_the_rules_run_on_the_packed_state() -> None:
    """Golden and pinned tests check the moves; this checks a call through every entry point type-checks."""
    S = allocate(NertzConfig(num_players=3), 2)
    rules.reset_seeded_block(S, np.array([1, 2], np.int64), 0, 2)
    actions = np.zeros((2, 3), np.int64)
    rules.step_block(S, actions, True, 0, 2)
    assert int(S.tick.sum()) == 2


def test_a_users_own_njit_that_sees_a_state_first_gets_the_packed_type() -> None:
    """numba's dispatcher remembers how it types a named tuple once per process: had a user's function typed a
    state before the rules registered the packed type, every later call of the rules from Python would take
    numba's slow Python typing path (300 us a call, against 5 us)."""
    import subprocess
    import sys

    code = (
        "import sys, numba\n"
        "from nertz_env.config import NertzConfig\n"
        "from nertz_env.engine.state import allocate\n"
        "assert 'nertz_env.engine.rules' not in sys.modules\n"
        "S = allocate(NertzConfig(num_players=2), 1)\n"
        "f = numba.njit(lambda S: S.tick[0])\n"
        "f(S)\n"
        "print(type(f.signatures[0][0]).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "PackedNamedTuple"
