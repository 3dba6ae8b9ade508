"""The README's front page and the docs site are true: the quick start prints what its comments say it prints,
and every shell command they show runs.

The commands are found in README.md and in every page of docs/ (``DOC_PAGES``: the guides, the environment
card, the client pages ...; not docs/experiments/, whose commands are records of past runs, nor docs/_build).
A command shown on several pages runs once.

Issue 14: "every command in it run by a test or by CI". The commands are found in the README itself, so a new one cannot go unrun:

- every line of a ```bash block (backslash-continued lines joined, ``# comments`` dropped);
- every ``$ command`` line of any other non-Python block; when the lines after it show ``...: error: ...``,
  the command must exit 2 and print exactly that line on stderr (a bad-input example);
- every inline code span of the prose that is a complete command a user runs: ``nertz-...`` or
  ``python -m nertz_env...`` with at least one argument (a bare ``nertz-eval`` or ``python -m
  nertz_env.train.imitate`` in a sentence names a program, it is not an invocation), and ``python bench/X.py``
  with or without arguments (a benchmark script is run by its name). Leading ``VAR=value`` assignments are
  environment variables; a value written ``1|2`` means each of them in turn.

Each command runs through the program's shrink rule (``RULES``): the same program and flags, with budgets made
tiny (``--deals 2``, a two-rollout training budget, ``--seconds 0.2`` ...) and every output path moved under a
temporary folder. A command that needs an earlier command's files (``nertz-train --resume
runs/long/checkpoints/step_...zip``) runs after the command that makes them, with the path mapped the same way.
A program without a rule, or a form its rule cannot shrink, fails the test with a message saying to add a rule.
Only ``RUN_BY_CI`` is left out, each with its reason.

The installed console scripts are used when the installed package is this checkout's code (CI installs the
checkout into ``.venv``); otherwise (a worktree next to a venv installed from another checkout) the program's
module runs with ``python -m`` from the repository root, so the test checks this checkout's code either way.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import restore_sigint

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


# Pages whose examples run elsewhere, each with where: they need what the default suite cannot have (a Ray
# cluster, client libraries whose pins conflict with the dev extras, each in its own cached venv). The test
# files named here must exist (test_pages_run_elsewhere_name_their_tests).
RUN_ELSEWHERE = {
    "docs/clients/routes.md": "each library's route runs in tests/test_clients.py (and, for AgileRL, BenchMARL, "
    "pufferlib-core and RL Zoo 3, in their own venvs: tests/clients/, the isolated phase)",
    "docs/guides/cluster.md": "needs a Ray cluster: tests/test_cluster.py runs these commands on a simulated "
    "two-node cluster (the isolated phase)",
}


def doc_pages() -> list[Path]:
    """README.md, then every Markdown page of the docs site whose commands are instructions (not
    docs/experiments/, the dated records of past runs, not the build folder, not RUN_ELSEWHERE)."""
    pages = sorted(
        p for p in DOCS.rglob("*.md")
        if p.relative_to(DOCS).parts[0] not in ("_build", "experiments")
        and p.relative_to(ROOT).as_posix() not in RUN_ELSEWHERE
    ) if DOCS.is_dir() else []
    return [README, *pages]


def test_pages_run_elsewhere_name_their_tests() -> None:
    for page, where in RUN_ELSEWHERE.items():
        named = re.findall(r"tests/[\w/]+(?:\.py)?", where)
        assert named, f"{page}: say which tests run its examples"
        for name in named:
            assert (ROOT / name).exists(), f"{page}: {name} does not exist"


def test_no_two_training_runs_the_docs_show_share_a_run_folder() -> None:
    """A user who follows every page (the README, the guides, the pages whose commands run elsewhere, such as the
    cluster guide) never starts a run in a folder another page's run filled: nertz-train refuses a fresh run into
    a folder that holds a run. Each folder a ``nertz-train`` command trains into (``--run-dir``, ``run_dir`` in its
    ``--config``, else the default runs/nertz) belongs to one command; a resume, ``--print-config``, ``--help``
    and a bad-input example start no run. The same command on two pages is one run."""
    pages = [README, *sorted(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] not in ("_build", "experiments"))]
    owner: dict[str, Command] = {}
    for page in pages:
        for cmd in readme_commands(page.read_text()):
            cmd.page = page.relative_to(ROOT).as_posix()
            args = cmd.argv[1:]
            if cmd.argv[:1] != ["nertz-train"] or cmd.expect_error or {"--resume", "--print-config", "--help"} & set(args):
                continue
            folder = _value(args, "--run-dir") or _config_value(args, "run_dir") or "runs/nertz"
            first = owner.setdefault(os.path.normpath(folder), cmd)
            assert first.text == cmd.text, (
                f"{cmd.where} trains into {folder}, as {first.where} does: nertz-train refuses the second run "
                f"(that folder holds the first one's); give it a folder of its own"
            )
    assert len(owner) >= 4  # the guides' runs were found


def _quick_start() -> str:
    text = README.read_text()
    section = text[text.index("## Quick start") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the Quick start has no python block"
    return match.group(1)


def test_quick_start_prints_what_its_comments_say() -> None:
    code = _quick_start()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md:quick-start", "exec"), {"__name__": "__readme__"})
    printed = out.getvalue().splitlines()
    checked = 0
    for line in code.splitlines():
        m = re.match(r"print\((.*)\)\s+# (.*)$", line)
        if not m:
            continue
        expr, comment = m.group(1), m.group(2).strip()
        if expr.endswith('["score"]'):  # "2: the round's total ...": the number before the colon
            expected = comment.split(":")[0].strip()
            assert expected in printed, f"README says {expr} prints {expected}; the code printed {printed[-3:]}"
            checked += 1
        elif expr.startswith("nertz_env.describe_action"):
            assert comment in printed, f"README says {expr} prints {comment!r}"
            checked += 1
    assert checked == 2, "the quick start's checked comments changed: update this test"


BIN = Path(sys.executable).parent

# Lines that start like this are not run here, and why (CI or another test runs them). Keep this short:
# everything else gets a rule.
RUN_BY_CI = {
    "bash .ci/setup": ".ci/run runs the README's setup lines exactly as written (check_readme fails when the "
    "README's lines and .ci/run's differ)",
    "pip install": "an install step: .ci/setup installs the checkout with its extras into .venv, and the commands "
    "here run in that venv (a missing extra fails the command that needs it)",
    "python -m build": "builds the wheel in the checkout: tests/test_wheel.py builds it and installs it into fresh "
    "venvs on every Python (the isolated phase)",
    "export ": "sets an environment variable of the user's shell for the commands after it; nothing to run",
    "ray start": "starts a Ray head on the user's machine; the `--address` command after it runs here on its own "
    "local Ray, and tests/test_rllib.py joins a simulated two-node cluster",
}

INLINE_PREFIXES = ("nertz-", "python -m nertz_env", "python bench/")


# ---------------------------------------------------------------------------------------------------------
# Finding the commands


@dataclass
class Command:
    text: str  # as the page shows it (continuations joined, comment dropped)
    line: int  # line number in its page
    env: dict[str, str]
    argv: list[str]
    expect_error: str | None = None  # a bad-input example: exit 2 with this line on stderr
    page: str = "README.md"  # where it is shown, relative to the repository root

    @property
    def id(self) -> str:
        env = "".join(f"{k}={v}_" for k, v in sorted(self.env.items()))
        short = re.sub(r"[^A-Za-z0-9_.=/-]+", "_", env + self.text)[:70]
        where = "" if self.page == "README.md" else Path(self.page).stem + ":"
        return f"{where}L{self.line}-{short}"

    @property
    def where(self) -> str:
        return f"{self.page} line {self.line}"


def _split_env(words: list[str]) -> list[tuple[dict[str, str], list[str]]]:
    """Leading VAR=value words are the environment; ``1|2`` as a value gives one command per alternative."""
    env_items: list[tuple[str, list[str]]] = []
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
        k, v = words.pop(0).split("=", 1)
        env_items.append((k, v.split("|")))
    combos: list[dict[str, str]] = [{}]
    for k, values in env_items:
        combos = [{**c, k: v} for c in combos for v in values]
    return [(c, list(words)) for c in combos]


def _commands_from(text: str, line: int, expect_error: str | None = None) -> list[Command]:
    words = shlex.split(text, comments=True)
    if not words:
        return []
    return [
        Command(shlex.join(argv), line, env, argv, expect_error) for env, argv in _split_env(list(words))
    ]


def readme_commands(text: str) -> list[Command]:
    lines = text.splitlines()
    found: list[Command] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\S*)", lines[i])  # a MyST directive (```{image}) is a fence too
        if fence:
            lang = fence.group(1)
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            body = lines[i + 1 : j]
            if lang in ("bash", "sh", "shell"):
                k = 0
                while k < len(body):
                    start = k
                    joined = body[k]
                    while joined.rstrip().endswith("\\") and k + 1 < len(body):
                        k += 1
                        joined = joined.rstrip()[:-1] + " " + body[k].strip()
                    found += _commands_from(joined, i + 2 + start)
                    k += 1
            elif lang in ("", "console", "text"):
                for k, row in enumerate(body):
                    if not row.startswith("$ "):
                        continue
                    shown = []
                    for nxt in body[k + 1 :]:
                        if nxt.startswith("$ "):
                            break
                        shown.append(nxt.strip())
                    errors = [s for s in shown if re.match(r"^[\w./-]+: error: ", s)]
                    found += _commands_from(row[2:], i + 2 + k, errors[0] if errors else None)
            i = j + 1
            continue
        for m in re.finditer(r"`([^`\n]+)`", lines[i]):
            span = m.group(1).strip()
            try:
                words = shlex.split(span)
            except ValueError:
                continue
            rest = [w for w in words if not re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", w)]
            plain = " ".join(rest)
            if not plain.startswith(INLINE_PREFIXES):
                continue
            is_script = plain.startswith("python bench/")
            nargs = len(rest) - (3 if plain.startswith("python -m") else 1)
            if is_script or nargs >= 1:
                found += _commands_from(span, i + 1)
        i += 1
    # the same command shown twice runs once
    unique: dict[tuple[str, tuple[tuple[str, str], ...]], Command] = {}
    for c in found:
        unique.setdefault((c.text, tuple(sorted(c.env.items()))), c)
    return list(unique.values())


# ---------------------------------------------------------------------------------------------------------
# Running them


@dataclass
class Plan:
    argv: list[str]  # after the program: the shrunk arguments
    makes: list[str] = field(default_factory=list)  # README paths this command creates (for later commands)
    needs: list[str] = field(default_factory=list)  # README paths an earlier command must have created
    server: bool = False  # runs until stopped: wait for its address line, then stop it
    ready: str = ""  # the line a server prints when it is up
    timeout: float = 300.0
    requires: tuple[str, ...] = ()  # modules an optional extra brings; missing -> skipped, with the reason
    restore: tuple[str, ...] = ()  # checkout folders the program writes into: put back as they were


class CannotShrink(Exception):
    pass


class Ctx:
    """Maps the README's paths into one temporary folder shared by all commands of the session."""

    def __init__(self, work: Path) -> None:
        self.work = work

    def out(self, path: str) -> str:
        p = Path(path)
        return str(self.work / (p.relative_to(p.anchor) if p.is_absolute() else p))

    def run(self, program: list[str], args: list[str], timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            program + args, cwd=ROOT, env=_env({}), capture_output=True, text=True, timeout=timeout
        )


