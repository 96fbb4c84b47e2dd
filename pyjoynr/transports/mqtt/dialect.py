"""The two frame dialects of an MQTT backend: the pure parts (no I/O).

- ``native``: this project's msgpack frame (runtime.messages), published to the address's
  topic as it is;
- ``joynr``: joynr's SMRF frame (runtime.smrf), published as joynr's cluster controllers do:
  unicast to ``<address topic>/low``, multicast to the multicast topic without suffix, every
  custom header also as an MQTT 5 user property ``c-<key>``.

A received payload tells its dialect by its first bytes (:func:`frame_dialect`): an SMRF frame
starts with its version, 1, as a little-endian uint16 (``01 00``); a native frame is a msgpack
map. What a transport writes to a topic follows the dialect that topic last spoke in
(:class:`DialectMemory`), else the backend's setting, so that answers go back in the dialect
of their request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from pyjoynr.runtime.messages import DIALECTS, JOYNR, NATIVE
from pyjoynr.runtime.smrf import CUSTOM_HEADER_PREFIX

__all__ = [
    "DIALECTS",
    "JOYNR",
    "NATIVE",
    "UNICAST_SUFFIX",
    "DialectMemory",
    "frame_dialect",
    "publish_topic",
    "user_properties",
]

#: what joynr appends to an address's topic for unicast messages (its only priority)
UNICAST_SUFFIX: Final = "/low"

#: the first two bytes of an SMRF frame: version 1 as a little-endian uint16
_SMRF_START: Final = b"\x01\x00"


def frame_dialect(payload: bytes) -> str:
    """The dialect of a received payload: ``joynr`` when it starts like an SMRF frame, else
    ``native`` (whose decoder refuses what is no msgpack map, with its own reason)."""
    return JOYNR if payload[:2] == _SMRF_START else NATIVE


def publish_topic(topic: str, dialect: str, *, multicast: bool) -> str:
    """The topic a message for ``topic`` (an address's topic, or a multicast's) is published
    to in ``dialect``."""
    if dialect == JOYNR and not multicast:
        return topic + UNICAST_SUFFIX
    return topic


def user_properties(custom_headers: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The MQTT 5 user properties joynr publishes a message with: each custom header as
    ``c-<key>``, those with an empty key or value left out."""
    return tuple((CUSTOM_HEADER_PREFIX + key, value)
                 for key, value in custom_headers.items() if key and value)


class DialectMemory:
    """The dialect each topic last spoke in, for one backend: topics that spoke another
    dialect than the backend's ``default``, at most ``bound`` of them (the one noted longest
    ago makes room for a new one). A topic not remembered speaks ``default``."""

    __slots__ = ("_topics", "bound", "default", "forgotten")

    def __init__(self, default: str, bound: int) -> None:
        if default not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, not {default!r}")
        if bound < 1:
            raise ValueError(f"bound must be >= 1, got {bound}")
        self.default = default
        self.bound = bound
        #: topics dropped to make room (for the figures)
        self.forgotten = 0
        self._topics: dict[str, str] = {}

    def note(self, topic: str, dialect: str) -> None:
        """``topic`` spoke ``dialect`` just now."""
        topics = self._topics
        if dialect == self.default:
            if topics:
                topics.pop(topic, None)
            return
        if topics.pop(topic, None) is None and len(topics) >= self.bound:
            del topics[next(iter(topics))]
            self.forgotten += 1
        topics[topic] = dialect  # (the newest last)

    def dialect_of(self, topic: str) -> str:
        """The dialect to write to ``topic`` in."""
        topics = self._topics
        return topics.get(topic, self.default) if topics else self.default

    def __len__(self) -> int:
        return len(self._topics)
