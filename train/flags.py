"""``nertz-train``'s flags, which both backends read (:func:`build_parser`, :func:`config_from_args`): train a
MaskablePPO policy for Nertz.

Examples::

    nertz-train --config train.toml                      # options from a file (TOML or JSON)
    nertz-train --config long_run --run-dir runs/long    # a config shipped with the package, by name
    nertz-train --mode vector --num-tables 64 --total-timesteps 2000000 --run-dir runs/selfplay
    nertz-train --mode vector --learners-per-table 1 --opponent search=1 --opponent heuristic=1 --shaping
    nertz-train --resume runs/selfplay/checkpoints/step_000001000000.zip --total-timesteps 4000000
    nertz-train --print-config                           # the effective options, as JSON

Every option of :class:`nertz_env.train.config.TrainConfig` is a flag; flags override the file, which
overrides a resumed checkpoint's options. An option that cannot take effect (``--opponent`` when every seat
learns) is refused before any work, in one line. Exit codes: 0 done, 1 training error, 2 bad usage, 130
interrupted (after saving).
"""

from __future__ import annotations

import argparse
from types import UnionType
from typing import Any, Literal, get_args, get_origin

from nertz_env.cli import Parser, Rules, add_rule_flag
from nertz_env.train.config import (
    SB3_ONLY,
    TrainConfig,
    options,
    read_config_file,
    shipped_configs,
)


def _opponent(text: str) -> tuple[str, float]:
    """``heuristic`` -> (heuristic, 1), ``search=0.2`` -> (search, 0.2), ``search:rollouts=4`` -> (that spec, 1),
    ``search:rollouts=4=0.2`` -> (``search:rollouts=4``, 0.2): an agent's parameters keep their ``=``."""
    text = text.strip()
    head, colon, params = text.partition(":")
    last = params.split(",")[-1] if colon else head
    if last.count("=") < (2 if colon else 1):
        return text, 1.0
    spec, _, weight = text.rpartition("=")
    try:
        return spec.strip(), float(weight)
    except ValueError:
        example = "search=0.2, search:rollouts=4=0.2"
        raise ValueError(f"takes SPEC or SPEC=WEIGHT (e.g. {example}), got {text!r}") from None


def int_list(text: str) -> list[int]:
    """``--net-arch``: layer widths such as ``256,256``."""
    try:
        widths = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        widths = []
    if not widths or min(widths) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers such as 256,256, got {text!r}")
    return widths


def _or_none(kind: type) -> Any:
    """``--torch-threads none``: an option whose type is ``X | None``."""

    def parse(text: str) -> Any:
        if text.strip().lower() in ("none", "null"):
            return None
        return kind(text)

    parse.__name__ = kind.__name__
    return parse


def build_parser(sb3: bool = True) -> argparse.ArgumentParser:
    """The flags of ``nertz-train``; without ``sb3`` (``--backend rllib``) those of the options only the SB3
    backend reads are left out, so argparse refuses them in one line."""
    parser = Parser(
        prog="nertz-train",
        description="Train a MaskablePPO policy for Nertz (self-play vector env or single-agent view).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(__doc__ or "").partition("Examples::")[2],
    )
    parser.add_argument(
        "--backend",
        choices=("sb3", "rllib"),
        default="sb3",
        help="sb3: MaskablePPO (default); rllib: Ray RLlib PPO, adds --num-env-runners and --address "
        "(nertz-train --backend rllib --help)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE|NAME",
        help="a TOML or JSON file of options, or a config shipped with the package by name: "
        + (", ".join(shipped_configs()) or "none installed")
        + " (e.g. --config long_run)",
    )
    parser.add_argument("--resume", metavar="CHECKPOINT", help="continue the run of RUN/checkpoints/step_N.zip, in RUN (from any folder; --run-dir: elsewhere)")
    parser.add_argument("--print-config", action="store_true", help="print the effective options and exit")
    helps = {name: o.help for name, o in options().items()}
    add_rule_flag(parser, helps["rules"], size_flag="--num-players")
    if sb3:
        parser.add_argument("--eval-opponent", dest="eval_opponents", action="append", metavar="SPEC",
                            help=helps["eval_opponents"])
    parser.add_argument("--opponent", dest="opponents", action=Rules, parse=_opponent, metavar="SPEC=WEIGHT",
                        help=helps["opponents"])
    for name, o in options().items():
        if name in ("rules", "opponents", "eval_opponents") or (not sb3 and name in SB3_ONLY):
            continue
        flag, kind = "--" + name.replace("_", "-"), o.type
        text = f"{o.help} (default {'none' if o.default is None else repr(o.default)})"
        optional = get_origin(kind) is UnionType
        if optional:
            kind = get_args(kind)[0]
        if kind is bool:
            parser.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, help=text)
        elif kind == list[int]:
            parser.add_argument(flag, dest=name, type=int_list, metavar="W,W", help=text)
        elif get_origin(kind) is Literal:
            parser.add_argument(flag, dest=name, choices=get_args(kind), help=text)
        else:
            kind = _or_none(kind) if optional else kind
            parser.add_argument(flag, dest=name, type=kind, metavar=kind.__name__.upper(), help=text)
    return parser


def config_from_args(args: argparse.Namespace, base: TrainConfig | None = None, final: bool = False) -> TrainConfig:
    """The config: ``base`` (defaults, or a checkpoint's), then ``--config``'s file, then the flags. A resume
    with no ``run_dir`` in either writes in the checkpoint's run folder (``final``: the RLlib backend's)."""
    from nertz_env.train.checkpoint import resume_run_dir

    file = read_config_file(args.config) if args.config else {}
    cfg = TrainConfig.from_dict(file, base=base or TrainConfig())
    flags: dict[str, Any] = {}
    if args.resume and args.run_dir is None and "run_dir" not in file:
        flags["run_dir"] = resume_run_dir(args.resume, final)
    for name in options():  # (rules: the --rule flag below)
        if getattr(args, name, None) is not None:
            flags[name] = getattr(args, name)
    if args.rule:
        flags["rules"] = {**cfg.rules, **args.rule}
    return TrainConfig.from_dict(flags, base=cfg)
