"""Every example of README.md and the docs pages (not docs/experiments/ nor ``RUN_ELSEWHERE``) runs as a user copies
it, in a small form, page by page in one folder; docs/contributing.md "Code on a page is run by the tests" says how.
A ``$ cmd`` line shown with ``prog: error: ...`` must exit 2 with that one line; ``VAR=1|2 cmd`` runs once per value."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import runpy
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import warnings
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from conftest import loopback_only
from nertz_env.extras import EXTRAS
from procs import serve_and_fetch

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
BIN = Path(sys.executable).parent

# Pages whose examples run elsewhere (a Ray cluster, client libraries whose pins conflict with the dev extras).
RUN_ELSEWHERE = {
    "docs/clients/routes.md": "each library's route runs in tests/test_clients.py (and, for AgileRL, BenchMARL, "
    "pufferlib-core and RL Zoo 3, in their own venvs: tests/clients/, the isolated phase)",
    "docs/guides/cluster.md": "needs a Ray cluster: tests/test_cluster.py runs these commands on a simulated "
    "two-node cluster (the isolated phase)",
}

# Commands that contain one of these are not run here, and why.
NOT_RUN = {
    "bash .ci/setup": ".ci/run runs the README's setup lines exactly as written (and fails when they differ)",
    "pip install": "an install step: .ci/setup installs the checkout with its extras; tests/test_packaging.py "
    "checks the install commands",
    "python -m build": "tests/test_packaging.py builds the wheel and installs it on Python 3.10 and 3.13 (the isolated phase)",
    "export ": "sets a variable of the user's shell",
    "ray start": "starts a Ray head on the user's machine: tests/test_cluster.py runs a two-node cluster",
    "--address HEAD_IP": "joins the user's cluster: tests/test_cluster.py runs the cluster guide's commands",
}

# Words of the pages that stand for the user's own: the replay a game wrote, another checkout.
PLACEHOLDERS = {"FILE": "game.jsonl.gz", "OTHER": str(ROOT), "/work/wt/old": str(ROOT)}

# The shrink rules. Key: a program, or a longer start of a command (the longest that fits wins). Value: the extra
# it needs (skipped without it), and flags set small: replaced where the command gives them, else
# added (None adds a switch). A command with --help or --print-config runs as shown.
TRAIN = {"--total-timesteps": "64", "--n-steps": "16", "--batch-size": "32", "--num-tables": "2"}
SHRINK: dict[str, tuple[str | None, dict[str, str | None]]] = {
    "nertz-demo": ("eval", {"--deals": "2"}),
    "nertz-eval": ("eval", {"--deals": "2", "--workers": "1", "--no-progress": None}),
    "nertz-eval gauntlet runs/rllib": ("rllib", {"--deals": "2", "--no-progress": None}),
    "nertz-train": ("train", {**TRAIN, "--checkpoint-every": "64", "--eval-every": "64",
                                    "--eval-deals": "1", "--no-progress-bar": None}),
    "nertz-train --resume": ("train", {"--total-timesteps": "128", "--no-progress-bar": None}),
    "nertz-train --backend rllib": ("rllib", {**TRAIN, "--total-timesteps": "256", "--num-env-runners": "1"}),
    "nertz-replay": (None, {}),
    "nertz-replay game.jsonl.gz --gif": ("render", {"--scale": "0.25"}),
    "nertz-play": ("play", {"--port": "0", "--no-browser": None}),
    "python -m nertz_env.train.imitate": ("train", {
        "--samples": "64", "--epochs": "1", "--batch-size": "32", "--dagger-rounds": "1", "--dagger-samples": "32",
        "--dagger-epochs": "1"}),
    "python -m nertz_env.train.evaluate": ("train", {"--deals": "1", "--workers": "1"}),
    "python -m nertz_env.train.plot": ("eval", {}),
    "python -m nertz_env.train.distill": ("train", {
        "--rounds": "1", "--samples": "64", "--epochs": "1", "--batch-size": "32"}),
    "python -m nertz_env.train.distill --resume": ("train", {"--rounds": "2"}),
    "python -m nertz_env.train.expert": ("train", {
        "--samples": "64", "--iterations": "1", "--epochs": "1", "--batch-size": "32", "--teacher-threads": "1",
        "--planner": "rollouts=2"}),
    "python experiments/distill_curve.py": ("train", {"--deals": "1", "--workers": "1"}),
    "python experiments/expert_curve.py": ("train", {"--deals": "1", "--workers": "1"}),
    "python experiments/learning/recompute.py": (None, {}),
    "python bench/bench_expert.py": ("train", {"--games": "1"}),
    "python bench/run_all.py": (None, {"--seconds": "0.1", "--skip-agents": None}),
    "python bench/bench_env.py": (None, {"--seconds": "0.2", "--skip-compile": None, "--pairs": "1"}),
    "python bench/bench_vector.py": (None, {"--seconds": "0.2"}),
    "python bench/bench_agents.py": (None, {"--games": "8", "--env-seconds": "0.2", "--env-tables": "4",
                                         "--decision-games": "2"}),
    "python bench/bench_workers.py": ("eval", {"--deals": "2", "--before-deals": "2"}),
    "python bench/bench_render.py": ("render", {"--seconds": "0.2", "--deals": "1"}),
    "python bench/bench_replay_memory.py": (None, {"--lines": "2000"}),
    "python bench/bench_train.py": ("train", {"--rollouts": "1", "--pairs": "1", "--threads": "1"}),
    "python bench/bench_sb3_example.py": ("train", {"--timesteps": "64"}),
    "python bench/bench_compile.py": (None, {"--repeats": "1", "--throughput": "0.2", "--tables": "64",
                                            "--no-save": None}),
    # each route of the table once (a Ray start per row)
    "python bench/bench_rllib.py": ("rllib", {"--tables": "2", "--n-steps": "8", "--minibatch": "64", "--epochs": "1",
                                            "--iterations": "1", "--only": "sb3,single1,engine2,vector1"}),
    "python bench/mutate.py": (None, {"--only": "stack-same-colour", "--out": "mutation.txt", "--tests":
                                      "tests/test_rules.py::test_to_work__nertz_top_goes_on_one_rank_higher_of_the_other_colour_only"}),
}
SERVERS = {"nertz-play": "the table is at http"}  # runs until stopped: the line it prints when it serves
# CI's long phase: the benchmarks and lab scripts, RLlib, and the imitation commands (with the run that starts
# from imitation), 4-60 s each when small (cold compiles, torch and Ray starts); the quick suite runs the rest.
# A long command whose words all appear in another of the same program runs only as that one (bench_compile.py
# within --checkout OTHER --agents).
LONG = ("python bench/", "python experiments/", "nertz-train --backend rllib", "nertz-eval gauntlet runs/rllib",
        "python -m nertz_env.train.imitate", "python -m nertz_env.train.expert", "python -m nertz_env.train.distill",
        "nertz-train --config train/configs/selfplay_from_dagger.toml")


def doc_pages() -> list[Path]:
    """README.md, then the docs pages whose commands and examples are instructions."""
    pages = sorted(
        p for p in DOCS.rglob("*.md")
        if p.relative_to(DOCS).parts[0] not in ("_build", "experiments")
        and p.relative_to(ROOT).as_posix() not in RUN_ELSEWHERE
    ) if DOCS.is_dir() else []
    return [README, *pages]


@dataclass
class Command:
    text: str  # as the page shows it (continuations joined, comment dropped)
    argv: list[str]
    env: dict[str, str]
    page: str = "README.md"
    line: int = 0
    expect_error: str | None = None  # a bad-input example: exit 2 with this one line on stderr

    @property
    def where(self) -> str:
        return f"{self.page} line {self.line}"


def _commands(text: str, line: int, page: str, expect_error: str | None = None) -> list[Command]:
    words = shlex.split(text, comments=True)
    envs: list[dict[str, str]] = [{}]
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):  # VAR=1|2: one command for each value
        key, values = words.pop(0).split("=", 1)
        envs = [{**e, key: v} for e in envs for v in values.split("|")]
    return [Command(shlex.join(words), words, env, page, line, expect_error) for env in envs if words]


def find_commands(text: str, page: str = "README.md") -> list[Command]:
    lines, found, i = text.splitlines(), [], 0
    while i < len(lines):
        fence = re.match(r"^```(\S*)", lines[i])
        if fence:
            j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("```")), len(lines))
            body = lines[i + 1 : j]
            if fence.group(1) in ("bash", "sh", "shell"):
                k = 0
                while k < len(body):
                    start, joined = k, body[k]
                    while joined.rstrip().endswith("\\") and k + 1 < len(body):
                        k += 1
                        joined = joined.rstrip()[:-1] + " " + body[k].strip()
                    found += _commands(joined, i + 2 + start, page)
                    k += 1
            elif fence.group(1) in ("", "console", "text"):
                for k, row in enumerate(body):
                    if row.startswith("$ "):
                        shown = [s.strip() for s in body[k + 1 :]]
                        shown = shown[: next((n for n, s in enumerate(shown) if s.startswith("$ ")), len(shown))]
                        errors = [s for s in shown if re.match(r"^[\w./-]+: error: ", s)]
                        found += _commands(row[2:], i + 2 + k, page, errors[0] if errors else None)
            i = j + 1
            continue
        for span in re.findall(r"`([^`\n]+)`", lines[i]):
            with contextlib.suppress(ValueError):
                words = [w for w in shlex.split(span) if not re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", w)]
                plain = " ".join(words)
                nargs = len(words) - (3 if plain.startswith("python -m") else 1)
                if plain.startswith("python bench/") or (plain.startswith(("nertz-", "python -m nertz_env")) and nargs):
                    found += _commands(span, i + 1, page)
        i += 1
    return found


@dataclass
class Block:
    page: str
    line: int  # of the opening fence
    code: str
    replace: list[tuple[str, str]] = field(default_factory=list)
    requires: list[str] = field(default_factory=list)
    output: str | None = None  # the text block the page shows as its printed output

    def source(self) -> str:
        code = self.code
        for old, new in self.replace:
            if old not in code:
                raise AssertionError(f"{self.page} line {self.line}: `test: replace {old} -> ...` does not occur in the block")
            code = code.replace(old, new)
        return code


MARKER = re.compile(r"^<!--\s*test:\s*(.*?)\s*-->\s*$")


def page_blocks(text: str, page: str) -> list[Block]:
    lines = text.splitlines()
    blocks: list[Block] = []
    markers: list[str] = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            markers.append(m.group(1))
            i += 1
            continue
        fence = re.match(r"^```(\S*)", lines[i])  # a MyST directive (```{image}) is a fence too
        if not fence:
            if lines[i].strip():
                markers = []
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body = "\n".join(lines[i + 1 : j]) + "\n"
        lang = fence.group(1)
        if lang == "python":
            block = Block(page, i + 1, body)
            for mk in markers:
                kind, _, rest = mk.partition(" ")
                if kind == "replace":
                    for pair in rest.split(" ; "):
                        old, sep, new = pair.partition(" -> ")
                        if not sep:
                            raise AssertionError(f"{page} line {i}: `test: replace` needs OLD -> NEW, got {pair!r}")
                        block.replace.append((old.strip(), new.strip()))
                elif kind == "requires":
                    block.requires += rest.split()
                else:
                    raise AssertionError(f"{page} line {i}: unknown marker `test: {mk}` before a python block")
            blocks.append(block)
        elif markers == ["output"]:
            if not blocks or lang != "text":
                raise AssertionError(f"{page} line {i + 1}: `test: output` must precede a ```text block after a python block")
            blocks[-1].output = body
        elif markers:
            raise AssertionError(f"{page} line {i + 1}: a `test:` marker before a {lang or 'plain'} block")
        markers = []
        i = j + 1
    return blocks


def _matches(shown: str, printed: str) -> bool:
    """``printed`` equals ``shown``, where a shown line ``...`` matches any number of printed lines."""
    pattern = "".join(
        r"(?:.*\n)*?" if line.strip() == "..." else re.escape(line.rstrip()) + r"[ \t]*\n"
        for line in shown.splitlines()
    )
    return re.fullmatch(pattern, printed if printed.endswith("\n") else printed + "\n") is not None


def run_block(b: Block, namespace: dict[str, object]) -> str:
    """Runs a block in the namespace; returns what it printed (checked when the page shows its output)."""
    for module in b.requires:
        pytest.importorskip(module, reason=f"{b.page} line {b.line} needs {module} (an optional extra)")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(b.source(), f"{b.page}:{b.line}", "exec"), namespace)
    printed = out.getvalue()
    assert b.output is None or _matches(b.output, printed), (
        f"{b.page} line {b.line}: the page shows this output:\n{b.output}\nthe block printed:\n{printed}")
    return printed


def shrink_rule(cmd: Command) -> str | None:
    """The key of ``SHRINK`` for this command: the longest that starts it."""
    fits = [k for k in SHRINK if cmd.text == k or cmd.text.startswith(k + " ")]
    return max(fits, key=len) if fits else None


def shrunk(cmd: Command) -> list[str]:
    """The command's words with its flags made small (the program's words first, unchanged)."""
    words = list(cmd.argv)
    key = shrink_rule(cmd)
    if key is None or cmd.expect_error or {"--help", "--print-config"} & set(words):
        return words
    for flag, value in SHRINK[key][1].items():
        at = next((n for n, w in enumerate(words) if w == flag or w.startswith(flag + "=")), None)
        if at is None:
            words += [flag] if value is None else [flag, value]
        elif value is not None and words[at] == flag:
            words[at + 1] = value
        elif value is not None:
            words[at] = f"{flag}={value}"
    return words


def _long(cmd: Command) -> bool:
    return cmd.text.startswith(LONG)


def all_commands() -> list[Command]:
    """Every page's commands, each once: one that several pages show runs at its first place, as the last page
    has it; a long one whose words another long one of the program holds runs as that one."""
    chosen: dict[str, Command] = {}
    for page in doc_pages():
        here: dict[str, Command] = {}
        for c in find_commands(page.read_text(), page.relative_to(ROOT).as_posix()):
            here.setdefault(shlex.join(shrunk(c)) + repr(sorted(c.env.items())), c)
        for key, c in here.items():
            chosen.pop(key, None)
            chosen[key] = c
    cmds = list(chosen.values())
    words = {id(c): {PLACEHOLDERS.get(w, w) for w in shrunk(c)} for c in cmds}

    def covered(c: Command) -> bool:
        return _long(c) and any(_long(o) and o.argv[:2] == c.argv[:2] and o.env == c.env and words[id(c)] < words[id(o)]
                                for o in cmds)

    return [c for c in cmds if not covered(c)]


COMMANDS = all_commands()


def _not_run(cmd: Command) -> str | None:
    return next((why for part, why in NOT_RUN.items() if part in cmd.text), None)


def page_steps() -> dict[tuple[str, str], list[Command | Block]]:
    """Each page's blocks and commands in page order, a test each; long commands and benchmarks apart."""
    steps: dict[tuple[str, str], list[Command | Block]] = {}
    for c in COMMANDS:
        if not _not_run(c):
            group = ("long " + c.argv[1] if c.text.startswith("python bench/") else "long") if _long(c) else ""
            steps.setdefault((c.page, group), []).append(c)
    seen: set[str] = set()
    for page in doc_pages():
        rel = page.relative_to(ROOT).as_posix()
        for b in page_blocks(page.read_text(), rel):
            if not (b.code in seen or seen.add(b.code)):
                steps.setdefault((rel, ""), []).append(b)
    return {key: sorted(found, key=lambda step: step.line) for key, found in steps.items()}


