"""Trajectories in, policies out: settings, policy, PPO, trainer threads, checkpoints, CLI.

``envs`` is imported first on purpose: it lets mlagents_envs' generated protocol modules
load under the current protobuf, which must happen before anything imports
``mlagents_envs.side_channel`` or ``mlagents_envs.environment``.
"""

import envs  # noqa: F401  (must precede every mlagents_envs protocol import)
