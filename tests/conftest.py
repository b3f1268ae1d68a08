"""Test-wide set-up."""

import os

# The suite means the CPU: on a machine with a GPU, runs would otherwise train where the `auto`
# device's measurement says (differently from machine to machine) and tests of CPU behaviour
# would run CUDA kernels. Set before torch looks for a GPU; CLI subprocesses inherit it.
# Tests of GPU behaviour (tests/test_device_choice.py) start processes with the GPU visible again.
# What was hidden is kept in the environment: this module may be imported twice (as conftest
# and as tests.conftest), and the second time the GPU is already hidden.
HIDDEN_CUDA_KEY = "AGENTS_LEARN_TESTS_HIDDEN_CUDA_VISIBLE_DEVICES"
UNSET = "<unset>"
os.environ.setdefault(HIDDEN_CUDA_KEY, os.environ.get("CUDA_VISIBLE_DEVICES", UNSET))
os.environ["CUDA_VISIBLE_DEVICES"] = ""

import torch  # noqa: E402

# mlagents_envs' generated protocol modules load under the current protobuf only once the
# import hook of ``envs`` is installed; test modules import mlagents_envs directly.
import envs  # noqa: E402, F401

# As a run does (orchestration.run): the test networks are small, and a second thread only adds
# latency (much of it when the other core is busy, as on CI's two cores).
torch.set_num_threads(1)
