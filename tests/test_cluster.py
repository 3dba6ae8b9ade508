"""``nertz-eval --address`` and ``nertz-train --address``: tournaments and training on a Ray cluster, a simulated
two-node one (``ray.cluster_utils.Cluster``) and one started as the cluster guide does (``ray start``, token
authentication), all on loopback only (``conftest.loopback_only``) and marked ``isolated``; bad addresses need none."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="needs the rllib extra (Ray): pip install '.[rllib]'")

import ray
from ray.cluster_utils import Cluster as RayCluster

import nertz_env.agents as agents
from conftest import loopback_only, restore_sigint
from nertz_env.agents import RandomAgent, register_loader, registry
from nertz_env.eval.cli import main as eval_main
from nertz_env.eval.cluster import Cluster, ClusterFailure, _pack, localize, materialize, ship
from nertz_env.train.cli import main as train_main
from test_eval import _fails

NERTZ_EVAL = os.path.join(os.path.dirname(sys.executable), "nertz-eval")


# ---------------------------------------------------------------------------------- no cluster needed
@pytest.mark.rllib
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--address", "nohost"], "--address takes host:port of a Ray head node (or auto), got 'nohost'"),
        (["--address", "127.0.0.1:99999"], "--address takes host:port"),
        (["--address", "127.0.0.1:1"], "no Ray cluster at 127.0.0.1:1"),
        (["--workers", "2", "--address", "127.0.0.1:1"], "--workers 2 has no effect with --address"),
    ],
)
def test_bad_or_unreachable_address__one_line_exit_2(loopback, flags: list[str], message: str, capsys, tmp_path) -> None:
    _fails(["gauntlet", "heuristic", "random", "--deals", "2", *flags], message, capsys, tmp_path)


@pytest.mark.rllib
def test_a_port_that_is_not_ray__one_line_exit_2(loopback, capsys, tmp_path) -> None:
    # a server that accepts and closes: something answers, but not Ray
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), socketserver.BaseRequestHandler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.server_address[1]
        try:
            t0 = time.monotonic()
            address = f"127.0.0.1:{port}"
            said = f"could not join a Ray cluster at {address}: something answers there, but not a Ray head"
            argv = ["gauntlet", "heuristic", "random", "--deals", "2", "--address", address]
            _fails(argv, said, capsys, tmp_path)
            assert time.monotonic() - t0 < 120
        finally:
            server.shutdown()


class _FakeRay:
    """Enough of ``ray`` for ``Cluster.play``: two CPUs, a deal a task, a head gone after the first deal."""

    class _Error(Exception):
        pass

    class _TaskError(_Error):
        pass

    exceptions = type("exceptions", (), {"RayError": _Error, "RayTaskError": _TaskError})

    def __init__(self) -> None:
        self.waits = 0
        self.cancelled: list[int] = []
        self.refs = 0

    def nodes(self) -> list[dict[str, Any]]:
        return [{"Alive": True, "Resources": {"CPU": 2.0}}]

    def remote(self, fn: Any) -> Any:
        fake = self

        class Task:
            def options(self, **_: Any) -> Any:
                return self

            def remote(self, job: Any, deals: list[int]) -> tuple[int, tuple[int, ...]]:
                fake.refs += 1
                return (fake.refs, tuple(deals))

        return Task()

    def wait(self, refs: list[Any], num_returns: int, timeout: float) -> tuple[list[Any], list[Any]]:
        self.waits += 1
        if self.waits > 1:
            raise ConnectionError("the GCS at 10.0.0.1:6379 is gone")
        return refs[:1], refs[1:]

    def get(self, ref: tuple[int, tuple[int, ...]]) -> list[tuple[int, list[str], dict[str, bytes]]]:
        return [(d, [f"game of deal {d}"], {}) for d in ref[1]]

    def cancel(self, ref: tuple[int, tuple[int, ...]]) -> None:
        self.cancelled.append(ref[0])

    def shutdown(self) -> None:
        raise ConnectionError("already gone")


def test_a_cluster_that_fails_mid_run_keeps_the_finished_deals(caplog: pytest.LogCaptureFixture) -> None:
    # a Ray call raising when the head went away ends the run as a ClusterFailure with the deals kept, and
    # leaving the dead cluster does not raise over the save's exit code
    ray = _FakeRay()
    cluster = Cluster(ray, "10.0.0.1:6379", job_ref=None, replays=None)
    done: dict[int, list[Any]] = {}

    class Bar:
        def update(self, k: int) -> None:
            pass

    with pytest.raises(ClusterFailure, match=r"the Ray cluster at 10\.0\.0\.1:6379 failed: the GCS at"):
        cluster.play(12, done, Bar())
    assert list(done) == [0] and done[0] == ["game of deal 0"]
    cluster.close()  # cancels what was in flight, and the failed shutdown is a logged line, not an exception
    assert sorted(ray.cancelled) == [2, 3, 4, 5]  # the tasks in flight when the head went
    assert "leaving the Ray cluster at 10.0.0.1:6379 failed" in caplog.text


def test_spec_paths_are_shipped_and_localized(tmp_path) -> None:
    ckpt = tmp_path / "run" / "final"
    (ckpt / "sub").mkdir(parents=True)
    (ckpt / "nertz_meta.json").write_text("{}")
    (ckpt / "sub" / "w.bin").write_bytes(b"\x00\x01")
    zipf = tmp_path / "p.zip"
    zipf.write_bytes(b"zip")
    store: dict[int, bytes] = {}

    def put(data: bytes) -> int:
        store[len(store)] = data
        return len(store) - 1

    specs = [f"{ckpt}:deterministic=true", f"expert:policy={zipf},margin=0.5", "heuristic", f"{ckpt}"]
    shipped = ship(specs, put)
    assert sorted(shipped) == sorted([str(ckpt), str(zipf)]) and len(store) == 2
    assert _pack(str(ckpt)) == _pack(str(ckpt))  # the same bytes, so the same digest on every run
    local = {p: materialize(s, store.__getitem__) for p, s in shipped.items()}
    assert (Path(local[str(ckpt)]) / "sub" / "w.bin").read_bytes() == b"\x00\x01"
    assert Path(local[str(zipf)]).read_bytes() == b"zip"
    assert localize(specs[0], local) == f"{local[str(ckpt)]}:deterministic=true"
    assert localize(specs[1], local) == f"expert:policy={local[str(zipf)]},margin=0.5"
    assert localize("heuristic", local) == "heuristic"


@pytest.fixture(scope="module")
def loopback():
    """The rest of the module, and every process it starts, in a network namespace of loopback only."""
    with loopback_only():
        yield


# ------------------------------------------------------------ nertz-train --address on a simulated two-node cluster
@pytest.mark.isolated
@pytest.mark.rllib
def test_two_node_cluster_train_then_gauntlet(two_nodes, tmp_path, capsys) -> None:
    """nertz-train --address joins it, env runners on both nodes, then nertz-eval plays the result."""
    pytest.importorskip("ray.rllib", reason="needs the rllib extra: pip install '.[rllib]'")
    run_dir = tmp_path / "run"
    try:
        code = train_main([*TRAIN[1:], "--address", two_nodes, "--num-env-runners", "2", "--total-timesteps", "256",
                           "--run-dir", str(run_dir)])
    finally:
        ray.shutdown()
    out = capsys.readouterr().out
    assert code == 0, out
    assert "2 env runner(s) on 2 node(s)" in out
    assert "Ray: 2 CPUs, 2 node(s)" in out
    final = run_dir / "final"
    # self-play trained on RLlib's single-agent route (module default_policy), and its steps were counted (the
    # run stopped at its budget)
    assert json.loads((final / "nertz_meta.json").read_text())["learner_module"].endswith("default_policy")
    code = eval_main(
        ["gauntlet", str(final), "heuristic", "--players", "2", "--deals", "1", "--rule", "max_ticks=60",
         "--workers", "1", "--no-save", "--no-progress"]
    )
    out = capsys.readouterr().out
    assert code == 0 and str(final) in out and "heuristic" in out


# ---------------------------------------------------------------------------------- a two-node cluster
@pytest.fixture(scope="module")
def two_nodes(loopback):
    ray.shutdown()
    here = os.getcwd()
    # the nodes' workers start in the folder the cluster was started from, and put it first on their path: from
    # the checkout they would import its nertz_env/ instead of the installed package (nertz-eval refuses that)
    os.chdir(tempfile.mkdtemp(prefix="nertz-cluster-test-"))
    try:
        cluster = RayCluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    finally:
        os.chdir(here)
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        # Ray binds the machine's network address by default: in this namespace it has only 127.0.0.1
        assert {node.node_ip_address for node in cluster.list_all_nodes()} == {"127.0.0.1"}
        assert cluster.address.startswith("127.0.0.1:") and [n for _, n in socket.if_nameindex()] == ["lo"]
        ray.shutdown()  # Cluster connected this process: nertz-eval joins it on its own
        CLUSTERS[cluster.address] = cluster
        yield cluster.address
    finally:
        ray.shutdown()
        cluster.shutdown()


CLUSTERS: dict[str, Any] = {}  # address -> the Cluster of the fixture (for adding and removing nodes)


def _eval(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [NERTZ_EVAL, *argv, "--no-progress", "--no-plots"], capture_output=True, text=True, timeout=900, cwd=cwd,
        env=env,
    )


def _games(path: Path) -> list[list[str]]:
    with open(path / "games.csv", newline="") as f:
        return list(csv.reader(f))


def _local_games(argv: list[str], tmp_path: Path) -> list[list[str]]:
    """games.csv of ``nertz-eval ARGV`` played here in one worker: a cluster run equals it row for row."""
    local = _eval([*argv, "--workers", "1", "--out", str(tmp_path / "local")], tmp_path)
    assert local.returncode == 0, local.stderr
    return _games(tmp_path / "local")


GAUNTLET = ["gauntlet", "CKPT", "heuristic", "greedy", "--deals", "6", "--seed", "3"]


@pytest.mark.isolated
def test_cluster_gauntlet_equals_the_local_run(two_nodes, tmp_path) -> None:
    """A checkpoint (shipped in the object store) against two opponents: games.csv is the local run's."""
    ckpt = tmp_path / "ckpt" / "candidate.zip"
    ckpt.parent.mkdir()
    shutil.copy(os.path.join(os.path.dirname(agents.__file__), "models", "ppo.zip"), ckpt)
    argv = [str(ckpt) if a == "CKPT" else a for a in GAUNTLET]
    local = _local_games(argv, tmp_path)
    # from the folder pytest runs in (a checkout): the nodes still play the installed nertz-env
    remote = _eval([*argv, "--address", two_nodes, "--out", str(tmp_path / "cluster")], Path.cwd())
    assert remote.returncode == 0, remote.stderr
    assert "2 CPU(s) on 2 node(s)" in remote.stdout
    rows = _games(tmp_path / "cluster")
    assert len(rows) > 1 and rows == local


