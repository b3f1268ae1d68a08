"""PPO (``trainer_type: ppo``): the algorithm, its maths (GAE, clipped surrogate, value loss),
the update buffer, and what on-policy learners share (schedules, minibatches, the checkpoint
layout), which POCA uses too.

May import: ``trainers.exceptions``, ``trainers.seeding``, ``trainers.settings``,
``trainers.networks``, ``trainers.files``, ``trainers.reward_signals``.
"""