def _value(args: list[str], flag: str) -> str | None:
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def _set(args: list[str], flag: str, value: str, *, add: bool = True) -> list[str]:
    """``flag value`` replaced where given (either spelling), else appended when ``add``."""
    out, done, i = [], False, 0
    while i < len(args):
        a = args[i]
        if a == flag and i + 1 < len(args):
            out += [flag, value]
            done, i = True, i + 2
            continue
        if a.startswith(flag + "="):
            out += [flag, value]
            done = True
        else:
            out.append(a)
        i += 1
    if not done and add:
        out += [flag, value]
    return out


def _drop(args: list[str], flag: str, takes_value: bool = True) -> list[str]:
    out, i = [], 0
    while i < len(args):
        if args[i] == flag:
            i += 2 if takes_value else 1
            continue
        if not args[i].startswith(flag + "="):
            out.append(args[i])
        i += 1
    return out


def _map(args: list[str], flags: tuple[str, ...], ctx: Ctx, makes: list[str]) -> list[str]:
    for flag in flags:
        v = _value(args, flag)
        if v is not None:
            makes.append(v.rstrip("/"))
            args = _set(args, flag, ctx.out(v))
    return args


# --- the rules, one per program ------------------------------------------------------------------------


def rule_demo(args: list[str], ctx: Ctx) -> Plan:
    return Plan(_set(args, "--deals", "2"))