# Deals slow enough (about 0.3 s each, with `search` at the table) that a test polling for a running deal task
# sees one before the run ends (cheap agents' deals take about 20 ms: a whole run can end between two polls)
SLOW_DEALS = ["round-robin", "search", "greedy", "random", "--players", "3"]


def _task_pids(parent: int | None = None) -> list[int]:
    """Ray workers running a deal task now (``ray::play_deals``); with ``parent``, that raylet's only."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            busy = proc.name.isdigit() and (proc / "cmdline").read_bytes().startswith(b"ray::play_deals")
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) if busy and parent else parent
        except (OSError, ValueError, IndexError):  # a process that ended meanwhile
            continue
        if busy and ppid == parent:
            pids.append(int(proc.name))
    return pids


def _start_on_cluster(argv: list[str], address: str, tmp_path: Path, **popen: Any) -> subprocess.Popen:
    """``nertz-eval ARGV --address ADDRESS`` in the background, writing under ``tmp_path/cluster``."""
    return subprocess.Popen(
        [NERTZ_EVAL, *argv, "--address", address, "--out", str(tmp_path / "cluster"), "--no-progress",
         "--no-plots"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        **popen,
    )


@pytest.mark.isolated
def test_a_killed_worker_loses_no_deal_and_counts_none_twice(two_nodes, tmp_path) -> None:
    argv = [*SLOW_DEALS, "--deals", "24", "--seed", "5"]
    run = _start_on_cluster(argv, two_nodes, tmp_path)
    killed = None
    deadline = time.monotonic() + 600
    while run.poll() is None and killed is None and time.monotonic() < deadline:
        pids = _task_pids()
        if pids:
            time.sleep(0.1)  # mid-deal (a deal takes about 0.3 s)
            try:
                os.kill(pids[0], signal.SIGKILL)
                killed = pids[0]
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    out, err = run.communicate(timeout=900)
    assert killed is not None, "no deal task was seen running; nothing was killed"
    assert run.returncode == 0, err
    assert _games(tmp_path / "cluster") == _local_games(argv, tmp_path)  # none lost, none twice, none changed
    assert "24 deals" in out


@pytest.mark.isolated
def test_an_agent_the_nodes_cannot_load__one_line_exit_2(two_nodes, tmp_path, capsys) -> None:
    """A loader registered in this process only: the driver builds the agent, no node can."""
    ckpt = tmp_path / "mine.nzagent"
    ckpt.write_text("weights")
    register_loader(".nzagent", lambda path, **params: RandomAgent())
    try:
        _fails(
            ["gauntlet", str(ckpt), "heuristic", "--players", "2", "--deals", "2", "--address", two_nodes],
            "of the Ray cluster cannot play this tournament: AgentSpecError: no loader for checkpoint",
            capsys,
            tmp_path,
        )
    finally:
        registry._LOADERS.pop(".nzagent", None)


@pytest.mark.isolated
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])  # kill: Ray's handler replaced
def test_ctrl_c_keeps_the_finished_deals(two_nodes, tmp_path, sig) -> None:
    # enough deals that the run is still going 3 s after its first task starts
    argv = ["round-robin", "heuristic", "greedy", "random", "--players", "3", "--deals", "5000", "--seed", "7"]
    run = _start_on_cluster(argv, two_nodes, tmp_path, preexec_fn=restore_sigint)
    deadline = time.monotonic() + 600
    while run.poll() is None and not _task_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(3.0)  # some deals finish
    run.send_signal(sig)
    _out, err = run.communicate(timeout=300)
    assert run.returncode == -signal.SIGINT, err  # the installed command ends as on Ctrl-C once it saved (SIGTERM too)
    assert "interrupted; kept" in err
    rows = _games(tmp_path / "cluster")
    deals = sorted({int(r[0]) for r in rows[1:]})
    assert 0 < len(deals) < 5000
    # the deals kept are whole and are the local run's deals of the same indices
    kept = set(map(str, deals))
    local = _local_games([*argv[:-3], str(max(deals) + 1), "--seed", "7"], tmp_path)
    want = [r for r in local if r[0] in {"deal", *kept}]
    assert rows == want


@pytest.mark.isolated
def test_a_node_lost_mid_run__its_deals_run_elsewhere(two_nodes, tmp_path) -> None:
    """A third node joins, takes deals, and is removed (its raylet and workers killed) while it plays one."""
    cluster = CLUSTERS[two_nodes]
    node = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    raylet = node.all_processes["raylet"][0].process.pid
    argv = [*SLOW_DEALS, "--deals", "30", "--seed", "11"]
    run = _start_on_cluster(argv, two_nodes, tmp_path)
    removed = False
    deadline = time.monotonic() + 600
    try:
        while run.poll() is None and time.monotonic() < deadline:
            if _task_pids(parent=raylet):
                cluster.remove_node(node, allow_graceful=False)
                removed = True
                break
            time.sleep(0.05)
        _out, err = run.communicate(timeout=900)
    finally:
        if not removed:
            cluster.remove_node(node)
    assert removed, "the third node never ran a deal task"
    assert run.returncode == 0, err
    assert _games(tmp_path / "cluster") == _local_games(argv, tmp_path)


# ---------------------------------------------------------------------- a cluster started by `ray start`
RAY = os.path.join(os.path.dirname(sys.executable), "ray")
NERTZ_TRAIN = os.path.join(os.path.dirname(sys.executable), "nertz-train")


@pytest.fixture(scope="module")
def ray_started(loopback, tmp_path_factory) -> Iterator[tuple[str, dict[str, str]]]:
    """A cluster as the cluster guide starts it: ``ray start --head`` with a Ray token and a worker given a
    copy, one CPU each, in a fresh ``RAY_TMPDIR``: the head's address and a driver's environment."""
    where = tmp_path_factory.mktemp("ray_start")
    tmp = tempfile.mkdtemp(prefix="nr-")  # short: Ray's socket paths live under it
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env = {**clean, "HOME": str(where / "head_home"), "RAY_TMPDIR": tmp}
    worker_env = {**env, "HOME": str(where / "worker_home"), "RAY_AUTH_MODE": "token"}
    subprocess.run([RAY, "get-auth-token", "--generate"], env=env, capture_output=True, check=True, timeout=120)
    (where / "worker_home" / ".ray").mkdir(parents=True)
    shutil.copy(where / "head_home" / ".ray" / "auth_token", where / "worker_home" / ".ray" / "auth_token")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"127.0.0.1:{port}"
    common = ["--num-cpus=1", "--disable-usage-stats", "--block"]
    nodes: list[subprocess.Popen] = []
    try:
        deadline = time.monotonic() + 300
        for name, cmd, node_env in [
            ("head", [RAY, "start", "--head", f"--port={port}", "--include-dashboard=false", *common], env),
            ("worker", [RAY, "start", f"--address={address}", *common], worker_env),
        ]:
            log = where / f"{name}.log"
            with open(log, "w") as out:  # the node keeps its own copy of the descriptor
                nodes.append(subprocess.Popen(cmd, cwd=where, env=node_env, stdout=out, stderr=subprocess.STDOUT,
                                              start_new_session=True))
            while "Ray runtime started" not in log.read_text():  # `ray start --block` says so once it runs
                assert nodes[-1].poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.5)
        # a bare ray.init(), as a user's script has it, joins this cluster (nertz-train without --address must not)
        probe = "import ray; ray.init(); print('NODES', sum(n['Alive'] for n in ray.nodes()))"
        seen = ""
        while "NODES 2" not in seen:
            assert time.monotonic() < deadline, f"the worker node never joined:\n{seen}"
            seen = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=where,
                                  env=env, timeout=300).stdout
        yield address, env
    finally:
        for node in nodes:  # `ray start --block` stops the processes it started
            os.killpg(node.pid, signal.SIGTERM)
        for node in nodes:
            try:
                node.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(node.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


def _refused(run: subprocess.CompletedProcess, message: str) -> None:
    """Exit 2, ``message`` in stderr's last line: the command's own (RLlib notes deprecations before)."""
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-3000:]
    lines = run.stderr.strip().splitlines()
    assert message in lines[-1] and "Traceback" not in run.stderr and "Ray cluster" not in "".join(lines[:-1]), run.stderr


NO_TOKEN = "it asks for a token, and this machine has none: copy the head's ~/.ray/auth_token to ~/.ray/auth_token here"
WRONG_TOKEN = "it refused this machine's Ray token: copy the head's ~/.ray/auth_token"
TRAIN = [NERTZ_TRAIN, "--backend", "rllib", "--num-players", "2", "--rule", "max_ticks=60", "--num-tables", "2",
         "--n-steps", "16", "--batch-size", "64", "--n-epochs", "1", "--net-arch", "16", "--checkpoint-every", "0",
         "--no-tensorboard"]


@pytest.mark.isolated
def test_a_ray_start_cluster__nertz_eval_joins_by_host_port_and_by_auto__as_the_local_run(ray_started, tmp_path) -> None:
    address, env = ray_started
    argv = ["gauntlet", "heuristic", "greedy", "--players", "3", "--deals", "12", "--seed", "4242"]
    local = _local_games(argv, tmp_path)
    for name, how in [("host_port", address), ("auto", "auto")]:
        run = _eval([*argv, "--address", how, "--out", str(tmp_path / name)], tmp_path, env)
        assert run.returncode == 0, f"--address {how}:\n{run.stderr[-3000:]}"
        assert "2 CPU(s) on 2 node(s)" in run.stdout, run.stdout
        assert _games(tmp_path / name) == local
    (tmp_path / "empty_home").mkdir()
    for driver, message in [({"HOME": str(tmp_path / "empty_home")}, NO_TOKEN),
                            ({"RAY_AUTH_TOKEN": "0" * 32}, WRONG_TOKEN)]:
        t0 = time.monotonic()
        run = _eval([*argv, "--address", address, "--out", str(tmp_path / "refused")], tmp_path, {**env, **driver})
        _refused(run, f"nertz-eval: error: could not join a Ray cluster at {address}: {message}")
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert time.monotonic() - t0 < 60  # not ray.init's retries
        assert not (tmp_path / "refused").exists()


@pytest.mark.isolated
def test_a_ray_start_cluster__nertz_train_joins_by_host_port(ray_started, tmp_path) -> None:
    pytest.importorskip("ray.rllib", reason="needs the rllib extra: pip install 'nertz-env[rllib]'")
    address, env = ray_started
    argv = [*TRAIN, "--total-timesteps", "128", "--num-env-runners", "2", "--address", address]
    (tmp_path / "empty_home").mkdir()
    refused = subprocess.run([*argv, "--run-dir", str(tmp_path / "refused")], capture_output=True, text=True,
                             cwd=tmp_path, timeout=900, stdin=subprocess.DEVNULL,
                             env={**env, "HOME": str(tmp_path / "empty_home")})
    _refused(refused, f"nertz-train: error: could not join Ray at {address}: {NO_TOKEN}")
    run = subprocess.run([*argv, "--run-dir", str(tmp_path / "run")], capture_output=True, text=True, cwd=tmp_path,
                         timeout=900, stdin=subprocess.DEVNULL, env=env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "(Ray: 2 CPUs, 2 node(s), 2 env runner(s))" in run.stdout, run.stdout
    assert "2 env runner(s) on 2 node(s)" in run.stdout, run.stdout
    assert (tmp_path / "run" / "final" / "nertz_meta.json").is_file()


@pytest.mark.isolated
def test_an_rllib_run_without_address_starts_a_ray_of_its_own_beside_a_running_cluster(ray_started, tmp_path) -> None:
    """Where a bare ``ray.init()`` joins a running cluster, an rllib run without --address starts its own."""
    pytest.importorskip("ray.rllib", reason="needs the rllib extra: pip install '.[rllib]'")
    run = subprocess.run([*TRAIN, "--total-timesteps", "64", "--run-dir", str(tmp_path / "run")], capture_output=True,
                         text=True, cwd=tmp_path, timeout=900, stdin=subprocess.DEVNULL, env=ray_started[1])
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    line = next(x for x in run.stdout.splitlines() if x.startswith("run dir:"))
    assert "1 node(s)" in line, line
    assert (tmp_path / "run" / "final" / "nertz_meta.json").is_file()
