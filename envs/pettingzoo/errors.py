"""The one error a PettingZoo environment source raises for what the user asked for."""

from __future__ import annotations


class PettingZooEnvError(ValueError):
    """A PettingZoo environment cannot be used: module not found or failing to import, no
    ``env``/``parallel_env`` in it, pettingzoo not installed, bad ``env_kwargs``, agents of one
    behavior with different spaces, a space we cannot map, an environment breaking the
    PettingZoo API. The message starts with ``pettingzoo:<target>:`` so it is actionable on
    its own."""
