"""The actor of a MaskablePPO MLP policy in numpy: the forward pass trained agents play with, without torch.

Saving a policy writes its arrays beside the zip (``policy.npz``); a zip without one is read once with torch,
which writes it. Its choices are torch's (``tests/test_agents.py``): float32 layers, illegal logits removed
before a float64 softmax, ties to the lowest action index. See docs/guides/learned-agents.md.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
import zipfile
from typing import Any

import numpy as np

from nertz_env.engine._cache import keyed_jit

_ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh"}


@keyed_jit({"nogil": True, "error_model": "numpy", "no_cfunc_wrapper": True})
def _first_choice(x: np.ndarray, flat_w: np.ndarray, flat_b: np.ndarray, dims: np.ndarray, buf_a: np.ndarray,
                  buf_b: np.ndarray, w_out_t: np.ndarray, b_out: np.ndarray, mask: np.ndarray, relu: bool) -> int:
    """The most probable legal action of the MLP, in one call. Each layer reads only the weight rows of its
    non-zero inputs (observations are sparse) and the output layer scores only the legal actions. Sums run in
    float32 in input order, so the logits agree with torch's to float32 rounding. The layers are 2-D views of
    the flat arrays, which LLVM vectorizes."""
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
        for j in range(n_out):
            v = dst[j] + b[j]
            if relu:
                dst[j] = v if v > 0.0 else np.float32(0.0)
            else:
                dst[j] = math.tanh(v)
        w_off += n_in * n_out
        b_off += n_out
        src = dst
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


class NumpyActor:
    """Observation -> masked action probabilities, and the most probable legal action, for an MLP actor.

    Built from a loaded SB3 policy (:meth:`from_policy`, torch), or read without torch from the array file
    saved beside its ``.zip`` (:meth:`save`, :meth:`load`); both hold the same float32 arrays.
    """

    def __init__(self, weights: list[np.ndarray], biases: list[np.ndarray], w_out: np.ndarray, b_out: np.ndarray,
                 activation: str = "relu") -> None:
        if activation not in ("relu", "tanh"):
            raise UnsupportedNetwork(f"activation {activation!r}: the numpy actor runs relu or tanh")
        self.weights = [np.ascontiguousarray(w, dtype=np.float32) for w in weights]  # (in, out)
        self.biases = [np.ascontiguousarray(b, dtype=np.float32) for b in biases]
        self.w_out = np.ascontiguousarray(w_out, dtype=np.float32)
        self.b_out = np.ascontiguousarray(b_out, dtype=np.float32)
        self.activation = activation
        self._check_shapes()
        self.obs_size = self.weights[0].shape[0] if self.weights else self.w_out.shape[0]
        self.n_actions = self.w_out.shape[1]
        # the one-call kernel's layout (:func:`_first_choice`): the hidden layers' weights and biases in one
        # float32 array each, the output layer's weights one row per action
        self._flat_w = np.concatenate([w.ravel() for w in self.weights] or [np.zeros(0, np.float32)])
        self._flat_b = np.concatenate(self.biases or [np.zeros(0, np.float32)])
        self._dims = np.array([self.obs_size, *(w.shape[1] for w in self.weights)], dtype=np.int64)
        self._w_out_t = np.ascontiguousarray(self.w_out.T)
        self._widest = max([1, *(w.shape[1] for w in self.weights)])
        self._scratch = threading.local()  # two hidden-layer buffers per thread (an actor is shared by agents)
        self._relu = self.activation == "relu"
        self._x_shape, self._m_shape = (self.obs_size,), (self.n_actions,)

    def _check_shapes(self) -> None:
        """Every layer fits the next (the compiled call reads by these shapes, with no bounds checks)."""
        if len(self.weights) != len(self.biases):
            raise UnsupportedNetwork(f"{len(self.weights)} hidden weight matrices but {len(self.biases)} biases")
        width = None
        for k, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            if w.ndim != 2 or b.shape != (w.shape[1],) or (width is not None and w.shape[0] != width):
                raise UnsupportedNetwork(f"hidden layer {k}: weights {w.shape} and bias {b.shape} do not fit "
                                         f"(inputs {width})")
            width = w.shape[1]
        if (self.w_out.ndim != 2 or self.b_out.shape != (self.w_out.shape[1],)
                or (width is not None and self.w_out.shape[0] != width)):
            raise UnsupportedNetwork(f"output layer: weights {self.w_out.shape} and bias {self.b_out.shape} do not "
                                     f"fit (inputs {width})")

    @classmethod
    def from_policy(cls, policy: Any) -> NumpyActor:
        """From a loaded ``MaskableActorCriticPolicy`` (torch)."""
        import torch
        from stable_baselines3.common.torch_layers import FlattenExtractor

        if not isinstance(policy.pi_features_extractor, FlattenExtractor):
            raise UnsupportedNetwork("the policy's features extractor is not SB3's FlattenExtractor")
        layers = [m for m in policy.mlp_extractor.policy_net if isinstance(m, torch.nn.Linear)]
        acts = [m for m in policy.mlp_extractor.policy_net if not isinstance(m, torch.nn.Linear)]
        kinds = {type(a).__name__ for a in acts}
        if len(acts) != len(layers) or len(kinds) > 1 or not kinds <= set(_ACTIVATIONS):
            raise UnsupportedNetwork("the policy must be an MLP with ReLU or Tanh activations (SB3's net_arch)")
        return cls(
            [layer.weight.detach().cpu().numpy().T for layer in layers],
            [layer.bias.detach().cpu().numpy() for layer in layers],
            policy.action_net.weight.detach().cpu().numpy().T,
            policy.action_net.bias.detach().cpu().numpy(),
            _ACTIVATIONS[kinds.pop()] if kinds else "relu",
        )

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
                return cls([z[f"w{i}"] for i in range(n)], [z[f"b{i}"] for i in range(n)], z["w_out"], z["b_out"],
                           str(z["activation"]))
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as e:
            raise UnsupportedNetwork(f"{path}: no array file of this policy ({e})") from None

    def save(self, zip_path: str) -> str:
        """Write the arrays beside the policy ``zip_path`` (:func:`arrays_path`); returns the file's path."""
        path = arrays_path(zip_path)
        arrays: dict[str, Any] = {f"w{i}": w for i, w in enumerate(self.weights)}
        arrays |= {f"b{i}": b for i, b in enumerate(self.biases)}
        arrays |= {"hidden_layers": len(self.weights), "w_out": self.w_out, "b_out": self.b_out,
                   "activation": self.activation, "weights_key": weights_key(zip_path)}
        with open(path, "wb") as f:
            np.savez(f, **arrays)
        return path

    def logits(self, observation: np.ndarray) -> np.ndarray:
        """The actor's float32 logits for one observation (or a batch)."""
        h = np.asarray(observation, dtype=np.float32)
        for w, b in zip(self.weights, self.biases, strict=True):
            h = h @ w + b
            h = np.maximum(h, 0.0) if self.activation == "relu" else np.tanh(h)
        return h @ self.w_out + self.b_out

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
        probabilities, in one compiled call (:func:`_first_choice`)."""
        x, m = observation, mask
        bufs = getattr(self._scratch, "bufs", None)
        if (bufs is not None and type(x) is np.ndarray and type(m) is np.ndarray and x.dtype == np.float32
                and m.dtype == np.int8 and x.shape == self._x_shape and m.shape == self._m_shape):
            # the env's arrays: straight to the compiled call
            return int(_first_choice(x, self._flat_w, self._flat_b, self._dims, bufs[0], bufs[1], self._w_out_t,
                                     self.b_out, m, self._relu))
        x, m = np.asarray(x), np.asarray(mask)
        if x.shape != self._x_shape or m.shape != self._m_shape:
            raise ValueError(f"first_choice takes one observation of shape {self._x_shape} and a mask of shape "
                             f"{self._m_shape}, got {x.shape} and {m.shape}")
        x = np.ascontiguousarray(x, dtype=np.float32)
        m = m.view(np.int8) if m.dtype == np.bool_ else (m != 0).astype(np.int8)
        m = np.ascontiguousarray(m)
        if bufs is None:
            bufs = self._scratch.bufs = (np.empty(self._widest, np.float32), np.empty(self._widest, np.float32))
        return int(_first_choice(x, self._flat_w, self._flat_b, self._dims, bufs[0], bufs[1], self._w_out_t,
                                 self.b_out, m, self._relu))

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_scratch", None)  # thread-local buffers: made again where the actor is unpickled
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._scratch = threading.local()
