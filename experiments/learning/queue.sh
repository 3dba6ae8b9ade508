#!/usr/bin/env bash
# The issue-40 runs from scratch, resumable: each lane runs its runs in turn, one torch thread each, so two
# lanes share a 2-core machine. A finished run (policy.zip) is skipped; a stopped one resumes from its newest
# checkpoint. Usage: bash experiments/learning/queue.sh RUNS_DIR "moves:1 moves:2" "moves:3 flat:1 ..." ...
set -u
runs=$1; shift
lane() {
  for item in $1; do
    head=${item%%:*}; seed=${item##*:}; dir="$runs/scratch_${head}_s$seed"
    [ -f "$dir/policy.zip" ] && continue
    last=$(ls "$dir"/checkpoints/step_*.zip 2>/dev/null | sort | tail -1)
    if [ -n "$last" ]; then
      nertz-train --resume "$last" --torch-threads 1 --no-progress-bar >> "$dir.log" 2>&1
    else
      mkdir -p "$runs"
      nertz-train --config scratch --policy "$head" --seed "$seed" --torch-threads 1 --no-progress-bar \
        --run-dir "$dir" >> "$dir.log" 2>&1
    fi
  done
}
for l in "$@"; do lane "$l" & done
wait
