"""BenchMARL 1.5 with a custom task (a ``Task`` enum and its ``TaskClass``) over TorchRL's PettingZooWrapper:
MAPPO, its critic on the env's ``state``, one iteration. Run by tests/test_clients.py in a venv of its own."""

from __future__ import annotations

import json
import sys
import tempfile

import torch
from benchmarl.algorithms import MappoConfig
from benchmarl.environments.common import Task, TaskClass
from benchmarl.experiment import Experiment, ExperimentConfig
from benchmarl.models.mlp import MlpConfig
from torchrl.data import Composite
from torchrl.envs import EnvBase
from torchrl.envs.libs.pettingzoo import PettingZooWrapper

import nertz_env

torch.set_num_threads(1)


class NertzClass(TaskClass):
    def get_env_fun(self, num_envs, continuous_actions, seed, device):
        config = dict(self.config)
        return lambda: PettingZooWrapper(
            env=nertz_env.parallel_env(**config), categorical_actions=True, seed=seed, device=device, return_state=True
        )

    def supports_continuous_actions(self) -> bool:
        return False

    def supports_discrete_actions(self) -> bool:
        return True

    def has_render(self, env: EnvBase) -> bool:
        return False

    def max_steps(self, env: EnvBase) -> int:
        return self.config["max_ticks"]

    def group_map(self, env: EnvBase) -> dict[str, list[str]]:
        return env.group_map

    def _only(self, env: EnvBase, keep: str) -> Composite | None:
        spec = env.observation_spec.clone()
        for group in self.group_map(env):
            for key in list(spec[group].keys()):
                if key != keep:
                    del spec[group][key]
            if spec[group].is_empty():
                del spec[group]
        if "state" in spec:
            del spec["state"]
        return None if spec.is_empty() else spec

    def observation_spec(self, env: EnvBase) -> Composite:
        return self._only(env, "observation")

    def action_mask_spec(self, env: EnvBase) -> Composite | None:
        return self._only(env, "action_mask")

    def info_spec(self, env: EnvBase) -> Composite | None:
        return self._only(env, "info")

    def state_spec(self, env: EnvBase) -> Composite | None:
        return Composite({"state": env.observation_spec["state"].clone()})

    def action_spec(self, env: EnvBase) -> Composite:
        return env.full_action_spec

    @staticmethod
    def env_name() -> str:
        return "nertz"


class NertzTask(Task):
    NERTZ = None

    @staticmethod
    def associated_class():
        return NertzClass


def main() -> dict:
    task = NertzTask.NERTZ.get_task(config={"num_players": 2, "max_ticks": 25})
    config = ExperimentConfig.get_from_yaml()
    config.max_n_iters = 1
    config.on_policy_collected_frames_per_batch = 100
    config.on_policy_n_envs_per_worker = 2
    config.on_policy_minibatch_size = 50
    config.on_policy_n_minibatch_iters = 1
    config.evaluation = False
    config.render = False
    config.loggers = []
    config.create_json = False
    config.checkpoint_at_end = False
    config.sampling_device = config.train_device = config.buffer_device = "cpu"
    config.save_folder = tempfile.mkdtemp()
    experiment = Experiment(
        task=task,
        algorithm_config=MappoConfig.get_from_yaml(),
        model_config=MlpConfig.get_from_yaml(),
        critic_model_config=MlpConfig.get_from_yaml(),
        seed=0,
        config=config,
    )
    policy_before = [p.detach().clone() for p in experiment.policy.parameters()]
    experiment.run()
    changed = any(not torch.equal(a, b) for a, b in zip(policy_before, experiment.policy.parameters(), strict=True))
    critic = experiment.losses["player"].critic_network
    return {
        "iters": experiment.n_iters_performed,
        "frames": experiment.total_frames,
        "changed": changed,
        "critic_in_keys": [list(k) if isinstance(k, tuple) else [k] for k in critic.in_keys],
        "has_state_spec": experiment.task.state_spec(experiment.test_env) is not None,
    }


if __name__ == "__main__":
    print(json.dumps(main()))
    sys.stdout.flush()
