"""The actor of a MaskablePPO MLP policy in numpy: the one forward pass the trained agents play with.

``ppo`` (any deterministic ``.zip`` policy agent) and the ``expert``/``best`` planner both take the most probable
legal action of this forward pass. It reads the weights straight from the checkpoint (:func:`read_state_dict`, a
reader of torch's zip serialization that needs no torch), so a trained network plays without torch, and a
decision costs tens of microseconds instead of a few hundred through torch's distribution objects.

Its choices are torch's: the same float32 layers, the logits of illegal actions removed before a float64
softmax, ties going to the lowest action index, as ``argmax`` over torch's probabilities does
(``tests/test_forward.py`` compares the two on thousands of observations and on exact ties).
"""

from __future__ import annotations

import collections
import io
import json
import pickle
import zipfile
from typing import Any

import numpy as np

_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}
_ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh"}


class UnsupportedNetwork(ValueError):
    """A checkpoint whose actor is not a plain MLP this module can evaluate (the torch route plays it)."""


class _Storage:
    def __init__(self, name: str) -> None:
        self.dtype = _DTYPES[name]


def _rebuild_tensor(storage: np.ndarray, offset: int, size: tuple[int, ...], stride: tuple[int, ...],
                    *_: Any) -> np.ndarray:
    item = storage.dtype.itemsize
    flat = storage[offset:]
    return np.lib.stride_tricks.as_strided(flat, shape=tuple(size), strides=tuple(s * item for s in stride)).copy()


class _Unpickler(pickle.Unpickler):
    """torch's ``data.pkl`` of a state dict, with tensors rebuilt as numpy arrays and no other globals allowed."""

    def __init__(self, data: bytes, read: Any) -> None:
        super().__init__(io.BytesIO(data))
        self._read = read

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch" and name in _DTYPES:
            return _Storage(name)
        raise UnsupportedNetwork(f"the state dict holds {module}.{name}, which the numpy reader does not read")

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) >= 3 and pid[0] == "storage" and isinstance(pid[1], _Storage)):
            raise UnsupportedNetwork(f"unknown storage record {pid!r}")
        return np.frombuffer(self._read(str(pid[2])), dtype=pid[1].dtype)


def read_state_dict(path: str, member: str = "policy.pth") -> dict[str, np.ndarray]:
    """The tensors of a torch state dict saved inside the zip ``path`` (SB3's ``policy.pth``), as numpy arrays,
    without torch. Raises :class:`UnsupportedNetwork` for anything but a state dict of plain tensors."""
    with zipfile.ZipFile(path) as outer:
        try:
            raw = outer.read(member)
        except KeyError:
            raise UnsupportedNetwork(f"{path}: no {member} in the zip") from None
    with zipfile.ZipFile(io.BytesIO(raw)) as inner:
        names = inner.namelist()
        pkl = next((n for n in names if n.endswith("/data.pkl") or n == "data.pkl"), None)
        if pkl is None:
            raise UnsupportedNetwork(f"{path}: {member} is not torch's zip serialization")
        prefix = pkl[: -len("data.pkl")]
        order = prefix + "byteorder"
        if order in names and inner.read(order).strip() != b"little":
            raise UnsupportedNetwork(f"{path}: tensors saved big-endian")

        def read(key: str) -> bytes:
            return inner.read(f"{prefix}data/{key}")

        state = _Unpickler(inner.read(pkl), read).load()
    if not isinstance(state, dict) or not all(isinstance(v, np.ndarray) for v in state.values()):
        raise UnsupportedNetwork(f"{path}: {member} is not a state dict of tensors")
    return dict(state)


