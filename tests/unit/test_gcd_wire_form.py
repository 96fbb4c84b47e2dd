"""The GCD's lookups sent as messages answer from the index rows' wire form made directly
(gcd.provider._wire_of_row): it must be what the typed entry converts to, byte for byte once
packed, for any row. A field added to GlobalDiscoveryEntry (or its parts) without the direct
form knowing fails here."""

from __future__ import annotations

import json

import msgpack
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.gcd.params import found_of
from pyjoynr.gcd.provider import _address_json, _from_row, _wire_of_row
from pyjoynr.gcd.store import StoredEntry
from pyjoynr.programming.system_interfaces import address_to_json
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.interface import to_wire
from pyjoynr.runtime.joynr_json import compact_json

texts = st.text(max_size=12)
ints = st.integers(-(2**63), 2**63 - 1)
custom = st.lists(st.tuples(texts, texts), max_size=3).map(
    lambda pairs: json.dumps([list(p) for p in pairs]))

versions = st.integers(-(2**31), 2**31 - 1)
#: (SQLite hands back 0 / 1 for a boolean column: the wire form keeps what the row holds)
flags = st.booleans() | st.integers(0, 1)

rows = st.builds(
    StoredEntry, gbid=texts, participant_id=texts, domain=texts, interface_name=texts,
    major_version=versions, minor_version=versions, priority=ints | st.booleans(),
    scope=st.sampled_from(["GLOBAL", "LOCAL"]), supports_on_change=flags,
    custom_parameters=custom | st.just("[]"), last_seen_ms=ints, expiry_ms=ints,
    public_key_id=texts, topic=texts, cluster_controller_id=texts)


@given(rows)
def test_the_direct_wire_form_is_the_typed_entrys(entry: StoredEntry) -> None:
    found = found_of(entry)
    direct, typed = _wire_of_row(found), to_wire(_from_row(found))
    assert direct == typed
    pack = msgpack.Packer(use_bin_type=True).pack
    assert pack(direct) == pack(typed)




@given(texts, texts)
def test_a_looked_up_entrys_address_is_the_serialized_mqtt_address(gbid: str,
                                                                   topic: str) -> None:
    """The GCD writes a row's address string directly (gcd.provider._address_json): it is
    what address_to_json writes of that MqttAddress (compact JSON of its wire form), for any
    GBID and topic text."""
    wire_form = {"_typeName": "joynr.system.RoutingTypes.MqttAddress", "brokerUri": gbid,
                 "topic": topic}
    assert _address_json(gbid, topic) == compact_json(wire_form)


def test_the_direct_address_of_a_valid_topic_is_address_to_json() -> None:
    for gbid, topic in (("joynrdefaultgbid", "joynr/cc/cc-1"), ("gbid-ü", 'a"b\\c/é')):
        assert _address_json(gbid, topic) == address_to_json(MqttAddress(gbid, topic))