def rule_eval(args: list[str], ctx: Ctx) -> Plan:
    if not args or args[0] not in ("round-robin", "gauntlet", "ladder"):
        raise CannotShrink(f"nertz-eval subcommand {args[:1]}")
    makes: list[str] = []
    a = args if _value(args, "--deal-seeds") else _set(args, "--deals", "2")
    if _value(a, "--workers") is not None:
        a = _set(a, "--workers", "2")
    a = _map(a, ("--out", "--replays"), ctx, makes)
    if "--no-save" not in a and _value(a, "--out") is None:
        a += ["--out", ctx.out(f"eval_out/{args[0]}")]
    needs: list[str] = []
    for i, spec in enumerate(list(a)):
        if i == 0 or spec.startswith("-") or a[i - 1].startswith("-") or (ROOT / spec).exists():
            continue
        if "/" in spec:  # a checkpoint a README command writes (nertz-train --run-dir runs/rllib -> runs/rllib/final)
            needs.append(str(Path(spec).parent))
            a[i] = ctx.out(spec)
        elif spec.endswith(".zip"):  # a zip a README Python block trains
            _outside_model(ctx, spec, a)
            a[i] = ctx.out(spec)
    a += ["--no-progress"] if "--no-progress" not in a else []
    return Plan(a, makes=makes, needs=needs, timeout=600.0)


def _outside_model(ctx: Ctx, spec: str, args: list[str]) -> None:
    """A zip the README trains in a Python block (``MaskablePPO(...).save("mine.zip")``): trained here for a
    few steps at the table the command plays, with the README's own snippet shape (no nertz-env record)."""
    target = Path(ctx.out(spec))
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    rules = dict(r.split("=", 1) for r in (args[i + 1] for i, w in enumerate(args) if w == "--rule"))
    players = _value(args, "--players") or "4"
    code = (
        "import json, sys\n"
        "from sb3_contrib import MaskablePPO\n"
        "from nertz_env.train.single import NertzSingleAgentEnv\n"
        "rules = {k: json.loads(v) for k, v in json.loads(sys.argv[1]).items()}\n"
        f"env = NertzSingleAgentEnv(num_players={int(players)}, rules=rules, opponents='heuristic')\n"
        "MaskablePPO('MlpPolicy', env, n_steps=32, batch_size=32, n_epochs=1, seed=0).learn(32).save(sys.argv[2])\n"
    )
    r = ctx.run([sys.executable, "-c", code], [json.dumps(rules), str(target)])
    assert r.returncode == 0, f"could not train the outside model {spec} for {args}:\n{r.stderr[-2000:]}"


def _train_mode(args: list[str]) -> str:
    mode = _value(args, "--mode")
    if mode:
        return mode
    cfg = _value(args, "--config")
    if cfg:
        path = ROOT / cfg if (ROOT / cfg).is_file() else ROOT / "train" / "configs" / f"{cfg}.toml"  # or a name
        m = re.search(r'^\s*mode\s*=\s*"(\w+)"', path.read_text(), re.M)
        if m:
            return m.group(1)
    return "vector"


TINY_STEPS = 64


