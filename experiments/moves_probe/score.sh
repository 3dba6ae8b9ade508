#!/usr/bin/env bash
# Lab (issue 40 probe): each clone against three heuristic, 1,000 deals, seats rotated, seed 4040 (not a bar's seed).
cd "$(dirname "$0")"
for n in 10000 30000 100000 300000; do
    for z in clones/*_"$n".zip; do
        name=$(basename "$z" .zip)
        [ -f "scores/$name/results.json" ] && continue
        nertz-eval gauntlet "$z" heuristic --players 4 --deals 1000 --seed 4040 --workers 1 \
            --out "scores/$name" --no-plots --no-progress > "scores/$name.txt" 2>&1
    done
done
