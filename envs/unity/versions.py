"""Unity ML-Agents package versions, as a build reports them in its handshake."""

from __future__ import annotations


def package_generation(package_version: str) -> int:
    """The major version of a Unity package version string ("3.0.0-exp.1" -> 3; 0 if unknown)."""
    head = package_version.strip().split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def generation_name(package_version: str) -> str:
    """ "2.x" or "3.x and later" (their images are laid out differently), "" when unknown."""
    if not package_version:
        return ""
    return "3.x and later" if package_generation(package_version) >= 3 else "2.x"
