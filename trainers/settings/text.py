"""Bounded text for error messages: a configuration value or key is shown by at most
``LIMIT`` characters, however large the value (a YAML alias bomb expands to billions of items;
``repr`` of it alone would take gigabytes)."""

from __future__ import annotations

import reprlib
from typing import Any

LIMIT = 80


def _repr() -> reprlib.Repr:
    r = reprlib.Repr()
    r.maxlevel = 3
    r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdeque = 8
    r.maxdict = 6
    r.maxstring = r.maxother = r.maxlong = LIMIT
    return r


def shorten(text: str, limit: int = LIMIT) -> str:
    """``text`` cut to ``limit`` characters, ending in ``...`` when cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def short_repr(value: Any, limit: int = LIMIT) -> str:
    """``repr(value)`` in at most ``limit`` characters, at a cost bounded whatever the value's
    size (nested containers are elided, not walked)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        return f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
    return shorten(_repr().repr(value), limit)
