"""Reward signals (``reward_signals:`` in a behavior's settings): the ``RewardSignal`` interface
and extrinsic (``base``), curiosity, RND, GAIL, their factory, and behavioral cloning, which
trains beside them on demonstrations; ``learner``, the set-up every algorithm shares around them
(the policy, the signals' value streams, cloning). A new signal is a module here and a line in
``factory``.

May import: ``trainers.exceptions``, ``trainers.seeding``, ``trainers.settings``,
``trainers.networks``, ``trainers.files``.
"""