PAGES = page_steps()


def test_every_command_has_a_shrink_rule() -> None:
    """Fails fast, before the slow runs, when a page shows a program this file cannot run small."""
    unknown = sorted({c.text for c in COMMANDS if not _not_run(c) and shrink_rule(c) is None})
    assert not unknown, f"add a SHRINK rule (or a NOT_RUN reason) for: {unknown}"
    assert len(COMMANDS) >= 40, [c.text for c in COMMANDS]
    assert {"README.md", "docs/guides/vector-envs.md"} <= {page for page, _ in PAGES}, "pages with Python blocks"


def _flag(words: list[str], flag: str) -> str | None:
    return next((words[n + 1] for n, w in enumerate(words[:-1]) if w == flag), None)


def test_no_two_training_runs_the_docs_show_share_a_run_folder() -> None:
    """Each folder a fresh ``nertz-train`` command of the pages trains into belongs to one command (it refuses another)."""
    from nertz_env.train.config import read_config_file

    owner: dict[str, Command] = {}
    for page in [*doc_pages(), *(ROOT / p for p in RUN_ELSEWHERE)]:
        for cmd in find_commands(page.read_text(), page.relative_to(ROOT).as_posix()):
            if cmd.argv[0] != "nertz-train" or cmd.expect_error or {"--resume", "--print-config", "--help"} & set(cmd.argv):
                continue
            config = _flag(cmd.argv, "--config")
            folder = _flag(cmd.argv, "--run-dir") or (config and (ROOT / config).is_file()
                                                       and read_config_file(str(ROOT / config)).get("run_dir"))
            first = owner.setdefault(os.path.normpath(folder or "runs/nertz"), cmd)
            assert first.text == cmd.text, f"{cmd.where} trains into {folder}, as {first.where} does"
    assert len(owner) >= 4