class NumpyActor:
    """Observation -> masked action probabilities, and the most probable legal action, for an MLP actor.

    Built from a loaded SB3 policy (:meth:`from_policy`, torch) or from the checkpoint file alone
    (:meth:`from_zip`, no torch); both hold the same float32 arrays.
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
        self.obs_size = self.weights[0].shape[0] if self.weights else self.w_out.shape[0]
        self.n_actions = self.w_out.shape[1]

    @classmethod
    def from_policy(cls, policy: Any) -> NumpyActor:
        """From a loaded ``MaskableActorCriticPolicy`` (torch)."""
        import torch

        layers = [m for m in policy.mlp_extractor.policy_net if isinstance(m, torch.nn.Linear)]
        acts = [m for m in policy.mlp_extractor.policy_net if not isinstance(m, torch.nn.Linear)]
        kinds = {type(a).__name__ for a in acts}
        if len(acts) != len(layers) or len(kinds) > 1 or not kinds <= set(_ACTIVATIONS):
            raise UnsupportedNetwork("the policy must be an MLP with ReLU or Tanh activations (SB3's net_arch)")
        return cls(
            [layer.weight.detach().numpy().T for layer in layers],
            [layer.bias.detach().numpy() for layer in layers],
            policy.action_net.weight.detach().numpy().T,
            policy.action_net.bias.detach().numpy(),
            _ACTIVATIONS[kinds.pop()] if kinds else "relu",
        )

    @classmethod
    def from_zip(cls, path: str) -> NumpyActor:
        """From a MaskablePPO ``.zip`` alone, without torch. Raises :class:`UnsupportedNetwork` unless the
        policy is sb3-contrib's ``MaskableActorCriticPolicy`` with the default feature extractor and an MLP actor
        of ReLU or Tanh layers (the torch route plays anything else)."""
        try:
            with zipfile.ZipFile(path) as zf:
                data = json.loads(zf.read("data"))
        except (KeyError, ValueError, zipfile.BadZipFile) as e:
            raise UnsupportedNetwork(f"{path}: no readable SB3 data ({e})") from None
        cls_info = data.get("policy_class") or {}
        if not (isinstance(cls_info, dict) and cls_info.get("__module__") == "sb3_contrib.common.maskable.policies"
                and "MaskableActorCriticPolicy.__init__" in str(cls_info.get("__init__", ""))):
            raise UnsupportedNetwork(f"{path}: the policy class is not sb3-contrib's MaskableActorCriticPolicy")
        kwargs = data.get("policy_kwargs") or {}
        readable = {k for k in kwargs if not k.startswith(":")}
        if not readable <= {"net_arch", "activation_fn"}:
            raise UnsupportedNetwork(f"{path}: policy options {sorted(readable - {'net_arch', 'activation_fn'})} "
                                     "are not read by the numpy actor")
        act_text = str(kwargs.get("activation_fn", "<class 'torch.nn.modules.activation.Tanh'>"))  # SB3's default
        kind = next((v for k, v in _ACTIVATIONS.items() if act_text == f"<class 'torch.nn.modules.activation.{k}'>"),
                    None)
        if kind is None:
            raise UnsupportedNetwork(f"{path}: activation {act_text} is not ReLU or Tanh")
        state = read_state_dict(path)
        prefix = "mlp_extractor.policy_net."
        idx = sorted({int(k[len(prefix):].split(".")[0]) for k in state if k.startswith(prefix)})
        expected = {f"{prefix}{i}.{p}" for i in idx for p in ("weight", "bias")} | {"action_net.weight",
                                                                                    "action_net.bias"}
        if idx != list(range(0, 2 * len(idx), 2)) or not expected <= set(state):
            raise UnsupportedNetwork(f"{path}: the actor is not a plain MLP (layers {idx})")
        return cls([state[f"{prefix}{i}.weight"].T for i in idx], [state[f"{prefix}{i}.bias"] for i in idx],
                   state["action_net.weight"].T, state["action_net.bias"], kind)

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
        probabilities."""
        logits = self.logits(observation)
        legal = np.asarray(mask).astype(bool)
        return int(np.argmax(np.where(legal, logits, -np.inf)))