def rule_train(args: list[str], ctx: Ctx) -> Plan:
    if "--print-config" in args:
        return Plan(args, timeout=120.0)
    if _value(args, "--backend") == "rllib":
        return rule_train_rllib(args, ctx)
    makes: list[str] = []
    needs: list[str] = []
    resume = _value(args, "--resume")
    if resume is not None:
        m = re.match(r"(.+?)/checkpoints/step_\d+\.zip$", resume)
        if not m:
            raise CannotShrink(f"--resume {resume} (expected RUN/checkpoints/step_N.zip)")
        run = m.group(1)
        needs.append(run)
        ckpts = sorted(Path(ctx.out(run)).glob("checkpoints/step_*.zip"))
        latest = str(ckpts[-1]) if ckpts else ctx.out(resume)
        a = _set(args, "--resume", latest)
        a = _set(a, "--total-timesteps", str(2 * TINY_STEPS))
        return Plan([*a, "--no-progress-bar"], needs=needs, timeout=600.0)
    a = _map(args, ("--run-dir",), ctx, makes)
    if _value(a, "--run-dir") is None:
        makes.append("runs/nertz")
        a += ["--run-dir", ctx.out("runs/nertz")]
    start = _value(a, "--init-from") or _config_value(a, "init_from")
    if start is not None and not (ROOT / start).exists():  # a policy an earlier README command trains
        needs.append(start)
        a = _set(a, "--init-from", ctx.out(start))
    a = _set(a, "--total-timesteps", str(TINY_STEPS))
    a = _set(a, "--n-steps", "16")
    a = _set(a, "--batch-size", "32")
    if _train_mode(a) == "vector":
        a = _set(a, "--num-tables", "2")
    else:
        a = _set(a, "--num-envs", "1")
    for flag in ("--checkpoint-every", "--eval-every"):
        a = _set(a, flag, str(TINY_STEPS))
    a = _set(a, "--eval-deals", "1")
    return Plan([*a, "--no-progress-bar"], makes=makes, needs=needs, timeout=600.0)


def _config_value(args: list[str], key: str) -> str | None:
    """``key`` of the ``--config`` TOML file that ``args`` name (None without one or without the key)."""
    from nertz_env.train.config import read_config_file

    path = _value(args, "--config")
    if path is None or not (ROOT / path).is_file():
        return None
    value = read_config_file(str(ROOT / path)).get(key)
    return None if value is None else str(value)


def rule_train_rllib(args: list[str], ctx: Ctx) -> Plan:
    makes: list[str] = []
    a = _map(args, ("--run-dir",), ctx, makes)
    if _value(a, "--run-dir") is None:
        a += ["--run-dir", ctx.out("runs/nertz")]
    # a cluster address is the user's cluster: here the run starts its own local Ray
    a = _drop(a, "--address")
    if _value(a, "--num-env-runners") is not None:
        a = _set(a, "--num-env-runners", "1")
    a = _set(a, "--total-timesteps", str(TINY_STEPS * 4))
    a = _set(a, "--n-steps", "16")
    a = _set(a, "--num-tables", "2")
    # within the tiny iteration (16 ticks x 2 tables x at least 1 learner): a larger one is refused
    a = _set(a, "--batch-size", "32")
    return Plan(a, makes=makes, timeout=600.0, requires=("ray",))


def _replay_fixture(ctx: Ctx) -> str:
    """A replay file for a README command that opens one the README made in a Python block."""
    folder = Path(ctx.out("_fixture_replays"))
    files = sorted(folder.glob("*.jsonl*"))
    if not files:
        pytest.importorskip("openskill", reason="needs the eval extra: pip install '.[eval]' (nertz-eval records the replay)")
        r = ctx.run(
            _program("nertz-eval"),
            ["round-robin", "heuristic", "random", "--players", "2", "--deals", "1", "--no-save",
             "--no-progress", "--replays", str(folder)],
        )
        assert r.returncode == 0, f"could not record a replay: {r.stderr[-2000:]}"
        files = sorted(folder.glob("*.jsonl*"))
    assert files, f"nertz-eval --replays wrote nothing in {folder}"
    return str(files[0])


def rule_replay(args: list[str], ctx: Ctx) -> Plan:
    makes: list[str] = []
    a = _map(args, ("-o", "--output", "--gif", "--mp4"), ctx, makes)
    if _value(a, "--gif") or _value(a, "--mp4"):
        a = _set(a, "--scale", "0.25")
    positional = [w for i, w in enumerate(a) if not w.startswith("-") and (i == 0 or not a[i - 1].startswith("-"))]
    if len(positional) != 1:
        raise CannotShrink(f"nertz-replay with inputs {positional}")
    src = positional[0]
    if (ROOT / src).exists():
        return Plan(a, makes=makes)
    parent = str(Path(src).parent)
    plan = Plan(a, makes=makes, needs=[parent] if parent != "." else [])
    plan.argv = [_ReplayInput(src) if w == src else w for w in a]  # type: ignore[misc]
    return plan


class _ReplayInput(str):
    """A replay path resolved when the command runs (after the commands it needs)."""


def rule_play(args: list[str], ctx: Ctx) -> Plan:
    makes: list[str] = []
    a = _map(args, ("--replay-dir",), ctx, makes)
    if _value(a, "--replay-dir") is None:
        a += ["--replay-dir", ctx.out("play_replays")]
    a = _set(a, "--port", "0")
    a = [*a, "--no-browser"] if "--no-browser" not in a else a
    return Plan(a, makes=makes, server=True, ready="the table is at http", timeout=300.0, requires=("uvicorn",))


def rule_docs(args: list[str], ctx: Ctx) -> Plan:
    """Rewrites a page's generated blocks: run on a copy of the page, so the checkout stays as it is."""
    if len(args) != 1 or not args[0].endswith(".md") or not (ROOT / args[0]).is_file():
        raise CannotShrink(f"python -m nertz_env.docs {args}")
    copy = Path(ctx.out(f"docs_copy/{args[0]}"))
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / args[0], copy)
    return Plan([str(copy)], timeout=120.0)


