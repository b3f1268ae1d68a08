"""Test-wide set-up."""

# mlagents_envs' generated protocol modules load under the current protobuf only once the
# import hook of ``envs`` is installed; test modules import mlagents_envs directly.
import envs  # noqa: F401
