"""The system services of the cluster controller's own runtime: direct calls."""

from __future__ import annotations

from pyjoynr.cluster_controller.local_discovery import LocalDiscovery
from pyjoynr.programming.joynr_runtime import DirectoryCalls
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.router import MessageRouter

log = get_logger(__name__)


class LocalSystem(DirectoryCalls):
    """System services of the cluster controller's own runtime: direct calls."""

    def __init__(self, router: MessageRouter, discovery: LocalDiscovery) -> None:
        self.router = router
        self.discovery = discovery

    async def add_next_hop(self, participant_id: str, is_globally_visible: bool) -> None:
        return None  # the InProcess route is all the CC needs

    async def remove_next_hop(self, participant_id: str) -> None:
        return None

    async def add_multicast_receiver(self, pattern: str, subscriber: str, provider: str) -> None:
        return None  # the router's receiver index is this runtime's

    async def remove_multicast_receiver(self, pattern: str, subscriber: str, provider: str
                                        ) -> None:
        return None
