"""Network building blocks, shared by every algorithm: observation encoders, the running
normaliser, the actor and critic bodies and heads (``actor_critic``), attention over entities,
goal conditioning, action distributions, recurrent sequences, and ``TorchPolicy``, the acting
wrapper an env manager calls.

May import: ``trainers.exceptions``, ``trainers.seeding``, ``trainers.settings``.
"""
