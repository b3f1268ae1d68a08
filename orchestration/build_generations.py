"""One run, one generation of Unity builds.

Package 2.x builds send images channel-last and 3.x/4.x builds channel-first; each is read at
the edge (``envs.unity.images``), so a run could take both, but a policy trained on both is
exported for neither user's project in particular and a mixed fleet is almost always a stale
build left in a folder. The env managers refuse it as the second build's behaviors arrive,
naming both versions.
"""

from __future__ import annotations

from envs.unity.versions import generation_name
from envs.workers.records import SpecRecord
from trainers.exceptions import RunEnvironmentError


class BuildGenerations:
    """The Unity package each worker's build reported, checked against the run's first."""

    def __init__(self) -> None:
        self._first: tuple[int, str] | None = None  # worker id, package version

    def check(self, worker_id: int, behavior_id: str, spec: SpecRecord) -> None:
        """RunEnvironmentError if ``spec`` came from a build of another generation than the
        run's first Unity build."""
        version = spec.unity_package
        if not version:
            return
        if self._first is None:
            self._first = (worker_id, version)
            return
        first_worker, first_version = self._first
        if generation_name(version) != generation_name(first_version):
            raise RunEnvironmentError(
                f"worker {worker_id}'s build ({behavior_id}) reports Unity ML-Agents package {version} "
                f"({generation_name(version)}), worker {first_worker}'s reports {first_version} "
                f"({generation_name(first_version)}): their images are laid out differently; build every "
                "environment of a run with one package version"
            )