def rule_imitate(args: list[str], ctx: Ctx) -> Plan:
    makes: list[str] = []
    a = _map(args, ("--out", "--checkpoint-dir"), ctx, makes)
    if _value(a, "--out") is None:
        a += ["--out", ctx.out("imitate/policy.zip")]
    for flag, tiny in (("--samples", "64"), ("--epochs", "1"), ("--batch-size", "32"), ("--dagger-samples", "32"),
                       ("--dagger-epochs", "1"), ("--dagger-rounds", "1")):
        a = _set(a, flag, tiny, add=flag in ("--samples", "--epochs", "--batch-size"))
    return Plan(a, makes=makes, timeout=600.0)


def rule_evaluate(args: list[str], ctx: Ctx) -> Plan:
    switches = ("--stochastic", "--no-start")  # the flags of evaluate.py that take no value
    positional = [
        w for i, w in enumerate(args) if not w.startswith("-") and (i == 0 or args[i - 1] in switches
                                                                   or not args[i - 1].startswith("-"))
    ]
    needs = [p for p in positional if not (ROOT / p).exists()]
    a = [ctx.out(w) if w in needs else w for w in args]
    if _value(a, "--workers") is not None:
        a = _set(a, "--workers", "1")
    return Plan(_set(a, "--deals", "1"), needs=needs, timeout=600.0)


def rule_distill(args: list[str], ctx: Ctx) -> Plan:
    """A distillation of one tiny round (``--resume``: one round more, from the run an earlier command made)."""
    resume = _value(args, "--resume")
    if resume is not None:
        return Plan(_set(_set(args, "--resume", ctx.out(resume)), "--rounds", "2"), needs=[resume], timeout=600.0)
    makes: list[str] = []
    a = _map(args, ("--run-dir",), ctx, makes)
    for flag, tiny in (("--rounds", "1"), ("--samples", "64"), ("--epochs", "1"), ("--batch-size", "32")):
        a = _set(a, flag, tiny)
    return Plan(a, makes=makes, timeout=600.0)


def rule_distill_curve(args: list[str], ctx: Ctx) -> Plan:
    """The curve of a distillation run an earlier command made, one deal a point, every saved round."""
    needs = [w for i, w in enumerate(args) if not w.startswith("-") and (i == 0 or not args[i - 1].startswith("-"))]
    a = [ctx.out(w) if w in needs else w for w in args]
    a = _map(_drop(a, "--rounds"), ("--out",), ctx, [])
    a = _set(_set(a, "--deals", "1"), "--workers", "1")
    return Plan(a, needs=needs, timeout=600.0, restore=BENCH_RESULTS)


def rule_plot(args: list[str], ctx: Ctx) -> Plan:
    """The learning curve of a run an earlier command trains (``runs/...``), drawn into that run's folder."""
    needs = [w for i, w in enumerate(args) if not w.startswith("-") and (i == 0 or not args[i - 1].startswith("-"))]
    a = [ctx.out(w) if w in needs else w for w in args]
    a = _map(a, ("--out",), ctx, [])
    return Plan(a, needs=needs, timeout=300.0)


def rule_expert(args: list[str], ctx: Ctx) -> Plan:
    makes: list[str] = []
    a = _map(args, ("--out", "--checkpoint-dir"), ctx, makes)
    ckpt = _value(args, "--checkpoint-dir")
    if ckpt is not None and str(Path(ckpt).parent) != ".":  # the run folder experiments/expert_curve.py reads
        makes.append(str(Path(ckpt).parent))
    for flag, tiny in (("--samples", "64"), ("--iterations", "1"), ("--epochs", "1"), ("--batch-size", "32"),
                       ("--teacher-threads", "1")):
        a = _set(a, flag, tiny)
    return Plan(_set(a, "--planner", "rollouts=2"), makes=makes, timeout=600.0)


def rule_expert_curve(args: list[str], ctx: Ctx) -> Plan:
    """The curve of a run a README command trains (``runs/...``), one deal a point."""
    needs = [w for i, w in enumerate(args) if not w.startswith("-") and (i == 0 or not args[i - 1].startswith("-"))]
    a = [ctx.out(w) if w in needs else w for w in args]
    a = _map(a, ("--out",), ctx, [])
    a = _set(_set(a, "--deals", "1"), "--workers", "1")
    return Plan(a, needs=needs, timeout=600.0, restore=BENCH_RESULTS)


BENCH_RESULTS = ("bench/results", "bench/out")


def bench(*shrink: tuple[str, str], requires: tuple[str, ...] = ()) -> Callable[[list[str], Ctx], Plan]:
    def rule(args: list[str], ctx: Ctx) -> Plan:
        a = list(args)
        for flag, tiny in shrink:
            if tiny:
                a = _set(a, flag, tiny)
            elif flag not in a:  # a switch
                a.append(flag)
        return Plan(a, timeout=600.0, requires=requires, restore=BENCH_RESULTS)

    return rule


def rule_bench_compile(args: list[str], ctx: Ctx) -> Plan:
    a = list(args)
    for i, w in enumerate(a):  # `--checkout OTHER`: another checkout to compare; here this one against itself
        if i and a[i - 1] == "--checkout" and not Path(w).is_dir():
            a[i] = str(ROOT)
    if _value(a, "--throughput") is not None:
        a = _set(_set(a, "--throughput", "0.2"), "--tables", "64")
    a = _set(a, "--repeats", "1")
    return Plan([*a, "--no-save"], timeout=900.0, restore=BENCH_RESULTS)


