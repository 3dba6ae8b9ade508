"""Tournaments on a Ray cluster: ``nertz-eval ... --address auto|HOST:PORT``.

Deals go out as Ray tasks; checkpoints travel through Ray's object store; one check task per node compares
its nertz-env with this machine's and builds every agent before the first deal. The records equal a local
run's. See docs/guides/cluster.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import io
import logging
import os
import shutil
import signal
import socket
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nertz_env
from nertz_env.agents import make_agent
from nertz_env.agents.registry import IncompatibleAgentError, check_agent
from nertz_env.config import NertzConfig
from nertz_env.eval.tournament import ClusterFailure, Player
from nertz_env.extras import install_command
from nertz_env.threads import limit_threads

#: retries of a deal task whose worker process or node died (Ray's own count; errors raised by the
#: game itself are not retried: they would fail again)
MAX_RETRIES = 5
#: seconds to wait for every node's check before giving up on the cluster
CHECK_TIMEOUT = 600.0


class ClusterError(Exception):
    """The cluster cannot play this tournament (bad or unreachable address, a node that cannot load an
    agent): one line for the user, raised before any deal is played."""


# ------------------------------------------------------------------------------------------ connecting
def check_address(address: str, timeout: float = 5.0) -> None:
    """Raise :class:`ClusterError` unless ``address`` is ``auto`` or a ``host:port`` (or ``ray://host:port``)
    where something answers."""
    if address == "auto":
        return
    text = address.split("://", 1)[-1]
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClusterError(f"--address takes host:port of a Ray head node (or auto), got {address!r}")
    try:
        conn = socket.create_connection((host, int(port)), timeout=timeout)
    except OSError as e:
        raise ClusterError(
            f"no Ray cluster at {address}: {e.strerror or e} (start one with: ray start --head)"
        ) from None
    # a Ray head's port is its GCS, a gRPC server: it answers HTTP/2's preface with a SETTINGS frame. Anything
    # else would leave ray.init retrying for minutes, so it is refused here in seconds.
    head = b""
    with conn, contextlib.suppress(OSError):
        conn.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        with conn.makefile("rb") as reply:
            head = reply.read(9)  # the first frame's header, or what came before the end
    if len(head) < 9 or head[3] != 0x04:
        raise ClusterError(
            f"could not join a Ray cluster at {address}: something answers there, but not a Ray head node "
            "(give the address ray start --head printed, e.g. 10.0.0.1:6379)"
        )


def authenticate(address: str, timeout: float = 10.0) -> None:
    """Send this machine's Ray token to the head at ``address`` if it asks for one, as ``ray.init`` does for
    ``auto`` only (docs/guides/cluster.md). Raises ``ConnectionError`` (one line) when the head refuses the
    token or this machine has none."""
    if address == "auto" or "://" in address:
        return  # auto: ray.init finds the address and the token; ray://: Ray Client, another port
    import grpc  # type: ignore[import-untyped]  # Ray's dependency, without types
    from ray._private.authentication import authentication_token_setup as auth
    from ray._private.grpc_utils import init_grpc_channel
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    def refused() -> bool:  # with the token under RAY_AUTH_MODE=token, else without
        channel = init_grpc_channel(address)
        try:
            stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
            stub.GetClusterId(gcs_service_pb2.GetClusterIdRequest(), timeout=timeout)
        except grpc.RpcError as e:
            return bool(e.code() == grpc.StatusCode.UNAUTHENTICATED)  # anything else: ray.init says it
        finally:
            channel.close()
        return False

    if not refused():
        return
    mode = os.environ.get(auth.AUTH_MODE_ENV_VAR)
    fix = "copy the head's ~/.ray/auth_token to ~/.ray/auth_token here, or set RAY_AUTH_TOKEN to it"
    if mode is None and auth.AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True):
        auth._enable_token_auth()  # what ray.init does for auto, without its note about starting a cluster
        mode = "token"
        if not refused():
            return
    if mode == "token":
        raise ConnectionError(f"it refused this machine's Ray token: {fix}")
    if mode is not None:
        raise ConnectionError(f"it asks for a token, and {auth.AUTH_MODE_ENV_VAR}={mode} here sends none: unset it")
    raise ConnectionError(f"it asks for a token, and this machine has none: {fix}")


def connect(address: str) -> Any:
    """Join the Ray cluster at ``address`` (``auto``: the one this machine belongs to). Returns the ``ray``
    module. Raises :class:`ClusterError` (one line) when Ray is missing or nothing answers."""
    check_address(address)
    try:
        import ray
    except ImportError:
        raise ClusterError(
            f"--address needs Ray on this machine and on every node: {install_command('rllib')}"
        ) from None
    if ray.is_initialized():
        ray.shutdown()
    # Ray puts the driver's current folder first on every worker's path unless the job has a working_dir:
    # run from a checkout of nertz-env, the nodes would import its nertz_env/ folder, not the installed
    # package. An empty working_dir (one small file) keeps the workers on what is installed.
    workdir = tempfile.mkdtemp(prefix="nertz-eval-job-")
    Path(workdir, "README").write_text("the working folder of a nertz-eval job, empty on purpose\n")
    sigterm = signal.getsignal(signal.SIGTERM)
    try:
        authenticate(address)
        ray.init(
            address=address,
            log_to_driver=False,
            logging_level=logging.ERROR,
            runtime_env={
                "working_dir": workdir,
                "env_vars": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
            },
        )
    except Exception as e:  # ConnectionError, RuntimeError, ValueError, a timeout: all say "no cluster here"
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ClusterError(f"could not join a Ray cluster at {address}: {first}") from None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)  # uploaded by ray.init
    if sigterm is not None and signal.getsignal(signal.SIGTERM) is not sigterm:
        signal.signal(signal.SIGTERM, sigterm)  # ray.init's exits at once: a kill keeps the finished deals, as Ctrl-C
    return ray


# ------------------------------------------------------------------------------------------ shipping files
@dataclass(frozen=True)
class Shipped:
    """A file or directory of this machine sent to the nodes through the object store."""

    path: str  # as the spec names it
    kind: str  # "file" or "dir"
    digest: str  # sha256 of the bytes shipped
    ref: list[Any]  # [ObjectRef]: nested, so Ray passes the reference and a node fetches it only once


def _spec_paths(spec: str) -> list[str]:
    """The paths of this machine a spec names: its head (a checkpoint) and parameter values that exist."""
    head, _, rest = spec.strip().partition(":")
    values = [part.partition("=")[2].strip() for part in rest.split(",") if "=" in part]
    return [path for path in dict.fromkeys([head, *values]) if path and os.path.exists(path)]


def _pack(path: str) -> tuple[str, bytes]:
    if os.path.isdir(path):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    full = os.path.join(root, name)
                    info = tar.gettarinfo(full, arcname=os.path.relpath(full, path))
                    info.mtime = 0
                    with open(full, "rb") as f:
                        tar.addfile(info, f)
        return "dir", buf.getvalue()
    return "file", Path(path).read_bytes()


def ship(specs: list[str], put: Callable[[bytes], Any]) -> dict[str, Shipped]:
    """Every path the specs name, packed and handed to ``put`` (``ray.put``) once."""
    shipped: dict[str, Shipped] = {}
    for path in dict.fromkeys(path for spec in specs for path in _spec_paths(spec)):
        kind, data = _pack(path)
        shipped[path] = Shipped(path, kind, hashlib.sha256(data).hexdigest()[:20], [put(data)])
    return shipped


def materialize(item: Shipped, get: Callable[[Any], bytes]) -> str:
    """The local copy of a shipped path (written once per node into a cache directory keyed by its digest)."""
    base = os.path.basename(os.path.normpath(item.path)) or "checkpoint"
    root = os.path.join(tempfile.gettempdir(), f"nertz-cluster-{os.getuid() if hasattr(os, 'getuid') else 0}")
    target = os.path.join(root, item.digest, base)
    if os.path.exists(target):
        return target
    data = get(item.ref[0])
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(target))
    staged = os.path.join(tmp, base)
    if item.kind == "dir":
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12: refuse links and paths out of the folder
                tar.extractall(staged, filter="data")
            else:  # pragma: no cover
                tar.extractall(staged)
    else:
        Path(staged).write_bytes(data)
    with contextlib.suppress(OSError):  # another worker of this node wrote it first: keep that one
        os.rename(staged, target)
    return target


def localize(spec: str, local: dict[str, str]) -> str:
    """``spec`` with every shipped path replaced by its local copy."""
    head, colon, rest = spec.strip().partition(":")
    head = local.get(head, head)
    parts = []
    for part in filter(None, rest.split(",")):
        key, sep, value = part.partition("=")
        parts.append(f"{key}={local.get(value.strip(), value.strip())}" if sep else part)
    return head + (":" + ",".join(parts) if colon else "")


# ------------------------------------------------------------------------------------------ on the nodes
#: nertz-env's packages, as pyproject.toml lists them
PACKAGES = (
    "nertz_env", "nertz_env.engine", "nertz_env.render", "nertz_env.replay", "nertz_env.cli", "nertz_env.agents",
    "nertz_env.train", "nertz_env.eval", "nertz_env.play",
)


def code_digest() -> tuple[str, str, str]:
    """(nertz-env's version, a digest of its sources, where it is): two nodes with equal digests play the
    same games. Each package's ``.py`` files are read where Python finds them, so an installed copy and a
    source checkout (``agents/`` beside ``nertz_env/``) of the same sources agree."""
    h = hashlib.sha256()
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            h.update(f"{name}: missing".encode())
            continue
        folder = next(iter(spec.submodule_search_locations))
        for file in sorted(os.listdir(folder)):
            if file.endswith(".py"):
                h.update(f"{name}/{file}".encode())
                h.update(Path(folder, file).read_bytes())
    root = os.path.dirname(os.path.abspath(nertz_env.__file__))
    return str(getattr(nertz_env, "__version__", "?")), h.hexdigest()[:16], root


_PLAYERS: dict[str, Any] = {}  # per worker process: the player of the tournament it plays (agents built once)


def _player(job: dict[str, Any]) -> Any:
    """This process's player of the tournament ``job`` (built on first use, kept for the next tasks)."""
    key = job["key"]
    if key in _PLAYERS:
        return _PLAYERS[key]
    limit_threads(1)
    import ray

    local = {path: materialize(item, ray.get) for path, item in job["shipped"].items()}
    plan = job["plan"]
    if plan.replays is not None:  # recorded here, sent back with the deal's results
        plan = dataclasses.replace(plan, replays=tempfile.mkdtemp(prefix="nertz-replays-"))
    player = Player(plan, lambda spec: make_agent(localize(spec, local)))
    _PLAYERS.clear()
    _PLAYERS[key] = player
    return player


def check_node(job: dict[str, Any]) -> tuple[str, str | None]:
    """On one node: (its address, None) when it can play every agent of the job, else (address, why)."""
    import ray

    where = ray.util.get_node_ip_address()
    version, digest, root = code_digest()
    if (version, digest) != tuple(job["code"][:2]):
        return where, (
            f"its nertz-env ({version} at {root}, sources {digest}) is not this machine's ({job['code'][0]}, "
            f"sources {job['code'][1]}): install the same nertz-env on every node"
        )
    config = NertzConfig.from_dict({k: v for k, v in job["plan"].env_kwargs if k != "illegal_action"})
    try:
        player = _player(job)
        for spec in dict.fromkeys(job["plan"].agents):
            check_agent(player.factory(spec), spec, config)  # a fresh agent: the player's stay unplayed
    except IncompatibleAgentError as e:
        return where, str(e)
    except Exception as e:
        text = (str(e).strip().splitlines() or [""])[0]
        _PLAYERS.pop(job["key"], None)
        return where, f"{type(e).__name__}: {text}" if text else type(e).__name__
    return where, None


def play_deals(job: dict[str, Any], deals: list[int]) -> list[tuple[int, list[Any], dict[str, bytes]]]:
    """On a node: play ``deals``; per deal its games and the bytes of its replay files (when recorded)."""
    player = _player(job)
    out = []
    for deal in deals:
        _, games = player.play_deal(deal)
        replays: dict[str, bytes] = {}
        folder = player.plan.replays
        if folder is not None:
            for path in sorted(Path(folder).glob(f"deal{deal:04d}_*")):
                replays[path.name] = path.read_bytes()
                path.unlink()
        out.append((deal, games, replays))
    return out


# ------------------------------------------------------------------------------------------ the driver
class Cluster:
    """A joined Ray cluster, ready to play one planned tournament (:func:`prepare`)."""

    def __init__(self, ray: Any, address: str, job_ref: Any, replays: str | None) -> None:
        self.ray = ray
        self.address = address
        self.job_ref = job_ref
        self.replays = replays
        self.cpus, self.nodes = self._size()
        self._pending: dict[Any, list[int]] = {}

    def _size(self) -> tuple[int, list[dict[str, Any]]]:
        nodes = [n for n in self.ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]
        return int(sum(n["Resources"]["CPU"] for n in nodes)), nodes

    def describe(self) -> str:
        return f"Ray cluster {self.address}: {self.cpus} CPU(s) on {len(self.nodes)} node(s)"

    def play(self, n: int, done: dict[int, list[Any]], bar: Any) -> None:
        """Play deals ``0 .. n-1`` on the cluster into ``done`` (deal -> games), updating ``bar`` per deal.
        Raises KeyboardInterrupt (Ctrl-C) or :class:`ClusterFailure` with the finished deals in ``done``."""
        ray = self.ray
        task = ray.remote(play_deals).options(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)
        chunk = max(1, min(4, n // (32 * max(1, self.cpus))))
        pending = self._pending  # left running on Ctrl-C or a failure: close() stops them, after the save
        next_deal = 0
        resized = time.monotonic()
        while len(done) < n:
            try:  # the cluster itself failing (the head gone): the finished deals are kept, as for a lost task
                if time.monotonic() - resized > 5.0:  # nodes that joined (or left) since the start
                    self.cpus, self.nodes = self._size()
                    resized = time.monotonic()
                while next_deal < n and len(pending) < 2 * max(1, self.cpus):
                    deals = list(range(next_deal, min(n, next_deal + chunk)))
                    next_deal += len(deals)
                    pending[task.remote(self.job_ref, deals)] = deals
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            except (ray.exceptions.RayError, ConnectionError) as e:
                first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                raise ClusterFailure(f"the Ray cluster at {self.address} failed: {first}") from None
            for ref in ready:
                deals = pending.pop(ref)
                try:
                    finished = ray.get(ref)
                except ray.exceptions.RayTaskError as e:  # the game itself failed: as locally, it raises
                    raise e.as_instanceof_cause() from None
                except ray.exceptions.RayError as e:
                    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                    raise ClusterFailure(
                        f"deal(s) {deals} failed on the cluster after {MAX_RETRIES} retries: {first}"
                    ) from None
                for deal, games, replays in finished:
                    for name, data in replays.items():  # empty unless the tournament records replays
                        Path(str(self.replays), name).write_bytes(data)
                    done[deal] = games
                    bar.update(1)

    def close(self) -> None:
        """Stop the deal tasks still in flight (after a Ctrl-C or a failure) and leave the cluster; call it after
        the finished deals are saved. The cancel is the gentle one: ``force=True`` could abort the driver on a
        reply already on its way, losing the finished deals."""
        for ref in self._pending:
            with contextlib.suppress(Exception):  # a task that just finished or whose node is gone: nothing to stop
                self.ray.cancel(ref)
        self._pending.clear()
        try:
            self.ray.shutdown()
        except Exception as e:  # a cluster already gone: the results are saved, the exit code is theirs
            logging.getLogger("nertz_env").warning(f"nertz-eval: leaving the Ray cluster at {self.address} failed: {type(e).__name__}: {e}")


def prepare(address: str, plan: Any) -> Cluster:
    """Join the cluster at ``address``, ship the tournament's checkpoints and check every node can play it.
    Raises :class:`ClusterError` (one line) for a bad or unreachable address, a cluster without CPUs, or a
    node that cannot play an agent (naming the node and why)."""
    ray = connect(address)
    try:
        shipped = ship(list(dict.fromkeys(plan.agents)), ray.put)
        key = hashlib.sha256(repr((plan, sorted((p, s.digest) for p, s in shipped.items()))).encode()).hexdigest()
        job = {"key": key[:20], "plan": plan, "shipped": shipped, "code": code_digest()}
        job_ref = ray.put(job)
        cluster = Cluster(ray, address, job_ref, plan.replays)
        if cluster.cpus < 1:
            raise ClusterError(f"the Ray cluster at {address} has no node with a CPU to play on")
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        check = ray.remote(check_node)
        refs = [
            check.options(
                num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            ).remote(job_ref)
            for node in cluster.nodes
        ]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=CHECK_TIMEOUT)
        if len(ready) < len(refs):
            raise ClusterError(f"a node of the Ray cluster at {address} did not answer within {CHECK_TIMEOUT:.0f} s")
        for ref in refs:
            try:
                where, problem = ray.get(ref)
            except ray.exceptions.RayError as e:
                first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                raise ClusterError(f"a node of the Ray cluster at {address} failed its check: {first}") from None
            if problem is not None:
                raise ClusterError(f"node {where} of the Ray cluster cannot play this tournament: {problem}")
        return cluster
    except BaseException:
        ray.shutdown()
        raise
