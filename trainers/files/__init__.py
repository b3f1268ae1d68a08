"""What reads and writes files: checkpoints (``--resume``, ``--initialize-from``), ML-Agents
checkpoint import, the ONNX export Unity runs, and ``.demo`` demonstrations.

May import: ``trainers.exceptions``, ``trainers.seeding``, ``trainers.settings``,
``trainers.networks``.
"""
