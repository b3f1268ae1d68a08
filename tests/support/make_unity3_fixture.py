"""Make ``tests/fixtures/unity3/``: what two generations of Unity builds send, and what the
matching ``mlagents_envs`` decodes from it.

The stand-in player (``tests.support.standin``) plays scenes ``visual`` and ``grid`` twice from
one seed with the same actions (``SCENE_ARGS``: the visual scene's episodes cut at 4 steps): as a package 2.x build (``2.3.0-exp.3``: images ``[H, W, C]``)
and as a package 3.x+ build (``4.0.0``: images ``[C, H, W]``). For each scene and generation
the fixture holds

- ``{scene}_{gen}.messages``: the UnityOutputProto messages the build sends after a reset and
  a few steps (``MESSAGES`` of them, terminal steps included), serialized, each preceded by
  its length (uint32, little-endian); read them with :func:`read_messages`;
- ``{scene}_{gen}.{decoder}.npz``: what that generation's Python package decodes from them,
  ``rpc_utils.behavior_spec_from_proto`` (first message's brain parameters) then
  ``rpc_utils.steps_from_proto`` per message: mlagents-envs 0.28 for ``2x``
  (``mlagents_envs_0_28``), mlagents-envs 1.1 for ``3x`` (``mlagents_envs_1_1``). Keys:
  ``{decision|terminal}_{message}_obs{k}`` (float32, as decoded: ``[N, H, W, C]`` from 0.28,
  ``[N, C, H, W]`` from 1.1), ``..._agent_id``, ``..._reward``, ``terminal_{m}_interrupted``,
  ``decision_{m}_mask{b}`` (the visual scene's action masks), ``mlagents_envs_version``,
  ``package_version``.

Regenerate (the project venv has mlagents-envs 0.28; 1.1 needs Python >= 3.10 in a venv of
its own, its protocol modules loaded under modern protobuf by ``envs.unity.protocol``)::

    python3 -m venv /tmp/ml11venv
    /tmp/ml11venv/bin/pip install -c constraints.txt numpy protobuf grpcio pillow
    /tmp/ml11venv/bin/pip install --no-deps --ignore-requires-python mlagents_envs-1.1.0-py3-none-any.whl
    .venv/bin/python tests/support/make_unity3_fixture.py --ml11-python /tmp/ml11venv/bin/python

The script re-runs itself under that interpreter (``--decode MESSAGES NPZ``) to decode the 3.x
messages. ``tests/test_unity_generations_decode.py`` checks that the stored messages are what
the stand-in sends today, so a change to the stand-in's scenes shows up there.
"""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if __name__ == "__main__" and ROOT not in sys.path:  # run as a script: import tests.support, envs
    sys.path.insert(0, ROOT)

FIXTURE_DIR = os.path.join(ROOT, "tests", "fixtures", "unity3")
SCENES = ("visual", "grid")
SCENE_ARGS = {"visual": ("--max-step", "4"), "grid": ()}  # episodes short enough to end in the capture
GENERATIONS = {"2x": "2.3.0-exp.3", "3x": "4.0.0"}
DECODERS = {"2x": ("mlagents_envs_0_28", "0.28.0"), "3x": ("mlagents_envs_1_1", "1.1.0")}
SEED = 11
MESSAGES = 8


def messages_path(scene: str, generation: str, folder: str = FIXTURE_DIR) -> str:
    return os.path.join(folder, f"{scene}_{generation}.messages")


def decoded_path(scene: str, generation: str, folder: str = FIXTURE_DIR) -> str:
    return os.path.join(folder, f"{scene}_{generation}.{DECODERS[generation][0]}.npz")


def pack_messages(messages: Sequence[bytes]) -> bytes:
    return b"".join(struct.pack("<I", len(m)) + m for m in messages)


def read_messages(path: str) -> list[bytes]:
    """The serialized UnityOutputProto messages of a ``.messages`` file, in order."""
    with open(path, "rb") as f:
        data = f.read()
    result, offset = [], 0
    while offset < len(data):
        (length,) = struct.unpack_from("<I", data, offset)
        result.append(data[offset + 4 : offset + 4 + length])
        offset += 4 + length
    return result


