"""Mutation testing of the engine: does the suite notice a small wrong edit to the rules?

Each mutant below is one exact snippet of ``nertz_env/engine/rules.py`` and its replacement: a plausible slip
(an off-by-one, a flipped comparison, a forgotten reset, a biased shuffle). The script copies the checkout to a
temporary folder, checks that the chosen tests pass there unchanged, then applies one mutant at a time and runs
those tests with ``-x`` (stop at the first failure) and a time limit. A mutant is *killed* when a test fails
(or the run errors or times out), *survived* when every test passes: a rule no test pins. It prints a table
(mutant, killed or survived, by which test, seconds) and the mutation score, and writes it to
``bench/results/mutation.txt``.

The tests run with ``NUMBA_DISABLE_JIT=1``: the rules run as plain Python, so a mutant takes effect without a
recompilation. The same source runs either way (``tests/test_engine.py`` checks compiled against plain
rollouts tick by tick), and the report's header names the rules module the runs imported and whether it was
compiled. Measured on 2 cores shared with other jobs: the unmutated subset passes in 48 to 56 s, the 18
mutants take 120 to 310 s in all (each dies within 3 to 24 s): 3 to 6 minutes for the whole run. ``--jit`` compiles each mutant instead, into
a fresh numba cache of its own: 140 s per mutant, almost all of it the compile (about 45 minutes for the
list), for a check that the compiled path agrees.

Usage (from the checkout root)::

    python bench/mutate.py                 # every mutant, the default test subset
    python bench/mutate.py --list          # the mutants and the tests meant to kill them
    python bench/mutate.py --only recycle-sattolo bonus-over-all-seats
    python bench/mutate.py --timeout 300 --out /tmp/mutation.txt

``tests/test_rules.py`` checks that every snippet still occurs exactly once in the source, so an edit
of the engine that moves a snippet fails the suite instead of silently leaving a mutant that changes nothing.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

RULES = "nertz_env/engine/rules.py"


@dataclass(frozen=True)
class Mutant:
    name: str
    description: str
    original: str  # must occur exactly once in ``file``
    replacement: str
    pinned_by: str  # the test meant to kill it (documentation; the run reports which test actually did)
    file: str = RULES


MUTANTS: tuple[Mutant, ...] = (
    # ------------------------------------------------------------------ ten classic slips
    Mutant(
        "stack-same-colour",
        "a work pile takes one rank lower of the SAME colour",
        "card_colour(upper) != card_colour(lower)",
        "card_colour(upper) == card_colour(lower)",
        "test_rules.py::test_to_work__nertz_top_goes_on_one_rank_higher_of_the_other_colour_only",
    ),
    Mutant(
        "lake-takes-any-card",
        "the lake mask lets any card go on the lake (not only the next of its suit)",
        "(c % 13 == 0 or tops[base + c - 1] > 0)",
        "(c % 13 == 0 or tops[base + c - 1] >= 0)",
        "test_rules.py::test_lake__wrong_suit_or_rank_is_masked_and_applied_as_a_flagged_wait",
    ),
    Mutant(
        "flip-packet-unreversed",
        "a flip turns the packet card by card, so its top card (not its deepest) ends on top of the waste",
        "state.waste[t, p, wl + x] = state.stock[t, p, n - 1 - x]",
        "state.waste[t, p, wl + x] = state.stock[t, p, n - k + x]",
        "test_rules.py::test_flip__turns_the_top_draw_cards_as_one_packet",
    ),
    Mutant(
        "redeal-keeps-waste-order",
        "turning the waste over keeps its order (the waste's top becomes the stock's top)",
        "    wl = state.waste_len[t, p]\n    for k in range(wl):\n        state.stock[t, p, k] = state.waste[t, p, wl - 1 - k]\n",
        "    wl = state.waste_len[t, p]\n    for k in range(wl):\n        state.stock[t, p, k] = state.waste[t, p, k]\n",
        "test_rules.py::test_flip__empty_stock_turns_the_waste_over_unshuffled",
    ),
    Mutant(
        "penalty-sign",
        "cards left in the Nertz pile add to the round score instead of costing",
        "state.lake_played[t, p]\n            - cfg[C_PENALTY] * left",
        "state.lake_played[t, p]\n            + cfg[C_PENALTY] * left",
        "test_rules.py::test_round_end__after_the_tick_the_nertz_pile_empties_with_every_action_counted",
    ),
    Mutant(
        "stall-never-ends-round",
        "every stall reshuffles; the second one does not end the round",
        "if state.stalls[t] == 0:",
        "if state.stalls[t] >= 0:",
        "test_rules.py::test_stall__waste_under_the_stock_then_top_to_bottom_and_a_second_stall_ends_the_round",
    ),
    Mutant(
        "waste-to-work-is-progress",
        "a waste card onto a work pile counts as progress (resets the stall clock)",
        "place_on_work(state, t, p, j, c)\n        return R_PROGRESS if src == 0 else 0",
        "place_on_work(state, t, p, j, c)\n        return R_PROGRESS",
        "test_rules.py::test_to_work__waste_top_onto_a_work_pile_is_not_progress",
    ),
    Mutant(
        "redeal-limit-off-by-one",
        "max_redeals allows one redeal more than it says",
        "state.redeals[t, p] < cfg[C_MAXREDEALS]",
        "state.redeals[t, p] <= cfg[C_MAXREDEALS]",
        "test_rules.py::test_flip__max_redeals_masks_flip_once_the_redeals_are_used_up",
    ),
    Mutant(
        "lost-race-unflagged",
        "a lake play that lost its slot is not flagged in the infos",
        "state.lost_race[t, p] = 1",
        "state.lost_race[t, p] = 0",
        "test_rules.py::test_race__exactly_one_card_lands_and_the_losers_are_flagged",
    ),
    Mutant(
        "nertz-first-ignored",
        "empty_pile_from_nertz_first never blocks the waste from an empty pile",
        "blocked = nertz_first and src != 0",
        "blocked = False",
        "test_rules.py::test_empty_pile_from_nertz_first__an_empty_pile_takes_only_the_nertz_top",
    ),
    # ------------------------------------------------------------------ the five of issue 14 ("rules the tests do not pin")
    Mutant(
        "bonus-over-all-seats",
        "the call bonus's 'most cards in the lake' is decided over every seat, not the seats that went out",
        "if (candidates >> p) & 1 and state.lake_played[t, p] > best:",
        "if state.lake_played[t, p] > best:",
        "test_rules.py::test_call_bonus__most_lake_cards_is_decided_among_the_seats_that_emptied_their_piles_only",
    ),
    Mutant(
        "recycle-sattolo",
        'recycle="shuffle" draws the swap below k (Sattolo): no card stays in place, 6 of 24 orders of 4',
        "x = rng_below(state.rng, t, k + 1)\n            tmp = state.stock[t, p, k]",
        "x = rng_below(state.rng, t, k)\n            tmp = state.stock[t, p, k]",
        "test_rules.py::test_recycle_shuffle__every_order_of_the_redealt_cards_is_equally_likely",
    ),
    Mutant(
        "deal-keeps-redeals",
        "a new deal does not reset the redeal count (max_redeals does not count afresh)",
        "        state.redeals[t, p] = 0\n",
        "",
        "test_rules.py::test_max_redeals__counts_afresh_in_the_next_round",
    ),
    Mutant(
        "run-to-empty-single-cards",
        "an empty work pile takes single cards from other piles, never a run of several",
        "for length in range(1, ni + 1):",
        "for length in range(1, 2):",
        "test_rules.py::test_run__an_empty_pile_takes_a_run_of_any_length",
    ),
    Mutant(
        "seat-order-rotations",
        "the per-tick seat order is a random rotation of the seats (every seat first equally often)",
        "    for p in range(np_):\n        state.order[t, p] = p\n    for k in range(np_ - 1, 0, -1):",
        "    r = rng_below(state.rng, t, np_)\n    for p in range(np_):\n        state.order[t, p] = (p + r) % np_\n"
        "    for k in range(0):",
        "test_rules.py::test_seat_order__every_order_of_the_seats_is_equally_likely",
    ),
    # ------------------------------------------------------------------ the other random draws
    Mutant(
        "deal-sattolo",
        "the deal shuffle draws the swap below x (Sattolo): no card is ever dealt where it lay",
        "y = rng_below(state.rng, t, x + 1)",
        "y = rng_below(state.rng, t, x)",
        "test_rules.py::test_deal_shuffle__every_card_is_equally_likely_at_every_deck_position",
    ),
    Mutant(
        "seat-order-sattolo",
        "the seat-order shuffle draws the swap below k (Sattolo): with 2 seats, seat 1 always acts first",
        "x = rng_below(state.rng, t, k + 1)\n        tmp = state.order[t, k]",
        "x = rng_below(state.rng, t, k)\n        tmp = state.order[t, k]",
        "test_rules.py::test_seat_order__every_order_of_the_seats_is_equally_likely",
    ),
    Mutant(
        "sample-never-last-legal",
        "sample_actions never draws a seat's last legal action",
        "k = rng_below(rng, t, count)",
        "k = rng_below(rng, t, count - 1)",
        "test_rules.py::test_sample_actions__draws_every_legal_action_equally_often_and_never_an_illegal_one",
    ),
    # ------------------------------------------------------------------ the seat's memory (the memory option)
    Mutant(
        "memory-sees-the-whole-packet",
        "a flip lets the seat know every card of its packet, not only the one that lands on top",
        "state.memory[t, p, 1, wl + x] = state.memory[t, p, 0, n - 1 - x]",
        "state.memory[t, p, 1, wl + x] = MEM_KNOWN",
        "test_rules.py::test_memory__the_seat_knows_the_tops_it_turned_up_until_a_shuffled_redeal",
    ),
    Mutant(
        "memory-survives-a-shuffle",
        "a shuffled redeal leaves the seat knowing where its cards lie",
        "state.memory[t, p, 0, k] = min(state.memory[t, p, 0, k], MEM_SEEN)",
        "state.memory[t, p, 0, k] = state.memory[t, p, 0, k]",
        "test_rules.py::test_memory__the_seat_knows_the_tops_it_turned_up_until_a_shuffled_redeal",
    ),
)

# The subset of the suite each mutant runs against, in order: the direct and uniformity tests (10 s in plain
# Python), the golden rule tests (20 s, 18 of them the two 2,000-table race fairness tests at the end), the
# generator and one variant of the incremental-observation check (15 s). Left out,
# measured in plain Python: the other 17 incremental-observation variants (15 s each), the invariant rollouts
# (about a minute per variant), and the compiled-against-plain test (it compiles the mutant: a mutant is the
# same code either way). The mutation-list check is deselected: a mutant's snippet is, by design, no longer
# in the source.
TESTS = (
    "tests/test_rules.py",
    "tests/test_engine.py::test_table_generator__is_uniform_and_seed_dependent",
    "tests/test_engine.py::test_random_rollouts__keep_every_invariant[default]",
)
DESELECT = (
    "tests/test_rules.py::test_mutation_list__every_mutant_still_applies_to_the_source_exactly_once",
)
COPY = ("nertz_env", "agents", "train", "eval", "tests", "bench", "pyproject.toml", "README.md")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "results", "*.zip", "*.pt")


def check_mutants(root: Path, mutants: tuple[Mutant, ...] = MUTANTS) -> list[str]:
    """Problems with the mutant list against the source under ``root`` (empty when every mutant applies):
    each original snippet must occur exactly once, and the mutated file must still be valid Python."""
    problems = []
    for m in mutants:
        path = root / m.file
        if not path.is_file():
            problems.append(f"{m.name}: {m.file} does not exist")
            continue
        text = path.read_text()
        count = text.count(m.original)
        if count != 1:
            problems.append(
                f"{m.name}: the snippet {m.original!r} occurs {count} times in {m.file}, not once"
            )
            continue
        if m.replacement == m.original:
            problems.append(f"{m.name}: the replacement equals the original")
            continue
        try:
            compile(text.replace(m.original, m.replacement), m.file, "exec")
        except SyntaxError as e:
            problems.append(f"{m.name}: the mutated {m.file} is not valid Python ({e.msg}, line {e.lineno})")
    return problems


@dataclass
class Outcome:
    mutant: str
    killed: bool
    by: str
    seconds: float


FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


def run_tests(
    workdir: Path, tests: tuple[str, ...], timeout: float, jit: bool, cache_dir: Path
) -> tuple[str, str, float]:
    """Run the test subset in ``workdir``; returns (status, first failing test or detail, seconds), status one
    of "passed", "failed", "error", "timeout"."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if jit:
        env["NUMBA_DISABLE_JIT"] = "0"
        env["NUMBA_CACHE_DIR"] = str(cache_dir)  # a fresh cache: the mutant is compiled, never a stale copy
    else:
        env["NUMBA_DISABLE_JIT"] = "1"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore",
        "-m",
        "not bench",
    ]
    cmd += [f"--deselect={d}" for d in DESELECT]
    cmd += list(tests)
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", f"(no result within {timeout:.0f} s)", time.perf_counter() - start
    seconds = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    if proc.returncode == 0:
        return "passed", "", seconds
    m = FAILED.search(out)
    if proc.returncode == 1 and m:
        return "failed", m.group(1), seconds
    tail = " | ".join(line for line in out.strip().splitlines()[-3:])
    return "error", m.group(1) if m else f"(pytest exit {proc.returncode}: {tail[:150]})", seconds


