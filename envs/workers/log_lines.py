"""One log line per event, in the run's format, from the main process and from every worker.

mlagents_envs gives each of its loggers its own stdout handler and still lets records reach
the root logger, so each of its lines ("Connected to Unity environment ...") printed twice,
and a worker process printed in its own format whatever ``--debug`` said. Here the root
handler alone prints, and workers get the parent's level and format.
"""

from __future__ import annotations

import logging
from typing import TextIO

import attrs

PLAIN_FORMAT = "[%(levelname)s] %(message)s"
DEBUG_FORMAT = "%(asctime)s %(levelname)s [%(filename)s:%(lineno)d] %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"


@attrs.frozen
class LogFormat:
    """What a process logs and how (picklable: sent to worker processes)."""

    level: int = logging.INFO
    fmt: str = PLAIN_FORMAT

    @staticmethod
    def for_debug(debug: bool) -> LogFormat:
        return LogFormat(logging.DEBUG, DEBUG_FORMAT) if debug else LogFormat()

    @staticmethod
    def current() -> LogFormat:
        """This process's root level and the format of its first handler (default: plain INFO)."""
        root = logging.getLogger()
        formatter = root.handlers[0].formatter if root.handlers else None
        fmt = formatter._fmt if formatter is not None and formatter._fmt else PLAIN_FORMAT
        return LogFormat(root.level if root.level != logging.NOTSET else logging.INFO, fmt)


def log_to(stream: TextIO, log_format: LogFormat) -> None:
    """Make one handler on ``stream`` the root's only one, and the only one that prints
    mlagents_envs' lines."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(log_format.fmt, DATE_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(log_format.level)
    import mlagents_envs.environment  # noqa: F401 - creates mlagents_envs' loggers

    for name, existing in list(logging.Logger.manager.loggerDict.items()):
        if name.startswith("mlagents_envs") and isinstance(existing, logging.Logger):
            existing.handlers.clear()
