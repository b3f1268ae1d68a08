"""SAC (``trainer_type: sac``): the algorithm, its maths, its Q networks and the replay buffer.

May import what ``trainers.ppo`` may (not ``trainers.ppo`` itself).
"""
