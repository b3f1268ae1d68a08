"""Test doubles shared by the tests and the benchmarks (never imported by runtime packages).

- ``tests.support.standin``: a stand-in Unity player speaking the ML-Agents gRPC protocol;
  ``write_launcher(folder)`` makes it look like a Unity build to ``UnityEnvironment``.

Benchmarks import it from a checkout (they put the repository root on ``sys.path``); it is
not part of the installed distribution.
"""
