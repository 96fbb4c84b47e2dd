"""The PUBLISH properties a session keeps per expiry interval are packed once, to the bytes
paho packs for the same properties."""

from __future__ import annotations

import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from pyjoynr.transports.mqtt.client import _PackedOnce


@pytest.mark.parametrize("expiry_s", [1, 59, 60, 127, 128, 3_600, 2**31, 2**32 - 1])
def test_packed_once_is_what_paho_packs(expiry_s: int) -> None:
    plain = Properties(PacketTypes.PUBLISH)
    plain.MessageExpiryInterval = expiry_s
    once = _PackedOnce(PacketTypes.PUBLISH)
    once.MessageExpiryInterval = expiry_s
    assert once.pack() == plain.pack()
    assert once.pack() is once.pack()  # the second time: the bytes kept
    back = Properties(PacketTypes.PUBLISH)
    back.unpack(once.pack())
    assert back.MessageExpiryInterval == expiry_s
