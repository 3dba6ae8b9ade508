"""What a checkpoint was trained for (a ``nertz-checkpoint/1`` JSON record), stored inside the SB3 zip
(``nertz_meta.json``) and beside it (``<checkpoint>.json``), and checked on every load: a policy plays only at a
table of the rules, size and layout it was trained on. See docs/guides/training-sb3.md.
"""

from __future__ import annotations

import dataclasses
import json
import os
import zipfile
from collections.abc import Mapping
from typing import Any

from nertz_env.actions import action_table
from nertz_env.config import NertzConfig, make_config
from nertz_env.observation import obs_layout

FORMAT = "nertz-checkpoint/1"
ZIP_MEMBER = "nertz_meta.json"


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: not a nertz-env checkpoint, or unreadable."""


class IncompatibleCheckpointError(CheckpointError):
    """A checkpoint trained for other rules, another table size or another observation/action layout."""


def sidecar_path(checkpoint: str) -> str:
    """``runs/x/model.zip`` -> ``runs/x/model.json``."""
    return os.path.splitext(checkpoint)[0] + ".json"


def make_meta(config: NertzConfig, **extra: Any) -> dict[str, Any]:
    """The record for a policy trained at tables of ``config`` (``extra``: counters, mode, ...)."""
    from nertz_env import __version__

    rules = config.to_dict()
    num_players = rules.pop("num_players")
    return {
        "format": FORMAT,
        "package_version": __version__,
        "algorithm": "MaskablePPO",
        "num_players": num_players,
        "rules": rules,
        "obs_size": obs_layout(config).size,
        "num_actions": action_table(config).n,
        **extra,
    }


def write_meta(checkpoint: str, meta: Mapping[str, Any]) -> None:
    """Add the record to the zip ``checkpoint`` (replacing an older one) and write the sidecar JSON."""
    text = json.dumps(dict(meta), indent=2, sort_keys=True)
    with zipfile.ZipFile(checkpoint, "r") as zf:
        names = zf.namelist()
    if ZIP_MEMBER in names:  # rewrite the archive without the old member
        tmp = checkpoint + ".tmp"
        with zipfile.ZipFile(checkpoint, "r") as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
            for item in src.infolist():
                if item.filename != ZIP_MEMBER:
                    dst.writestr(item, src.read(item.filename))
        os.replace(tmp, checkpoint)
    with zipfile.ZipFile(checkpoint, "a", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(ZIP_MEMBER, text)
    with open(sidecar_path(checkpoint), "w", encoding="utf-8") as f:
        f.write(text + "\n")


def read_meta(checkpoint: str) -> dict[str, Any]:
    """The record of ``checkpoint`` (from the zip, else from the sidecar). Raises FileNotFoundError, or
    CheckpointError when it is not a zip or neither the zip nor a sidecar holds a nertz-env record."""
    if not os.path.isfile(checkpoint):
        raise FileNotFoundError(f"checkpoint file not found: {checkpoint}")
    try:
        with zipfile.ZipFile(checkpoint, "r") as zf:
            text = zf.read(ZIP_MEMBER).decode() if ZIP_MEMBER in zf.namelist() else None
    except zipfile.BadZipFile:
        raise CheckpointError(f"{checkpoint} is not a checkpoint: not a zip archive") from None
    if text is None and os.path.isfile(sidecar_path(checkpoint)):
        with open(sidecar_path(checkpoint), encoding="utf-8") as f:
            text = f.read()
    if text is None:
        raise CheckpointError(
            f"{checkpoint} has no nertz-env record ({ZIP_MEMBER} inside the zip or "
            f"{sidecar_path(checkpoint)}): "
            "it was not written by nertz_env.train, so its rules and table size are unknown"
        )
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{checkpoint}: the nertz-env record is not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise CheckpointError(f"{checkpoint}: record format {got!r}, expected {FORMAT!r}")
    return meta


def meta_config(meta: Mapping[str, Any]) -> NertzConfig:
    """The table config a record describes."""
    return make_config(num_players=meta["num_players"], **meta["rules"])


def check_compatible(
    meta: Mapping[str, Any], config: NertzConfig, where: str = "checkpoint", path: str | None = None
) -> None:
    """Raise :class:`IncompatibleCheckpointError` unless ``meta`` was trained for exactly ``config``.

    One line: every difference (an option one side leaves out is at its default) and the JSON beside ``path``
    (or ``meta["path"]``) that records the rules it was trained for, e.g. ``checkpoints/step_N.json``."""
    problems: list[str] = []
    if int(meta["num_players"]) != config.num_players:
        problems.append(f"num_players: {where} has {meta['num_players']}, the table has {config.num_players}")
    want, have = config.to_dict(), dict(meta["rules"])
    default = {f.name: f.default for f in dataclasses.fields(NertzConfig)}
    for key in sorted((set(want) | set(have)) - {"num_players"}):
        if key not in default:
            problems.append(f"rules.{key}: this version does not know the {where}'s option ({have[key]!r})")
        elif (theirs := have.get(key, default[key])) != (mine := want.get(key, default[key])):
            problems.append(f"rules.{key}: {where} has {theirs!r}, the table has {mine!r}")
    obs_size, num_actions = obs_layout(config).size, action_table(config).n
    if int(meta["obs_size"]) != obs_size:
        problems.append(f"observation size: {where} has {meta['obs_size']}, the table has {obs_size}")
    if int(meta["num_actions"]) != num_actions:
        problems.append(f"action count: {where} has {meta['num_actions']}, the table has {num_actions}")
    if problems:
        record = sidecar_path(path or meta.get("path") or "")
        rules = f"; its rules: {record}" if os.path.isfile(record) else ""
        raise IncompatibleCheckpointError(
            f"incompatible {where} (trained with nertz-env {meta.get('package_version', '?')}{rules}): "
            + "; ".join(problems)
        )
