"""The trainer loop around an algorithm: the ``Algorithm`` protocol, ``Trainer`` (trajectories in,
updates, summaries, checkpoints, policies out), self-play's ``GhostTrainer``, the registry of
trainer types (built-in and plugins), and the ``auto`` device choice.

May import every other part of ``trainers``; nothing else in ``trainers`` imports it.
"""
