"""MA-POCA (``trainer_type: poca``): the algorithm, its group buffer and its centralised critic.

May import what ``trainers.ppo`` may, and ``trainers.ppo`` (its losses, buffer and on-policy parts).
"""
