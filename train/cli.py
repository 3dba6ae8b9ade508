"""``nertz-train``: the Stable-Baselines3 run, or with ``--backend rllib`` :mod:`nertz_env.train.rllib_backend`'s.
The flags both read: :mod:`nertz_env.train.flags`."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Sequence

from nertz_env.cli import refuse
from nertz_env.train.config import TrainConfig
from nertz_env.train.flags import build_parser, config_from_args


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if "--backend=rllib" in args_list or any(
        a == "--backend" and b == "rllib" for a, b in itertools.pairwise(args_list)
    ):
        from nertz_env.train.rllib_backend import main as rllib_main

        return rllib_main(args_list)
    from nertz_env.threads import limit_threads

    limit_threads(1)  # before torch loads; the trainer then sets torch_threads
    args = build_parser().parse_args(argv)
    from nertz_env.train.checkpoint import check_run, read_checkpoint

    try:
        # a file that cannot be resumed (a policy file, a zip without its .state.pkl) is said first: no other
        # option can make it resumable
        base = TrainConfig.from_dict(read_checkpoint(args.resume)["train_config"]) if args.resume else None
        cfg = config_from_args(args, base)
        if args.print_config:
            # a run's checks, without torch (a run makes them in the Trainer, once a missing train extra is said)
            resolved, notes, _ = check_run(cfg, args.resume)
            print(json.dumps(resolved.to_dict(), indent=2))
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
            return 0
        from tqdm import tqdm

        from nertz_env.train.trainer import Trainer

        trainer = Trainer(cfg, resume=args.resume, log=tqdm.write)  # messages above the progress bar
    except (FileNotFoundError, ValueError) as e:  # ConfigError, CheckpointError, AgentSpecError
        return refuse("nertz-train", e)
    print(f"run dir: {trainer.run_dir}")
    from nertz_env.train.resume import Interrupted, interrupted_message

    try:
        trainer.train()
    except Interrupted as stop:
        print(interrupted_message("nertz-train", args_list, stop), file=sys.stderr)
        return 130
    except KeyboardInterrupt:  # a second Ctrl-C: stopped at once
        last = trainer.checkpoints[-1] if trainer.checkpoints else None
        hint = f"; the last complete checkpoint: nertz-train --resume {last}" if last else ""
        print(f"nertz-train: interrupted again: stopped at once{hint}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