def copy_checkout(root: Path, dest: Path) -> None:
    for name in COPY:
        src = root / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=IGNORE)
        elif src.is_file():
            shutil.copy2(src, dest / name)


def engine_in_use(workdir: Path, jit: bool) -> str:
    """Which rules module the test runs import, and whether numba compiles it (a sanity line for the report)."""
    env = dict(os.environ, NUMBA_DISABLE_JIT="0" if jit else "1")
    env.pop("PYTHONPATH", None)
    code = (
        "import numba, nertz_env.engine.rules as r; "
        "print(r.__file__, 'plain Python' if numba.config.DISABLE_JIT else 'compiled', "
        "type(r.step_table).__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=workdir, env=env, capture_output=True, text=True)
    return (out.stdout or out.stderr).strip()


def git_commit(root: Path) -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results"],
            cwd=root,
            capture_output=True,
            text=True,
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutants (see --list)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument(
        "--timeout",
        type=float,
        help="seconds per mutant before it counts as killed (default 240, with --jit 900: a cold compile)",
    )
    ap.add_argument(
        "--jit", action="store_true", help="compile every mutant (slow) instead of NUMBA_DISABLE_JIT=1"
    )
    ap.add_argument("--tests", nargs="+", metavar="PATH", help=f"test subset (default: {' '.join(TESTS)})")
    ap.add_argument(
        "--out", default="bench/results/mutation.txt", help="where to write the table ('' for nowhere)"
    )
    args = ap.parse_args(argv)
    root = Path(__file__).resolve().parents[1]
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:28s} {m.description}\n{'':28s} meant to be killed by {m.pinned_by}")
        return 0
    if args.timeout is None:
        args.timeout = 900.0 if args.jit else 240.0
    if args.timeout <= 0:
        print(f"mutate.py: error: --timeout must be positive, got {args.timeout}", file=sys.stderr)
        return 2
    names = {m.name for m in MUTANTS}
    unknown = sorted(set(args.only or ()) - names)
    if unknown:
        print(f"mutate.py: error: unknown mutant(s) {unknown}; --list shows the names", file=sys.stderr)
        return 2
    chosen = tuple(m for m in MUTANTS if not args.only or m.name in args.only)
    problems = check_mutants(root, chosen)
    if problems:
        print(
            "mutate.py: error: the mutant list no longer matches the source:\n  " + "\n  ".join(problems),
            file=sys.stderr,
        )
        return 2
    tests = tuple(args.tests) if args.tests else TESTS
    missing = [t for t in tests if not (root / t.split("::")[0]).exists()]
    if missing:
        print(f"mutate.py: error: no such test file(s): {missing}", file=sys.stderr)
        return 2

    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    with tempfile.TemporaryDirectory(prefix="nertz-mutate-") as tmp:
        work = Path(tmp) / "checkout"
        work.mkdir()
        copy_checkout(root, work)
        mode = (
            "compiled (a fresh numba cache per mutant)" if args.jit else "NUMBA_DISABLE_JIT=1 (plain Python)"
        )
        say(
            f"# Engine mutation run, {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC, commit {git_commit(root)}"
        )
        say(
            f"# command: python bench/mutate.py {shlex.join(argv if argv is not None else sys.argv[1:])}".rstrip()
        )
        say(f"# rules: {mode}; engine imported by the runs: {engine_in_use(work, args.jit)}")
        say(f"# tests: pytest -x {' '.join(tests)}")
        say(f"#        deselected: {', '.join(d.split('::')[1] for d in DESELECT)}")
        say(f"# timeout per mutant: {args.timeout:.0f} s (a timeout counts as killed)")
        status, detail, seconds = run_tests(work, tests, args.timeout * 2, args.jit, Path(tmp) / "cache-base")
        say(f"# unmutated source: {status} in {seconds:.1f} s {detail}".rstrip())
        if status != "passed":
            say("mutate.py: the test subset does not pass on the unmutated source; no mutant can be judged")
            return 1
        say()
        say(f"{'mutant':28s} {'result':9s} {'seconds':>7s}  killed by")
        outcomes = []
        for i, m in enumerate(chosen):
            path = work / m.file
            original = path.read_text()
            path.write_text(original.replace(m.original, m.replacement, 1))
            try:
                status, detail, seconds = run_tests(
                    work, tests, args.timeout, args.jit, Path(tmp) / f"cache-{i}"
                )
            finally:
                path.write_text(original)
            dead = status != "passed"
            by = detail if status == "failed" else (f"{status}: {detail}" if dead else "-")
            outcomes.append(Outcome(m.name, dead, by, seconds))
            say(f"{m.name:28s} {'killed' if dead else 'SURVIVED':9s} {seconds:7.1f}  {by}")
        killed = sum(o.killed for o in outcomes)
        total_s = sum(o.seconds for o in outcomes)
        say()
        say(
            f"mutation score: {killed}/{len(outcomes)} killed ({100 * killed / len(outcomes):.0f}%), {total_s:.0f} s of test runs"
        )
        survivors = [o.mutant for o in outcomes if not o.killed]
        if survivors:
            say(f"survived (rules no test pins): {', '.join(survivors)}")
    if args.out:
        out = Path(args.out).resolve()  # from where the command runs, as every other --out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n")
        print(f"(written to {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
