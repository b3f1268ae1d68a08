"""Test-wide set-up."""

import torch

# mlagents_envs' generated protocol modules load under the current protobuf only once the
# import hook of ``envs`` is installed; test modules import mlagents_envs directly.
import envs  # noqa: F401

# As a run does (orchestration.run): the test networks are small, and a second thread only adds
# latency (much of it when the other core is busy, as on CI's two cores).
torch.set_num_threads(1)
