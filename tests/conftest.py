"""Test-wide set-up.

The GPU stays visible: where torch sees one, runs with no device set choose theirs (``auto``)
as a user's do, and the tests of device behaviour (tests/test_cuda.py) run. A test that means
the CPU says so (``--torch-device cpu``, ``device="cpu"``, or no GPU among the candidates).
"""

import torch

# mlagents_envs' generated protocol modules load under the current protobuf only once the
# import hook of ``envs`` is installed; test modules import mlagents_envs directly.
import envs  # noqa: F401

# As a run does (orchestration.run): the test networks are small, and a second thread only adds
# latency (much of it when the other core is busy, as on CI's two cores).
torch.set_num_threads(1)