def rule_mutate(args: list[str], ctx: Ctx) -> Plan:
    if args:
        raise CannotShrink(f"bench/mutate.py {args}")
    listed = ctx.run([sys.executable, str(ROOT / "bench/mutate.py")], ["--list"], timeout=120.0)
    assert listed.returncode == 0, listed.stderr
    first = listed.stdout.split()[0]
    # the first mutant against the test meant to kill it (the whole rules subset takes about a minute a mutant)
    m = re.search(r"meant to be killed by (\S+)", listed.stdout)
    tests = ["--tests", f"tests/{m.group(1)}"] if m else []
    return Plan(["--only", first, *tests, "--out", ctx.out("mutation.txt")], timeout=600.0, restore=BENCH_RESULTS)


# program -> (shrink rule, slow). A program is a console script, "python -m MODULE" or "python bench/X.py".
RULES: dict[str, tuple[Callable[[list[str], Ctx], Plan], bool]] = {
    "nertz-demo": (rule_demo, False),
    "nertz-eval": (rule_eval, False),
    "nertz-train": (rule_train, True),
    "nertz-replay": (rule_replay, False),
    "nertz-play": (rule_play, False),
    "python -m nertz_env.docs": (rule_docs, False),
    "python -m nertz_env.train.imitate": (rule_imitate, True),
    "python -m nertz_env.train.evaluate": (rule_evaluate, True),
    "python -m nertz_env.train.plot": (rule_plot, True),
    "python -m nertz_env.train.distill": (rule_distill, True),
    "python experiments/distill_curve.py": (rule_distill_curve, True),
    "python -m nertz_env.train.expert": (rule_expert, True),
    "python experiments/expert_curve.py": (rule_expert_curve, True),
    "python bench/bench_expert.py": (bench(("--games", "1")), True),
    # --skip-agents: its 1,000-game tournament has no size flag here (bench_agents.py --games has one)
    "python bench/run_all.py": (bench(("--seconds", "0.1"), ("--skip-agents", "")), True),
    "python bench/bench_env.py": (bench(("--seconds", "0.2"), ("--skip-compile", ""), ("--pairs", "1")), True),
    "python bench/bench_vector.py": (bench(("--seconds", "0.2")), True),
    "python bench/bench_agents.py": (
        bench(("--games", "8"), ("--env-seconds", "0.2"), ("--decision-games", "2"), ("--env-tables", "4")), True
    ),
    "python bench/bench_workers.py": (bench(("--deals", "2"), ("--before-deals", "2")), True),
    "python bench/bench_render.py": (bench(("--seconds", "0.2"), ("--deals", "1")), True),
    "python bench/bench_replay_memory.py": (bench(("--lines", "2000")), True),
    "python bench/bench_train.py": (bench(("--rollouts", "1"), ("--pairs", "1"), ("--threads", "1")), True),
    "python bench/bench_sb3_example.py": (bench(("--timesteps", "64")), True),
    "python bench/bench_compile.py": (rule_bench_compile, True),
    "python bench/bench_rllib.py": (
        bench(("--tables", "2"), ("--n-steps", "8"), ("--minibatch", "64"), ("--epochs", "1"),
              ("--iterations", "1"), requires=("ray",)),
        True,
    ),
    "python bench/mutate.py": (rule_mutate, True),
}


def program_of(argv: list[str]) -> tuple[str, list[str]]:
    if argv[:2] == ["python", "-m"] and len(argv) > 2:
        return f"python -m {argv[2]}", argv[3:]
    if argv[:1] == ["python"] and len(argv) > 1 and argv[1].startswith(("bench/", "experiments/")):
        return f"python {argv[1]}", argv[2:]
    return argv[0], argv[1:]


def _scripts() -> dict[str, str]:
    """[project.scripts] of pyproject.toml: console script -> the module whose main runs it. A script that
    goes through ``nertz_env.commands`` (which only wraps the main to name a missing extra) runs its target
    module, as ``python -m`` of ``nertz_env.commands`` itself would run nothing."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    scripts = dict(re.findall(r'^([\w-]+)\s*=\s*"([\w.]+):\w+"', section, re.M))
    if "nertz_env.commands" in scripts.values():
        from nertz_env.commands import COMMANDS

        for name, module in scripts.items():
            if module == "nertz_env.commands" and name in COMMANDS:
                scripts[name] = COMMANDS[name][0].partition(":")[0]
    return scripts


def _installed_is_checkout() -> bool:
    """True when the installed nertz_env is byte for byte this checkout's Python code."""
    try:
        dist = importlib.metadata.distribution("nertz-env")
    except importlib.metadata.PackageNotFoundError:
        return False
    folders = {"agents": "agents", "train": "train", "eval": "eval"}
    installed = {}
    for f in dist.files or []:
        parts = Path(str(f)).parts
        if parts[0] != "nertz_env" or not str(f).endswith(".py"):
            continue
        rel = Path(folders[parts[1]], *parts[2:]) if len(parts) > 2 and parts[1] in folders else Path(*parts)
        installed[rel] = Path(str(dist.locate_file(f)))
    checkout = {p.relative_to(ROOT) for d in ("nertz_env", *folders) for p in (ROOT / d).rglob("*.py")}
    if set(installed) != checkout:
        return False
    return all(path.read_bytes() == (ROOT / rel).read_bytes() for rel, path in installed.items())


_USE_SCRIPTS: bool | None = None


