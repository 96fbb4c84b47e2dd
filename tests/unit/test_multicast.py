"""Multicast ids, subscription patterns and the receiver index (runtime.multicast)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.runtime.multicast import (
    MulticastError,
    MulticastReceivers,
    make_multicast_id,
    matches,
    to_mqtt_topic,
)

# ---------------------------------------------------------------------- make_multicast_id


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("prov", "bcast", ()), "prov/bcast"),
        (("prov", "bcast", ["eu"]), "prov/bcast/eu"),
        (("prov", "bcast", ("eu", "de", "munich")), "prov/bcast/eu/de/munich"),
        (("6b1f-4c2e-uuid", "new_station", ["A_b-9"]), "6b1f-4c2e-uuid/new_station/A_b-9"),
        (("prov", "Bcast_2-x", ["0"]), "prov/Bcast_2-x/0"),
    ],
)
def test_make_multicast_id(args: tuple[str, str, Any], expected: str) -> None:
    assert make_multicast_id(*args) == expected
    # every publisher id is also a valid subscription pattern
    assert make_multicast_id(*args, for_subscription=True) == expected


@pytest.mark.parametrize("provider", ["", "a/b", "/", "prov/", "/prov"])
def test_bad_provider_participant_id(provider: str) -> None:
    with pytest.raises(MulticastError, match="provider participantId"):
        make_multicast_id(provider, "bcast")
    with pytest.raises(MulticastError, match="provider participantId"):
        make_multicast_id(provider, "bcast", ["+"], for_subscription=True)


@pytest.mark.parametrize("name", ["", "a/b", "a b", "+", "*", "#", "a+", "bcast\n", "ümlaut",
                                  "a*b"])
def test_bad_broadcast_name(name: str) -> None:
    with pytest.raises(MulticastError, match="broadcast name"):
        make_multicast_id("prov", name)
    with pytest.raises(MulticastError, match="broadcast name"):
        make_multicast_id("prov", name, for_subscription=True)


@pytest.mark.parametrize("partition", ["", "a/b", "a b", "#", "a+", "+a", "a*", "ü", "x\n",
                                       "\t"])
def test_bad_partition_name(partition: str) -> None:
    with pytest.raises(MulticastError, match="is not a plain name"):
        make_multicast_id("prov", "bcast", ["eu", partition])
    with pytest.raises(MulticastError, match="is not a plain name"):
        make_multicast_id("prov", "bcast", ["eu", partition], for_subscription=True)


@pytest.mark.parametrize("partition", [None, 5, b"eu", ["eu"]], ids=repr)
def test_partition_not_a_string(partition: Any) -> None:
    with pytest.raises(MulticastError, match="is not a string"):
        make_multicast_id("prov", "bcast", [partition])
    with pytest.raises(MulticastError, match="is not a string"):
        make_multicast_id("prov", "bcast", [partition], for_subscription=True)


@pytest.mark.parametrize("partitions", [["+"], ["eu", "+"], ["*"], ["eu", "*"], ["+", "*"]])
def test_wildcards_only_in_subscriptions(partitions: list[str]) -> None:
    with pytest.raises(MulticastError, match="is not a plain name"):
        make_multicast_id("prov", "bcast", partitions)
    expected = "/".join(["prov", "bcast", *partitions])
    assert make_multicast_id("prov", "bcast", partitions, for_subscription=True) == expected


@pytest.mark.parametrize("partitions", [["*", "eu"], ["*", "*"], ["*", "+"], ["eu", "*", "de"]])
def test_star_only_last(partitions: list[str]) -> None:
    with pytest.raises(MulticastError, match=r"'\*' partition is only allowed last"):
        make_multicast_id("prov", "bcast", partitions, for_subscription=True)


def test_plus_may_be_anywhere_in_a_subscription() -> None:
    assert make_multicast_id("p", "b", ["+", "x", "+"], for_subscription=True) == "p/b/+/x/+"
    assert make_multicast_id("p", "b", ["+", "+", "*"], for_subscription=True) == "p/b/+/+/*"


# ---------------------------------------------------------------------- matches

MATCHES = [
    # exact
    ("p/b", "p/b", True),
    ("p/b/eu", "p/b/eu", True),
    ("p/b/eu/de", "p/b/eu/de", True),
    ("p/b/eu", "p/b/us", False),
    ("p/b/eu", "p/b", False),
    ("p/b", "p/b/eu", False),
    ("p/b/eu", "p/b/eu/de", False),
    ("p/b/eu/de", "p/b/eu", False),
    # '+': exactly one level
    ("p/b/+", "p/b/eu", True),
    ("p/b/+", "p/b/us", True),
    ("p/b/+", "p/b", False),
    ("p/b/+", "p/b/eu/de", False),
    ("p/b/+/de", "p/b/eu/de", True),
    ("p/b/+/de", "p/b/eu/fr", False),
    ("p/b/eu/+", "p/b/eu/de", True),
    ("p/b/eu/+", "p/b/us/de", False),
    ("p/b/+/+", "p/b/eu/de", True),
    ("p/b/+/+", "p/b/eu", False),
    # '*': zero or more levels
    ("p/b/*", "p/b", True),
    ("p/b/*", "p/b/eu", True),
    ("p/b/*", "p/b/eu/de/munich", True),
    ("p/b/eu/*", "p/b/eu", True),
    ("p/b/eu/*", "p/b/eu/de", True),
    ("p/b/eu/*", "p/b/eu/de/x/y", True),
    ("p/b/eu/*", "p/b/us/de", False),
    ("p/b/eu/*", "p/b", False),
    ("p/b/+/*", "p/b/eu", True),
    ("p/b/+/*", "p/b/eu/de/x", True),
    ("p/b/+/*", "p/b", False),
    # other provider or broadcast
    ("p/b", "q/b", False),
    ("p/b", "p/c", False),
    ("p/b/*", "q/b/eu", False),
    ("p/b/*", "p/c", False),
    ("p/b/+", "p/bb/eu", False),
    ("p/b/*", "pp/b", False),
    ("p/+", "p/b", False),  # the broadcast name is not a partition
    ("p/*", "p/b", False),
    ("+/b", "p/b", False),  # nor is the provider
    # malformed patterns match nothing
    ("p", "p", False),
    ("", "", False),
]


@pytest.mark.parametrize(("pattern", "multicast_id", "expected"), MATCHES)
def test_matches(pattern: str, multicast_id: str, expected: bool) -> None:
    assert matches(pattern, multicast_id) is expected


_names = st.from_regex(r"[A-Za-z0-9_\-]{1,4}", fullmatch=True)


@given(provider=_names, name=_names, partitions=st.lists(_names, max_size=4), data=st.data())
def test_matches_agrees_with_a_level_by_level_reading(provider: str, name: str,
                                                      partitions: list[str],
                                                      data: st.DataObject) -> None:
    published = make_multicast_id(provider, name, partitions)
    # a pattern made from the published partitions, some replaced by '+', maybe cut by '*'
    pattern_parts = [data.draw(st.sampled_from([p, "+"])) for p in partitions]
    cut = data.draw(st.integers(min_value=0, max_value=len(pattern_parts)))
    star = data.draw(st.booleans())
    if star:
        pattern_parts = [*pattern_parts[:cut], "*"]
    pattern = make_multicast_id(provider, name, pattern_parts, for_subscription=True)
    assert matches(pattern, published)
    # one level more or less breaks a pattern without '*'
    if not star:
        assert not matches(pattern, published + "/extra")
        if partitions:
            assert not matches(pattern, make_multicast_id(provider, name, partitions[:-1]))
    assert not matches(pattern, make_multicast_id(provider + "x", name, partitions))
    assert not matches(pattern, make_multicast_id(provider, name + "x", partitions))


# ---------------------------------------------------------------------- to_mqtt_topic


@pytest.mark.parametrize(
    ("pattern", "topic"),
    [
        ("p/b", "p/b"),
        ("p/b/eu", "p/b/eu"),
        ("p/b/+", "p/b/+"),
        ("p/b/*", "p/b/#"),
        ("p/b/eu/*", "p/b/eu/#"),
        ("p/b/+/*", "p/b/+/#"),
        ("p/b/+/de", "p/b/+/de"),
    ],
)
def test_to_mqtt_topic(pattern: str, topic: str) -> None:
    assert to_mqtt_topic(pattern) == topic


# ---------------------------------------------------------------------- MulticastReceivers


def test_add_reports_the_first_receiver_of_a_pattern() -> None:
    receivers = MulticastReceivers()
    assert receivers.add("p/b/eu", "r1") is True
    assert receivers.add("p/b/eu", "r2") is False
    assert receivers.add("p/b/eu", "r1") is False  # again: no change
    assert receivers.add("p/b/+", "r1") is True  # another pattern of the same broadcast
    assert receivers.add("q/b", "r1") is True
    assert len(receivers) == 3
    assert receivers.patterns() == {"p/b/eu": {"r1", "r2"}, "p/b/+": {"r1"}, "q/b": {"r1"}}


def test_remove_reports_the_last_receiver_of_a_pattern() -> None:
    receivers = MulticastReceivers()
    receivers.add("p/b/eu", "r1")
    receivers.add("p/b/eu", "r2")
    assert receivers.remove("p/b/eu", "r1") is False  # r2 is left
    assert receivers.remove("p/b/eu", "r1") is False  # not a receiver any more
    assert receivers.remove("p/b/eu", "nobody") is False
    assert receivers.remove("p/b/other", "r2") is False  # unknown pattern
    assert receivers.patterns() == {"p/b/eu": {"r2"}}
    assert receivers.remove("p/b/eu", "r2") is True
    assert len(receivers) == 0
    assert receivers.patterns() == {}
    assert receivers.receivers_for("p/b/eu") == set()
    assert receivers.remove("p/b/eu", "r2") is False
    # a pattern can be added again after it was emptied
    assert receivers.add("p/b/eu", "r3") is True
    assert receivers.receivers_for("p/b/eu") == {"r3"}


def test_remove_receiver_returns_the_patterns_it_emptied() -> None:
    receivers = MulticastReceivers()
    receivers.add("p/b/eu", "gone")
    receivers.add("p/b/+", "gone")
    receivers.add("p/b/+", "stays")
    receivers.add("q/c/*", "gone")
    receivers.add("q/c", "stays")
    assert sorted(receivers.remove_receiver("gone")) == ["p/b/eu", "q/c/*"]
    assert receivers.patterns() == {"p/b/+": {"stays"}, "q/c": {"stays"}}
    assert receivers.remove_receiver("gone") == []
    assert receivers.remove_receiver("unknown") == []
    assert receivers.receivers_for("p/b/eu") == {"stays"}
    assert receivers.receivers_for("q/c/x") == set()
    assert sorted(receivers.remove_receiver("stays")) == ["p/b/+", "q/c"]
    assert len(receivers) == 0


def test_receivers_for_matches_patterns_of_the_same_broadcast_only() -> None:
    receivers = MulticastReceivers()
    receivers.add("p/b", "exact-none")
    receivers.add("p/b/eu/de", "exact")
    receivers.add("p/b/+/de", "plus")
    receivers.add("p/b/eu/*", "star-eu")
    receivers.add("p/b/*", "star-all")
    receivers.add("p/b/+", "one-level")
    receivers.add("p/c/*", "other-broadcast")
    receivers.add("q/b/*", "other-provider")

    assert receivers.receivers_for("p/b/eu/de") == {"exact", "plus", "star-eu", "star-all"}
    assert receivers.receivers_for("p/b/us/de") == {"plus", "star-all"}
    assert receivers.receivers_for("p/b/eu") == {"star-eu", "star-all", "one-level"}
    assert receivers.receivers_for("p/b") == {"exact-none", "star-all"}
    assert receivers.receivers_for("p/b/eu/de/x") == {"star-eu", "star-all"}
    assert receivers.receivers_for("p/c") == {"other-broadcast"}
    assert receivers.receivers_for("q/b/x/y") == {"other-provider"}
    assert receivers.receivers_for("r/b") == set()
    assert receivers.receivers_for("p/bb/eu") == set()


def test_receivers_for_returns_a_copy() -> None:
    receivers = MulticastReceivers()
    receivers.add("p/b/eu", "r1")
    found = receivers.receivers_for("p/b/eu")
    found.add("intruder")
    assert receivers.receivers_for("p/b/eu") == {"r1"}
    snapshot = receivers.patterns()
    snapshot["p/b/eu"].add("intruder")
    assert receivers.patterns() == {"p/b/eu": {"r1"}}


def test_one_receiver_of_several_matching_patterns_is_found_once() -> None:
    receivers = MulticastReceivers()
    receivers.add("p/b/eu", "r")
    receivers.add("p/b/+", "r")
    receivers.add("p/b/*", "r")
    assert receivers.receivers_for("p/b/eu") == {"r"}
    assert receivers.remove("p/b/+", "r") is True
    assert receivers.receivers_for("p/b/eu") == {"r"}
    assert receivers.remove_receiver("r") == ["p/b/eu", "p/b/*"]
    assert receivers.receivers_for("p/b/eu") == set()


@given(st.lists(st.tuples(st.sampled_from(["add", "remove", "remove_receiver"]),
                          st.sampled_from(["p/b", "p/b/eu", "p/b/+", "p/b/*", "q/b/eu/*"]),
                          st.sampled_from(["r1", "r2", "r3"])), max_size=30))
def test_index_agrees_with_a_plain_model(ops: list[tuple[str, str, str]]) -> None:
    receivers = MulticastReceivers()
    model: dict[str, set[str]] = {}
    for op, pattern, receiver in ops:
        if op == "add":
            assert receivers.add(pattern, receiver) is (pattern not in model)
            model.setdefault(pattern, set()).add(receiver)
        elif op == "remove":
            had = receiver in model.get(pattern, set())
            emptied = had and model[pattern] == {receiver}
            assert receivers.remove(pattern, receiver) is emptied
            if had:
                model[pattern].discard(receiver)
                if not model[pattern]:
                    del model[pattern]
        else:
            expected = {p for p, r in model.items() if r == {receiver}}
            assert set(receivers.remove_receiver(receiver)) == expected
            for p in list(model):
                model[p].discard(receiver)
                if not model[p]:
                    del model[p]
        assert receivers.patterns() == model
        assert len(receivers) == len(model)
    for published in ["p/b", "p/b/eu", "p/b/us", "p/b/eu/de", "q/b/eu", "q/b/eu/x", "q/b"]:
        expected = set().union(*(r for p, r in model.items() if matches(p, published)))
        assert receivers.receivers_for(published) == expected
