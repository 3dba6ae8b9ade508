"""The actor of a MaskablePPO MLP policy in numpy (:class:`MovesActor`: a move-scoring policy's), as trained
agents play without torch, from the arrays saved beside the zip (``policy.npz``). Its choices are torch's:
float32 layers, illegal logits removed before a float64 softmax, ties to the lowest action index. See
docs/guides/learned-agents.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import zipfile
from typing import Any

import numpy as np

from nertz_env.config import NertzConfig
from nertz_env.engine._cache import keyed_jit
from nertz_env.moves import KERNEL, inline, move_features, move_layout, write_move

_ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh"}


_kernel = keyed_jit(KERNEL)


@inline
def _layers(x, flat_w, flat_b, dims, buf_a, buf_b, relu, linear_last):
    """The dense layers ``dims`` applied to ``x``; returns the last one's output (a view of a buffer). Each layer
    reads only the weight rows of its non-zero inputs (observations are sparse). Sums run in float32 in input
    order, so the outputs agree with torch's to float32 rounding. The layers are 2-D views of the flat arrays,
    which LLVM vectorizes. With ``linear_last`` the last layer has no activation."""
    src = x
    w_off = 0
    b_off = 0
    for layer in range(dims.shape[0] - 1):
        n_in = dims[layer]
        n_out = dims[layer + 1]
        dst = buf_a[:n_out] if layer % 2 == 0 else buf_b[:n_out]
        w = flat_w[w_off : w_off + n_in * n_out].reshape((n_in, n_out))
        b = flat_b[b_off : b_off + n_out]
        for j in range(n_out):
            dst[j] = np.float32(0.0)
        for i in range(n_in):
            xi = src[i]
            if xi != 0.0:
                for j in range(n_out):
                    dst[j] += xi * w[i, j]
        last = linear_last and layer == dims.shape[0] - 2
        for j in range(n_out):
            v = dst[j] + b[j]
            if last:
                dst[j] = v
            elif relu:
                dst[j] = v if v > 0.0 else np.float32(0.0)
            else:
                dst[j] = math.tanh(v)
        w_off += n_in * n_out
        b_off += n_out
        src = dst
    return src


@_kernel
def _first_choice(x, flat_w, flat_b, dims, buf_a, buf_b, w_out_t, b_out, mask, relu):
    """The most probable legal action of the MLP, in one call: the hidden layers (:func:`_layers`), then the
    output layer for the legal actions only."""
    src = _layers(x, flat_w, flat_b, dims, buf_a, buf_b, relu, False)
    best = -1
    best_v = np.float32(0.0)
    n_hidden = w_out_t.shape[1]
    for a in range(w_out_t.shape[0]):
        if mask[a] != 0:
            s = np.float32(0.0)
            for j in range(n_hidden):
                s += src[j] * w_out_t[a, j]
            v = s + b_out[a]
            if best < 0 or v > best_v:  # strictly greater: ties go to the lowest index
                best = a
                best_v = v
    return best if best >= 0 else 0


@_kernel
def _first_move(x, mask, flat_w, flat_b, dims, bufs, relu, off, cols, params, mo, w_h, w_phi, h_dims, phi_dims, b_first,
                f_w, f_b, f_dims):
    """The most probable legal move of a move-scoring policy, in one call (:func:`_layers` throughout): ``h``, and
    its part of ``f``'s first layer once; then for each legal move its features
    (:func:`~nertz_env.moves.write_move`), their part of that layer (with ``h``'s part as its bias), and the rest
    of ``f``. ``bufs``: seven scratch rows."""
    h = _layers(x, flat_w, flat_b, dims, bufs[0], bufs[1], relu, False)
    hz = _layers(h, w_h, b_first, h_dims, bufs[2], bufs[2], relu, True)
    phi = bufs[3][: phi_dims[0]]
    best = -1
    best_v = np.float32(0.0)
    for a in range(mask.shape[0]):
        if mask[a] == 0:
            continue
        phi[:] = 0.0
        write_move(x, a, -1, off, cols, params, mo, phi)
        z = _layers(phi, w_phi, hz, phi_dims, bufs[4], bufs[4], relu, False)
        v = _layers(z, f_w, f_b, f_dims, bufs[5], bufs[6], relu, True)[0]
        if best < 0 or v > best_v:  # strictly greater: ties go to the lowest index
            best = a
            best_v = v
    return best if best >= 0 else 0


class UnsupportedNetwork(ValueError):
    """A checkpoint whose actor is not a plain MLP this module can evaluate (the torch route plays it)."""


def arrays_path(zip_path: str) -> str:
    """The plain array file beside a policy's ``.zip``: ``runs/x/policy.zip`` -> ``runs/x/policy.npz``."""
    return os.path.splitext(zip_path)[0] + ".npz"


def weights_key(zip_path: str) -> str:
    """SHA-256 of the network's weights in the zip (SB3's ``policy.pth``): an array file written from other
    weights (the zip saved again since) is not read."""
    with zipfile.ZipFile(zip_path) as zf:
        return hashlib.sha256(zf.read("policy.pth")).hexdigest()


def _fit(weights: list[np.ndarray], biases: list[np.ndarray], width: int | None, what: str) -> int | None:
    """Raise :class:`UnsupportedNetwork` unless each layer fits the next from ``width`` inputs (None: any); the
    output width (the compiled calls read by these shapes, with no bounds checks)."""
    if len(weights) != len(biases):
        raise UnsupportedNetwork(f"{len(weights)} {what} weight matrices but {len(biases)} biases")
    for k, (w, b) in enumerate(zip(weights, biases, strict=True)):
        if w.ndim != 2 or b.shape != (w.shape[1],) or (width is not None and w.shape[0] != width):
            raise UnsupportedNetwork(f"{what} layer {k}: weights {w.shape} and bias {b.shape} do not fit (inputs {width})")
        width = w.shape[1]
    return width


def _f32(arrays: list[np.ndarray]) -> list[np.ndarray]:
    return [np.ascontiguousarray(a, dtype=np.float32) for a in arrays]


def _mlp(net: Any, what: str, linear_last: bool = False) -> tuple[list[Any], str]:
    """The ``torch.nn.Linear`` layers of an MLP (``Sequential``, each layer followed by its activation but the
    last one with ``linear_last``) and its activation's name."""
    import torch

    layers = [m for m in net if isinstance(m, torch.nn.Linear)]
    kinds = {type(m).__name__ for m in net if not isinstance(m, torch.nn.Linear)}
    if len(net) - len(layers) != len(layers) - linear_last or len(kinds) > 1 or not kinds <= set(_ACTIVATIONS):
        raise UnsupportedNetwork(f"the {what} must be an MLP with ReLU or Tanh activations (SB3's net_arch)")
    return layers, _ACTIVATIONS[kinds.pop()] if kinds else "relu"


def _arrays(layers: list[Any]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    return [m.weight.detach().cpu().numpy().T for m in layers], [m.bias.detach().cpu().numpy() for m in layers]


class NumpyActor:
    """Observation -> masked action probabilities, and the most probable legal action, for an MLP actor: from
    a loaded SB3 policy (:meth:`from_policy`, torch), or without torch from the array file beside its ``.zip``
    (:meth:`load`)."""

    def __init__(self, weights: list[np.ndarray], biases: list[np.ndarray], w_out: np.ndarray, b_out: np.ndarray,
                 activation: str = "relu") -> None:
        self.w_out, self.b_out = _f32([w_out, b_out])
        self._hidden(weights, biases, activation, self.w_out.shape[0] if self.w_out.ndim == 2 else 0)
        _fit([self.w_out], [self.b_out], self._widths[-1], "output")
        self.n_actions = self.w_out.shape[1]
        self._w_out_t = np.ascontiguousarray(self.w_out.T)  # the kernel's layout: one row per action
        self._x_shape, self._m_shape = (self.obs_size,), (self.n_actions,)

    def _hidden(self, weights: list[np.ndarray], biases: list[np.ndarray], activation: str, inputs: int) -> None:
        """The hidden layers (``inputs``: the observation's width when there are none), in the compiled calls'
        layout: the weights and the biases in one float32 array each."""
        if activation not in ("relu", "tanh"):
            raise UnsupportedNetwork(f"activation {activation!r}: the numpy actor runs relu or tanh")
        self.weights, self.biases = _f32(weights), _f32(biases)  # (in, out)
        self.activation = activation
        _fit(self.weights, self.biases, None, "hidden")
        self.obs_size = self.weights[0].shape[0] if self.weights else inputs
        self._widths = [self.obs_size, *(w.shape[1] for w in self.weights)]
        self._flat_w = np.concatenate([w.ravel() for w in self.weights] or [np.zeros(0, np.float32)])
        self._flat_b = np.concatenate(self.biases or [np.zeros(0, np.float32)])
        self._dims = np.array(self._widths, dtype=np.int64)
        self._scratch = threading.local()  # scratch rows per thread (an actor is shared by agents)
        self._relu = self.activation == "relu"

    @classmethod
    def from_policy(cls, policy: Any) -> NumpyActor:
        """From a loaded ``MaskableActorCriticPolicy`` (torch)."""
        from stable_baselines3.common.torch_layers import FlattenExtractor

        if not isinstance(policy.pi_features_extractor, FlattenExtractor):
            raise UnsupportedNetwork("the policy's features extractor is not SB3's FlattenExtractor")
        layers, activation = _mlp(policy.mlp_extractor.policy_net, "policy")
        if hasattr(policy, "move_arch"):  # nertz_env.train.moves.MovesPolicy
            f_layers, _ = _mlp(policy.action_net.net, "move scorer", linear_last=True)
            return MovesActor(*_arrays(layers), *_arrays(f_layers), policy.rules, activation)
        (w_out,), (b_out,) = _arrays([policy.action_net])
        return cls(*_arrays(layers), w_out, b_out, activation)

    @classmethod
    def load(cls, zip_path: str) -> NumpyActor:
        """From the array file beside the policy ``zip_path`` (:func:`arrays_path`), without torch. Raises
        :class:`UnsupportedNetwork` when there is none, or when it was written from other weights."""
        path = arrays_path(zip_path)
        try:
            with np.load(path, allow_pickle=False) as z:
                if str(z["weights_key"]) != weights_key(zip_path):
                    raise UnsupportedNetwork(f"{path} was written from other weights than {zip_path}'s")
                n = int(z["hidden_layers"])
                hidden = [z[f"w{i}"] for i in range(n)], [z[f"b{i}"] for i in range(n)]
                if "rules" in z:
                    k = int(z["move_layers"])
                    return MovesActor(*hidden, [z[f"fw{i}"] for i in range(k)], [z[f"fb{i}"] for i in range(k)],
                                      json.loads(str(z["rules"])), str(z["activation"]))
                return NumpyActor(*hidden, z["w_out"], z["b_out"], str(z["activation"]))
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as e:
            raise UnsupportedNetwork(f"{path}: no array file of this policy ({e})") from None

    def _output_arrays(self) -> dict[str, Any]:
        return {"w_out": self.w_out, "b_out": self.b_out}

    def save(self, zip_path: str) -> str:
        """Write the arrays beside the policy ``zip_path`` (:func:`arrays_path`); returns the file's path."""
        path = arrays_path(zip_path)
        arrays: dict[str, Any] = {f"w{i}": w for i, w in enumerate(self.weights)}
        arrays |= {f"b{i}": b for i, b in enumerate(self.biases)}
        arrays |= {"hidden_layers": len(self.weights), "activation": self.activation,
                   "weights_key": weights_key(zip_path), **self._output_arrays()}
        with open(path, "wb") as f:
            np.savez(f, **arrays)
        return path

    def _act(self, h: np.ndarray) -> np.ndarray:
        return np.maximum(h, 0.0) if self._relu else np.tanh(h)

    def hidden(self, observation: np.ndarray) -> np.ndarray:
        """The last hidden layer's output for one observation (or a batch)."""
        h = np.asarray(observation, dtype=np.float32)
        for w, b in zip(self.weights, self.biases, strict=True):
            h = self._act(h @ w + b)
        return h

    def logits(self, observation: np.ndarray) -> np.ndarray:
        """The actor's float32 logits for one observation (or a batch)."""
        return self.hidden(observation) @ self.w_out + self.b_out

    def probabilities(self, observation: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Probabilities (float64) of the actions for one observation; illegal actions get 0."""
        logits = self.logits(observation).astype(np.float64)
        legal = np.asarray(mask).astype(bool)
        logits[~legal] = -np.inf
        logits -= logits[legal].max()
        p = np.exp(logits)
        return p / p.sum()

    def first_choice(self, observation: np.ndarray, mask: np.ndarray) -> int:
        """The most probable legal action (the lowest index among exact ties), as ``argmax`` of the
        probabilities, in one compiled call."""
        x, m = observation, mask
        bufs = getattr(self._scratch, "bufs", None)
        if not (bufs is not None and type(x) is np.ndarray and type(m) is np.ndarray and x.dtype == np.float32
                and m.dtype == np.int8 and x.shape == self._x_shape and m.shape == self._m_shape):
            x, m = np.asarray(x), np.asarray(mask)  # (the env's arrays go straight to the compiled call)
            if x.shape != self._x_shape or m.shape != self._m_shape:
                raise ValueError(f"first_choice takes one observation of shape {self._x_shape} and a mask of shape "
                                 f"{self._m_shape}, got {x.shape} and {m.shape}")
            x = np.ascontiguousarray(x, dtype=np.float32)
            m = np.ascontiguousarray(m.view(np.int8) if m.dtype == np.bool_ else (m != 0).astype(np.int8))
            if bufs is None:
                bufs = self._scratch.bufs = np.empty((7, max([1, *self._widths[1:], *self._scratch_widths()])), np.float32)
        return int(self._choose(x, m, bufs))

    def _scratch_widths(self) -> list[int]:
        return []

    def _choose(self, x: np.ndarray, m: np.ndarray, bufs: np.ndarray) -> int:
        return _first_choice(x, self._flat_w, self._flat_b, self._dims, bufs[0], bufs[1], self._w_out_t, self.b_out,
                             m, self._relu)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_scratch", None)  # thread-local buffers: made again where the actor is unpickled
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._scratch = threading.local()


class MovesActor(NumpyActor):
    """The numpy forward of a move-scoring policy (:class:`nertz_env.train.moves.MovesPolicy`): ``h`` by the
    hidden layers (``weights``, ``biases``), then ``f`` (``f_weights``, ``f_biases``) over ``[h, phi(move)]``
    for each legal move, its features read for the table of ``rules`` (:mod:`nertz_env.moves`)."""

    def __init__(self, weights: list[np.ndarray], biases: list[np.ndarray], f_weights: list[np.ndarray],
                 f_biases: list[np.ndarray], rules: dict[str, Any], activation: str = "relu") -> None:
        self.rules = dict(rules)
        self.config = NertzConfig.from_dict(self.rules)
        self.layout = move_layout(self.config)
        self.f_weights, self.f_biases = _f32(f_weights), _f32(f_biases)
        inputs = self.f_weights[0].shape[0] - self.layout.size if self.f_weights else 0
        self._hidden(weights, biases, activation, inputs)
        if len(self.f_weights) < 2 or _fit(self.f_weights, self.f_biases, self._widths[-1] + self.layout.size,
                                           "move scorer") != 1:
            raise UnsupportedNetwork("the move scorer must take h and the move's features to one logit through "
                                     "at least one hidden layer")
        self.n_actions = self.layout.columns.shape[0]
        # the kernel's layout (:func:`_first_move`): f's first layer split into its h and its feature rows
        first, h = self.f_weights[0], self._widths[-1]
        self._w_h, self._w_phi = first[:h].ravel(), first[h:].ravel()
        self._h_dims, self._phi_dims = (np.array([n, first.shape[1]], dtype=np.int64) for n in (h, self.layout.size))
        self._f_w = np.concatenate([w.ravel() for w in self.f_weights[1:]])
        self._f_b = np.concatenate(self.f_biases[1:])
        self._f_dims = np.array([w.shape[0] for w in self.f_weights[1:]] + [1], dtype=np.int64)
        self._x_shape, self._m_shape = (self.obs_size,), (self.n_actions,)

    def _output_arrays(self) -> dict[str, Any]:
        return ({f"fw{i}": w for i, w in enumerate(self.f_weights)} | {f"fb{i}": b for i, b in enumerate(self.f_biases)}
                | {"move_layers": len(self.f_weights), "rules": json.dumps(self.rules)})

    def logits(self, observation: np.ndarray) -> np.ndarray:
        """The float32 logit of every action for one observation (or a batch): ``f`` of each action's features."""
        h = self.hidden(observation)
        z = np.concatenate([np.broadcast_to(h[..., None, :], (*h.shape[:-1], self.n_actions, h.shape[-1])),
                            move_features(observation, self.config)], axis=-1)
        for k, (w, b) in enumerate(zip(self.f_weights, self.f_biases, strict=True)):
            z = z @ w + b
            z = z if k == len(self.f_weights) - 1 else self._act(z)
        return z[..., 0]

    def _scratch_widths(self) -> list[int]:
        return [self.layout.size, *(w.shape[1] for w in self.f_weights)]

    def _choose(self, x: np.ndarray, m: np.ndarray, bufs: np.ndarray) -> int:
        return _first_move(x, m, self._flat_w, self._flat_b, self._dims, bufs, self._relu, *self.layout.kernel,
                           self._w_h, self._w_phi, self._h_dims, self._phi_dims, self.f_biases[0], self._f_w, self._f_b,
                           self._f_dims)
