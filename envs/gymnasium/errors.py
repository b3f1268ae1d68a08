"""The one error a Gymnasium environment source raises for what the user asked for."""

from __future__ import annotations


class GymnasiumEnvError(ValueError):
    """A Gymnasium environment cannot be used: unknown id, module that fails to import, gymnasium
    not installed, bad ``env_kwargs``, a space we cannot map, an action mask of the wrong size.
    The message starts with ``gymnasium:<env id>:`` so it is actionable on its own."""
