"""The errors agents-learn raises on purpose.

Each subclasses the matching built-in so callers that only know Python's exceptions still
catch them; the CLI turns any of them into a one-line message and a non-zero exit (the
traceback only with ``--debug``).
"""


class AgentsLearnError(Exception):
    """Base of every error raised on purpose; its message is meant for the user as is."""


class ConfigError(AgentsLearnError, ValueError):
    """A run configuration (YAML or CLI) is malformed, unknown, or inconsistent."""


class TrainerError(AgentsLearnError, RuntimeError):
    """A trainer failed while training; the run saves what it can and stops."""


class UnknownTrainerTypeError(ConfigError):
    """A behavior names a trainer type that no built-in trainer or plugin provides."""


class CheckpointError(AgentsLearnError, OSError):
    """A checkpoint or results folder cannot be read, written, or resumed from."""


class RunEnvironmentError(AgentsLearnError, RuntimeError):
    """An environment worker could not be started, crashed past its restart budget, or hung."""
