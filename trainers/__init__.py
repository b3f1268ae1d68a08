"""Trajectories in, policies out.

One folder per concept, so that adding an algorithm or a reward signal means one folder:

- ``settings``: the run configuration (ML-Agents' YAML schema, checked before any work) and
  hyperparameter schedules;
- ``networks``: encoders, the normaliser, actor and critic, attention, conditioning,
  distributions, recurrent sequences and ``TorchPolicy``;
- ``files``: checkpoints, ML-Agents checkpoint import, ONNX export, ``.demo`` files;
- ``reward_signals``: extrinsic, curiosity, RND, GAIL, behavioral cloning and their factory,
  and ``Learner``, the set-up (policy, signals, cloning) every algorithm shares;
- ``ppo``, ``poca``, ``sac``: each algorithm with its maths, buffer and networks;
- ``loop``: the trainer loop, self-play, the trainer-type registry, the device choice;
- ``exceptions`` and ``seeding``: the errors and random streams everything shares.

Imports go down that list, never up (``tests/test_layout.py`` checks it; each folder's
``__init__`` says what it may import).
"""