def _program(name: str) -> list[str]:
    global _USE_SCRIPTS
    if name.startswith("python "):
        return [sys.executable, *name.split()[1:]]
    if _USE_SCRIPTS is None:
        _USE_SCRIPTS = _installed_is_checkout()
    script = BIN / name
    if _USE_SCRIPTS and script.exists():
        return [str(script)]
    module = _scripts().get(name)
    if module is None:
        pytest.fail(f"README.md runs {name}, which is not a console script of pyproject.toml")
    return [sys.executable, "-m", module]


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)  # NUMBA_CACHE_DIR and the rest inherited
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.setdefault("MPLBACKEND", "Agg")
    env["PYTHONUNBUFFERED"] = "1"
    env["CI"] = env.get("CI", "true")  # no progress bars, no prompts
    return env


def _snapshot(folders: tuple[str, ...]) -> dict[Path, bytes]:
    return {p: p.read_bytes() for d in folders if (ROOT / d).is_dir() for p in (ROOT / d).rglob("*") if p.is_file()}


def _put_back(saved: dict[Path, bytes], folders: tuple[str, ...]) -> None:
    for d in folders:
        if (ROOT / d).is_dir():
            for p in (ROOT / d).rglob("*"):
                if p.is_file() and p not in saved:
                    p.unlink()
    for p, data in saved.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        if not p.exists() or p.read_bytes() != data:
            p.write_bytes(data)


def all_commands() -> list[Command]:
    """The commands of README.md and the docs pages, each once (its first page wins)."""
    seen: dict[tuple[str, tuple[tuple[str, str], ...]], Command] = {}
    for page in doc_pages():
        for c in readme_commands(page.read_text()):
            c.page = page.relative_to(ROOT).as_posix()
            seen.setdefault((c.text, tuple(sorted(c.env.items()))), c)
    return list(seen.values())


COMMANDS = all_commands()
_DONE: dict[str, str | None] = {}  # command id -> None when it passed, else why it failed
_SHRUNK: dict[str, str] = {}  # the small command as run -> the id of the README command that ran it


def _skip_reason(cmd: Command) -> str | None:
    for prefix, why in RUN_BY_CI.items():
        if cmd.text.startswith(prefix):
            return why
    return None


def _execute(cmd: Command, ctx: Ctx) -> None:
    program, args = program_of(cmd.argv)
    if program not in RULES:
        pytest.fail(
            f"{cmd.where} shows `{cmd.text}`, and tests/test_readme.py has no rule for "
            f"{program!r}: add one to RULES (how to run it small, where its outputs go), or list it in RUN_BY_CI"
        )
    rule, _slow = RULES[program]
    if "--help" in args and cmd.expect_error is None:  # prints and exits: run as shown
        plan = Plan(list(args), timeout=180.0)
    elif cmd.expect_error is not None:  # bad input: run as shown, outputs moved out of the checkout
        plan = Plan(_map(args, ("--run-dir", "--out", "-o", "--replays", "--checkpoint-dir"), ctx, []), timeout=180.0)
    else:
        try:
            plan = rule(args, ctx)
        except CannotShrink as e:
            pytest.fail(
                f"{cmd.where} shows `{cmd.text}`: the rule for {program!r} cannot run {e} in a "
                "small form: extend its rule in tests/test_readme.py"
            )
    missing = [m for m in plan.requires if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"`{cmd.text}` needs {', '.join(missing)} (an optional extra), not installed here")
    for need in plan.needs:
        # (the text test first: a rule may do work, e.g. train the zip a Python block makes)
        makers = [c for c in COMMANDS if c is not cmd and need in c.text and need in _makes(c, ctx)]
        if not makers:
            pytest.fail(f"{cmd.where}: `{cmd.text}` reads {need}, which no command of the README or docs makes")
        if makers[0].id not in _DONE:
            _execute(makers[0], ctx)
        assert _DONE[makers[0].id] is None, f"`{makers[0].text}`, which `{cmd.text}` needs, failed"
    argv = [_resolve(w, ctx) for w in plan.argv]
    full = _program(program) + argv
    key = shlex.join(full) + repr(sorted(cmd.env.items()))
    if key in _SHRUNK:  # e.g. `python bench/run_all.py` and `... --seconds 8`: the same small command
        _DONE[cmd.id] = _DONE.get(_SHRUNK[key])
        assert _DONE[cmd.id] is None, f"`{cmd.text}` runs small as an earlier command, which failed"
        return
    _SHRUNK[key] = cmd.id
    saved = _snapshot(plan.restore) if plan.restore else {}
    where = f"{cmd.where}: `{cmd.text}`\nran as: {shlex.join(full)}"
    try:
        if plan.server:
            _serve(full, cmd, plan, where)
        else:
            _run_once(full, cmd, plan, where)
    except BaseException as e:
        _DONE[cmd.id] = str(e)
        raise
    finally:
        if plan.restore:
            _put_back(saved, plan.restore)
    _DONE[cmd.id] = None


def _makes(cmd: Command, ctx: Ctx) -> list[str]:
    program, args = program_of(cmd.argv)
    if program not in RULES or cmd.expect_error is not None:
        return []
    try:
        return RULES[program][0](args, ctx).makes
    except (CannotShrink, AssertionError):
        return []


def _resolve(word: str, ctx: Ctx) -> str:
    if isinstance(word, _ReplayInput):
        mapped = Path(ctx.out(word))
        if mapped.exists():
            return str(mapped)
        if mapped.parent.is_dir():  # the README names one file of a folder a command filled
            files = sorted(mapped.parent.glob("*.jsonl*"))
            if files:
                return str(files[0])
        return _replay_fixture(ctx)
    return word