def standin_messages(scene: str, package_version: str, count: int = MESSAGES, seed: int = SEED) -> list[bytes]:
    """What the stand-in build sends (``unity_output`` of its messages) after a reset and
    ``count - 1`` steps, every deciding agent acting by a fixed rule; deterministic."""
    import envs.unity  # noqa: F401  (protocol modules under this protobuf)

    # isort: split
    from tests.support import standin

    pb = standin._Protocol()
    options = standin.parse_args(["--scene", scene, "--package-version", package_version, *SCENE_ARGS[scene]])
    groups = standin.make_groups(options, np.random.default_rng(seed), {})
    academy = standin.Academy(groups, pb, channels_first=standin.channels_first(package_version))
    result = []
    for step in range(count):
        if step == 0:
            academy.reset()
        else:
            message = pb.UnityMessageProto()
            rl_input = message.unity_input.rl_input
            for group in academy.groups:
                actions = rl_input.agent_actions[group.name].value
                for i in group.deciding:
                    action = actions.add()
                    action.continuous_actions.extend([0.5] * group.continuous)
                    action.discrete_actions.extend([(step + int(i)) % b for b in group.branches])
            academy.set_actions(rl_input)
        output = pb.UnityMessageProto()
        academy.run_until_message(output.unity_output)
        result.append(output.unity_output.SerializeToString(deterministic=True))
    return result


def decode_messages(messages: Sequence[bytes]) -> Iterator[tuple[str, np.ndarray]]:
    """(key, array) of what the installed mlagents_envs decodes from ``messages`` (one behavior)."""
    from mlagents_envs import rpc_utils
    from mlagents_envs.communicator_objects.unity_output_pb2 import UnityOutputProto

    outputs = [UnityOutputProto.FromString(m) for m in messages]
    brain = outputs[0].rl_initialization_output.brain_parameters[0]
    infos = outputs[0].rl_output.agentInfos[brain.brain_name].value
    spec = rpc_utils.behavior_spec_from_proto(brain, infos[0])
    for m, output in enumerate(outputs):
        decision, terminal = rpc_utils.steps_from_proto(output.rl_output.agentInfos[brain.brain_name].value, spec)
        for kind, steps in (("decision", decision), ("terminal", terminal)):
            for k, obs in enumerate(steps.obs):
                yield f"{kind}_{m}_obs{k}", obs
            yield f"{kind}_{m}_agent_id", steps.agent_id
            yield f"{kind}_{m}_reward", steps.reward
        yield f"terminal_{m}_interrupted", terminal.interrupted
        for b, mask in enumerate(decision.action_mask or []):
            yield f"decision_{m}_mask{b}", mask


def write_decoded(messages_file: str, npz_file: str, package_version: str) -> None:
    """Decode ``messages_file`` with this interpreter's mlagents_envs into ``npz_file``."""
    from importlib.metadata import version

    import envs.unity  # noqa: F401  (protocol modules under this protobuf)

    arrays: dict[str, Any] = dict(decode_messages(read_messages(messages_file)))
    arrays["mlagents_envs_version"] = np.array(version("mlagents_envs"))
    arrays["package_version"] = np.array(package_version)
    np.savez_compressed(npz_file, **arrays)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ml11-python", default="/tmp/ml11venv/bin/python", help="a Python with mlagents-envs 1.1")
    parser.add_argument("--out", default=FIXTURE_DIR)
    parser.add_argument("--decode", nargs=3, metavar=("MESSAGES", "NPZ", "PACKAGE_VERSION"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.decode:
        write_decoded(*args.decode)
        return 0
    from importlib.metadata import version

    os.makedirs(args.out, exist_ok=True)
    for scene in SCENES:
        for generation, package_version in GENERATIONS.items():
            path = messages_path(scene, generation, args.out)
            with open(path, "wb") as f:
                f.write(pack_messages(standin_messages(scene, package_version)))
            out = decoded_path(scene, generation, args.out)
            python = sys.executable if generation == "2x" else args.ml11_python
            env = dict(os.environ, PYTHONPATH=ROOT)
            subprocess.run(
                [python, os.path.abspath(__file__), "--decode", path, out, package_version], check=True, env=env
            )
            expected = DECODERS[generation][1]
            got = str(np.load(out)["mlagents_envs_version"])
            if got != expected:
                raise SystemExit(f"{out}: decoded with mlagents-envs {got}, expected {expected}")
            print(f"{scene} {generation}: {os.path.getsize(path)} B of messages, {os.path.getsize(out)} B decoded")
    print(f"made with {sys.executable} (mlagents-envs {version('mlagents_envs')}) and {args.ml11_python}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
