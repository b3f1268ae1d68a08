"""``mlagents-learn`` (ML-Agents 0.28's own CLI and trainers) on one of our built-in environments.

``mlagents_3dball_side_by_side.py`` runs this with the scratch ML-Agents venv's interpreter and the
repository root on ``PYTHONPATH``. The arguments are ``mlagents-learn``'s; ``--env=builtin:NAME``
names the built-in environment, ``--env=gymnasium:ID`` a Gymnasium task through our adapter
(``--copies N`` copies as one behavior, 8 unless given; taken out of the arguments before
``mlagents-learn`` reads them). Only the environment factory is replaced: each ML-Agents env
worker builds ``envs.builtin.make_env(NAME, seed=seed, worker_id=worker_id)`` (or
``envs.gymnasium.gymnasium_env``) instead of launching a Unity build, so everything else
(SubprocessEnvManager, AgentProcessor, the trainers) is ML-Agents' own. The final ONNX export
needs ``onnxscript`` with today's torch; it is skipped (it happens after training).

``--in-process-env`` (taken out of the arguments before ``mlagents-learn`` reads them; one
environment only) steps the environment in the trainer's process with ML-Agents' own
``SimpleEnvManager`` instead of a ``SubprocessEnvManager`` worker: the same steps and actions in the
same order, without the worker process and the main process's busy polling of its queue: Basic
ran 62-71 steps/s so against 53-58 with the worker, on 2 cores shared with a test suite
(``basic_seeds.py`` uses it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from mlagents.trainers import learn
from mlagents.trainers.torch.model_serialization import ModelSerializer

#: Gymnasium copies per environment (``--copies``).
copies = 8


def builtin_factory(env_path: str | None, _no_graphics: bool, seed: int, *_args: Any) -> Callable[..., Any]:
    if env_path is None or not env_path.startswith(("builtin:", "gymnasium:")):
        raise SystemExit(f"--env must name a built-in environment (builtin:NAME) or gymnasium:ID, not {env_path!r}")
    source, name = env_path.split(":", 1)

    def create(worker_id: int, _side_channels: list[Any]) -> Any:
        if source == "gymnasium":
            from envs.gymnasium import gymnasium_env

            env = gymnasium_env(name, copies=copies, seed=seed, worker_id=worker_id)
        else:
            from envs.builtin import make_env

            env = make_env(name, seed=seed, worker_id=worker_id)
        env.academy_capabilities = None  # a Unity build's handshake field; none: no analytics channel
        return env

    return create


def in_process_env_manager(env_factory: Callable[..., Any], _options: Any, num_envs: int) -> Any:
    """ML-Agents' ``SimpleEnvManager`` on the one environment ``env_factory`` makes (in place of
    ``SubprocessEnvManager(env_factory, options, num_envs)``)."""
    from mlagents.trainers.simple_env_manager import SimpleEnvManager
    from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel

    if num_envs != 1:
        raise SystemExit(f"--in-process-env steps one environment, not --num-envs={num_envs}")
    channel = EnvironmentParametersChannel()
    return SimpleEnvManager(env_factory(0, [channel]), channel)


if __name__ == "__main__":
    if "--copies" in sys.argv:
        at = sys.argv.index("--copies")
        copies = int(sys.argv[at + 1])
        del sys.argv[at : at + 2]
    if "--in-process-env" in sys.argv:
        sys.argv.remove("--in-process-env")
        learn.SubprocessEnvManager = in_process_env_manager  # type: ignore[assignment,misc]
    learn.create_environment_factory = builtin_factory  # type: ignore[assignment]
    ModelSerializer.export_policy_model = lambda *_args, **_kwargs: None  # type: ignore[method-assign]
    learn.main()