def _run_once(full: list[str], cmd: Command, plan: Plan, where: str) -> None:
    try:
        r = subprocess.run(
            full, cwd=ROOT, env=_env(cmd.env), capture_output=True, text=True, timeout=plan.timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{where}\ndid not finish in {plan.timeout:.0f} s")
    tail = f"\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
    if cmd.expect_error is not None:
        assert r.returncode == 2, f"{where}\nexit {r.returncode}, the README shows a bad-input exit 2{tail}"
        lines = [s.strip() for s in r.stderr.strip().splitlines()]
        assert lines == [cmd.expect_error], (
            f"{where}\nthe README shows the one line\n  {cmd.expect_error}\nstderr was:\n  " + "\n  ".join(lines)
        )
        assert "Traceback" not in r.stderr + r.stdout
        return
    assert r.returncode == 0, f"{where}\nexit {r.returncode}{tail}"


def _serve(full: list[str], cmd: Command, plan: Plan, where: str) -> None:
    proc = subprocess.Popen(
        full, cwd=ROOT, env=_env(cmd.env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=restore_sigint,
    )
    seen: list[str] = []
    deadline = time.monotonic() + plan.timeout
    try:
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line:
                seen.append(line.rstrip())
                if plan.ready in line:
                    url = re.search(r"https?://\S+", line)
                    assert url, f"{where}\nits address line has no URL: {line!r}"
                    with urllib.request.urlopen(url.group(0), timeout=30) as page:
                        assert page.status == 200, f"{where}\n{url.group(0)} answered {page.status}"
                    return
                continue
            if proc.poll() is not None:
                err = proc.stderr.read() if proc.stderr else ""
                pytest.fail(f"{where}\nexited {proc.returncode} before serving\n" + "\n".join(seen) + "\n" + err)
            time.sleep(0.1)
        pytest.fail(f"{where}\nno line with {plan.ready!r} in {plan.timeout:.0f} s:\n" + "\n".join(seen))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # Ctrl-C, as a user stops it
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="session")
def readme_work(tmp_path_factory: pytest.TempPathFactory) -> Ctx:
    return Ctx(tmp_path_factory.mktemp("readme_commands"))


# The benchmark scripts whose shrunk runs still take 20-90 s each (two cold compiles, a Ray start, every
# competitor): marked ``long``, so the README's test command skips them and CI runs them in its "long tests"
# phase (pytest -m long --long), keeping the default suite near its 10-minute budget.
LONG = ("python bench/bench_compile.py", "python bench/run_all.py", "python bench/bench_agents.py", "python bench/bench_rllib.py")


def _param(cmd: Command) -> Any:
    program, _ = program_of(cmd.argv)
    slow = RULES.get(program, (None, False))[1]
    marks = [pytest.mark.slow] if slow else []
    if program in LONG:
        marks.append(pytest.mark.long)
    return pytest.param(cmd, id=cmd.id, marks=marks)


@pytest.mark.parametrize("cmd", [_param(c) for c in COMMANDS])
def test_readme_command_runs(cmd: Command, readme_work: Ctx) -> None:
    why = _skip_reason(cmd)
    if why:
        pytest.skip(f"run by CI: {why}")
    if cmd.id in _DONE:  # already run as a dependency of an earlier command
        assert _DONE[cmd.id] is None, _DONE[cmd.id]
        return
    _execute(cmd, readme_work)


def test_commands_are_found() -> None:
    """The finder sees the README's commands: every block kind and inline form it promises to."""
    sample = "\n".join(
        [
            "Run `nertz-eval ladder --deals 1200 --seed 0` or `NERTZ_NUM_THREADS=1|2 python bench/x.py --s 3`;",
            "`nertz-eval` alone is a name, `python -m nertz_env.train.plot` too, `python bench/run_all.py` runs.",
            "```bash",
            "nertz-train --run-dir runs/a \\",
            "    --total-timesteps 10   # a comment",
            "pip install .   # the env",
            "```",
            "```",
            "$ nertz-train --opponent search=1",
            "nertz-train: error: opponents has no effect",
            "```",
            "```python",
            "print('nertz-eval gauntlet x')",
            "```",
        ]
    )
    cmds = readme_commands(sample)
    assert [(c.text, c.env) for c in cmds] == [
        ("nertz-eval ladder --deals 1200 --seed 0", {}),
        ("python bench/x.py --s 3", {"NERTZ_NUM_THREADS": "1"}),
        ("python bench/x.py --s 3", {"NERTZ_NUM_THREADS": "2"}),
        ("python bench/run_all.py", {}),
        ("nertz-train --run-dir runs/a --total-timesteps 10", {}),
        ("pip install .", {}),
        ("nertz-train --opponent search=1", {}),
    ]
    assert cmds[-1].expect_error == "nertz-train: error: opponents has no effect"
    assert [c.line for c in cmds] == [1, 1, 1, 2, 4, 6, 9]


def test_every_readme_program_has_a_rule() -> None:
    """Fails fast (before any slow run) when the README shows a program nobody taught this test to shrink."""
    unknown = sorted(
        {program_of(c.argv)[0] for c in COMMANDS if not _skip_reason(c)} - set(RULES),
    )
    assert not unknown, f"README.md or docs/ run {unknown}: add a rule for each to RULES in tests/test_readme.py"
    assert len(COMMANDS) >= 8, [c.text for c in COMMANDS]