def _input(word: str, cmd: Command) -> str:
    """A file word: a placeholder's stand-in, a checkout file copied here, or a run's newest checkpoint."""
    word = PLACEHOLDERS.get(word, word)
    if word.startswith("-") or "." not in word or Path(word).is_absolute() or Path(word).exists():
        return word
    if (ROOT / word).is_file():
        Path(word).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / word, word)
    elif m := re.fullmatch(r"(.+/checkpoints)/step_\d+\.zip", word):
        saved = sorted(Path(m.group(1)).glob("step_*.zip"))
        assert saved, f"{cmd.where}: no checkpoint in {m.group(1)} (made by an earlier command of the page)"
        return str(saved[-1])
    return word


@pytest.fixture
def work(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """The user's folder for one page. A page running bench/ scripts (they write into the checkout) holds the
    bench lock, one at a time across xdist workers, and puts those folders back as they were."""
    params = request.node.callspec.params
    if not any(isinstance(c, Command) and "bench/" in c.text for c in PAGES[params["page"], params["group"]]):
        yield tmp_path
        return
    import fcntl  # (POSIX; imported here so that the module collects on Windows too)

    folders = [ROOT / "bench" / "results", ROOT / "bench" / "out"]
    with open(Path(tempfile.gettempdir()) / f"nertz-bench-{zlib.crc32(bytes(ROOT))}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        saved = {p: p.read_bytes() for d in folders if d.is_dir() for p in d.rglob("*") if p.is_file()}
        yield tmp_path
        for p in [p for d in folders if d.is_dir() for p in d.rglob("*") if p.is_file() and p not in saved]:
            p.unlink()
        for p, data in saved.items():
            if not p.is_file() or p.read_bytes() != data:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)


def _here(words: list[str], env: dict[str, str], capfd: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Runs a console script (by its entry point) or a ``python -m`` module here as in a process of its own;
    puts back what a command may set for its process, and fails when it leaves a signal handler behind."""
    torch = sys.modules.get("torch")
    threads, handlers = torch and torch.get_num_threads(), logging.getLogger().handlers[:]
    signals = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    saved, argv = dict(os.environ), sys.argv
    os.environ.update(env)
    sys.argv = [words[2] if words[0] == "python" else words[0], *words[3 if words[0] == "python" else 1 :]]
    capfd.readouterr()
    try:
        with warnings.catch_warnings():
            # an earlier command imported the module: python -m runs a fresh copy of it, as here
            warnings.filterwarnings("ignore", "'.*' found in sys.modules", RuntimeWarning)
            if words[0] == "python":
                runpy.run_module(words[2], run_name="__main__", alter_sys=True)
                code: object = 0
            else:
                (script,) = entry_points(group="console_scripts", name=words[0])
                code = script.load()()
    except SystemExit as e:
        code = e.code
    finally:
        sys.argv = argv
        os.environ.clear()
        os.environ.update(saved)
        logging.getLogger().handlers[:] = handlers
        if torch is not None:
            torch.set_num_threads(threads)
    out, err = capfd.readouterr()
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == signals, f"{words[0]} left a signal handler"
    return (code if isinstance(code, int) else 0 if code is None else 1), out, err


@pytest.mark.skipif(sys.platform == "win32", reason="the pages' commands are POSIX shell lines: a venv's bin/, "
                    "servers stopped by SIGINT, a bench lock by fcntl")
@pytest.mark.parametrize("page,group", [
    pytest.param(page, group, id=f"{page} {group}".strip(), marks=[pytest.mark.slow, *[pytest.mark.long] * bool(group)])
    for page, group in PAGES
])
def test_page_examples_run(page: str, group: str, work: Path, capfd: pytest.CaptureFixture[str],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's steps in order in one folder; servers, Ray and the checkout's scripts in processes of their own."""
    monkeypatch.chdir(work)
    for var, value in (("PYTHONUNBUFFERED", "1"), ("CI", os.environ.get("CI", "true")), ("MPLBACKEND", "Agg")):
        monkeypatch.setenv(var, value)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for cmd in PAGES[page, group]:
        if isinstance(cmd, Block):
            printed = run_block(cmd, namespace)
            if page == "README.md":  # the quick start prints what its comments say
                score = re.search(r'print\(infos\["player_0"\]\["score"\]\)\s+# (-?\d+):', cmd.code)
                action = re.search(r"print\(nertz_env.describe_action\(\d+\)\)\s+# (.*)", cmd.code)
                assert score and action, "the quick start's checked comments changed: update this test"
                assert {score.group(1), action.group(1).strip()} <= set(printed.splitlines()), printed
            continue
        extra = SHRINK[shrink_rule(cmd) or ""][0]
        for module in EXTRAS.get(extra or "", ()):
            pytest.importorskip(module, reason=f"{cmd.where} needs the {extra} extra (the page's steps before it ran)")
        words = [_input(w, cmd) for w in shrunk(cmd)]
        where = f"{cmd.where}: `{cmd.text}`\nran as: {shlex.join(words)}"
        if extra == "rllib" or words[0] in SERVERS or (words[0] == "python" and words[1] != "-m"):
            argv = [sys.executable, str(ROOT / words[1]), *words[2:]] if words[0] == "python" else [str(BIN / words[0]), *words[1:]]
            with loopback_only() if extra == "rllib" else contextlib.nullcontext():  # Ray binds the machine's address
                if words[0] in SERVERS:
                    serve_and_fetch(argv, SERVERS[words[0]], where)
                    continue
                r = subprocess.run(argv, env={**os.environ, **cmd.env}, capture_output=True, text=True, timeout=900,
                                   stdin=subprocess.DEVNULL)
            code, out, err = r.returncode, r.stdout, r.stderr
        else:
            code, out, err = _here(words, cmd.env, capfd)
        tail = f"\nstdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}"
        if cmd.expect_error:
            assert code == 2, f"{where}\nexit {code}, the page shows a bad-input exit 2{tail}"
            assert err.strip().splitlines() == [cmd.expect_error], f"{where}\nthe page shows one line{tail}"
        else:
            assert code == 0, f"{where}\nexit {code}{tail}"
