"""Multicast ids, subscription patterns and the receiver index (docs/wire.md). Pure module.

multicast id = ``<providerParticipantId>/<broadcastName>[/<partition>...]``. A publisher's
partitions are plain names (letters, digits, ``_``, ``-``, ``.``); a subscriber's may also be ``+``
(exactly one level) or, last only, ``*`` (any remaining levels, including none).
"""

from __future__ import annotations

import re
from typing import Final

from pyjoynr.runtime.errors import ProtocolError

__all__ = [
    "MulticastError",
    "MulticastReceivers",
    "make_multicast_id",
    "matches",
    "to_mqtt_topic",
]

_NAME: Final = re.compile(r"[A-Za-z0-9_\-.]+")


class MulticastError(ProtocolError):
    """A multicast id or subscription pattern is malformed; the message says why."""

    reason = "bad-multicast-id"


def _check_prefix(provider_participant_id: str, broadcast_name: str) -> None:
    if not provider_participant_id or "/" in provider_participant_id:
        raise MulticastError(f"provider participantId {provider_participant_id!r} cannot "
                             "carry a multicast (empty or contains '/')")
    if not _NAME.fullmatch(broadcast_name):
        raise MulticastError(f"broadcast name {broadcast_name!r} is not a plain name")


def make_multicast_id(
    provider_participant_id: str,
    broadcast_name: str,
    partitions: list[str] | tuple[str, ...] = (),
    *,
    for_subscription: bool = False,
) -> str:
    """Build (and check) a multicast id, or a subscription pattern with ``for_subscription``."""
    _check_prefix(provider_participant_id, broadcast_name)
    for i, partition in enumerate(partitions):
        if type(partition) is not str:
            raise MulticastError(f"partition {partition!r} is not a string")
        if for_subscription and partition == "+":
            continue
        if for_subscription and partition == "*":
            if i != len(partitions) - 1:
                raise MulticastError("the '*' partition is only allowed last")
            continue
        if not _NAME.fullmatch(partition):
            raise MulticastError(f"partition {partition!r} is not a plain name")
    return "/".join((provider_participant_id, broadcast_name, *partitions))


def matches(pattern: str, multicast_id: str) -> bool:
    """Whether a published ``multicast_id`` matches a subscription ``pattern``."""
    want = pattern.split("/")
    have = multicast_id.split("/")
    if len(want) < 2 or want[:2] != have[:2]:
        return False
    for i in range(2, len(want)):
        if want[i] == "*":
            return True
        if i >= len(have) or (want[i] != "+" and want[i] != have[i]):
            return False
    return len(have) == len(want)


def to_mqtt_topic(pattern: str) -> str:
    """The MQTT topic filter of a subscription pattern (a trailing ``*`` becomes ``#``)."""
    return pattern[:-1] + "#" if pattern.endswith("/*") else pattern


class MulticastReceivers:
    """Which participants receive which multicast patterns.

    Patterns are grouped by their ``provider/broadcast`` prefix, so a publication is only
    matched against the patterns of its own broadcast.
    """

    def __init__(self) -> None:
        self._by_pattern: dict[str, set[str]] = {}
        self._by_prefix: dict[str, set[str]] = {}

    @staticmethod
    def _prefix(multicast_id: str) -> str:
        first = multicast_id.find("/")
        second = multicast_id.find("/", first + 1)
        return multicast_id if second < 0 else multicast_id[:second]

    def add(self, pattern: str, receiver: str) -> bool:
        """Add a receiver; True when the pattern had no receiver before."""
        receivers = self._by_pattern.get(pattern)
        if receivers is None:
            self._by_pattern[pattern] = {receiver}
            self._by_prefix.setdefault(self._prefix(pattern), set()).add(pattern)
            return True
        receivers.add(receiver)
        return False

    def remove(self, pattern: str, receiver: str) -> bool:
        """Remove a receiver; True when the pattern has no receiver left."""
        receivers = self._by_pattern.get(pattern)
        if receivers is None or receiver not in receivers:
            return False
        receivers.discard(receiver)
        if receivers:
            return False
        del self._by_pattern[pattern]
        prefix = self._prefix(pattern)
        patterns = self._by_prefix[prefix]
        patterns.discard(pattern)
        if not patterns:
            del self._by_prefix[prefix]
        return True

    def remove_receiver(self, receiver: str) -> list[str]:
        """Remove a receiver from every pattern; returns the patterns left without receivers."""
        emptied = []
        for pattern in [p for p, r in self._by_pattern.items() if receiver in r]:
            if self.remove(pattern, receiver):
                emptied.append(pattern)
        return emptied

    def receivers_for(self, multicast_id: str) -> set[str]:
        """Every receiver of a pattern that matches the published ``multicast_id``."""
        found: set[str] = set()
        for pattern in self._by_prefix.get(self._prefix(multicast_id), ()):
            if pattern == multicast_id or matches(pattern, multicast_id):
                found |= self._by_pattern[pattern]
        return found

    def patterns(self) -> dict[str, set[str]]:
        return {p: set(r) for p, r in self._by_pattern.items()}

    def __len__(self) -> int:
        return len(self._by_pattern)
