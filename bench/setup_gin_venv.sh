#!/usr/bin/env bash
# PettingZoo's gin_rummy_v4, a competitor of bench/bench_env.py, left PettingZoo in 1.27 and needs 1.24.3 with
# rlcard, which does not install beside this project's own dependencies: give it a venv of its own
# (.venv-gin at the checkout's root, or NERTZ_GIN_VENV). bench/competitors.py runs it there in a subprocess.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${NERTZ_GIN_VENV:-$ROOT/.venv-gin}"
"${PYTHON:-python3}" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q "pettingzoo==1.24.3" "rlcard>=1.0.5" "pygame>=2.3" "numpy<2.3" 2>&1 \
    | { grep -v "^WARNING: Location 'file:///" || true; }
"$VENV/bin/python" -c "from pettingzoo.classic import gin_rummy_v4; print('gin venv ready:', gin_rummy_v4.__name__)"
