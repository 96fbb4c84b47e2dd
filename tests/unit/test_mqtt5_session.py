"""transports.mqtt.mqtt5.session: packet ids, the in-flight window, resend order, keep-alive."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.transports.mqtt.mqtt5.session import (
    MAX_PACKET_ID,
    KeepAlive,
    Outbound,
    PacketIdsExhausted,
    Session,
)


def item(n: int) -> Outbound:
    return Outbound(b"\x00\x01t", str(n).encode(), b"\x00", token=n)


def test_window_holds_receive_maximum_and_releases_in_order():
    session = Session(receive_maximum=2)
    assert [session.publish(item(i)) for i in range(5)] == [True, True, False, False, False]
    first, second = session.inflight
    done, released = session.acknowledged(second)
    assert done.token == 1
    assert [r.token for r in released] == [2]
    done, released = session.acknowledged(first)
    assert done.token == 0 and [r.token for r in released] == [3]
    assert [i.token for i in session.inflight.values()] == [2, 3]
    assert [i.token for i in session.waiting] == [4]


def test_a_publish_never_overtakes_one_that_waits():
    session = Session(receive_maximum=1)
    session.publish(item(0))
    session.publish(item(1))
    (pid,) = session.inflight
    session.acknowledged(pid)
    # room now, but 1 went out first
    assert session.publish(item(2)) is False
    assert [i.token for i in session.waiting] == [2]


def test_unknown_acknowledgement():
    session = Session()
    assert session.acknowledged(77) == (None, [])


def test_packet_ids_skip_those_in_use_and_wrap():
    session = Session()
    session._next_id = MAX_PACKET_ID - 1
    ids = [session.request(i) for i in range(3)]
    assert ids == [MAX_PACKET_ID - 1, MAX_PACKET_ID, 1]
    session.publish(item(0))
    assert session.inflight.keys() == {2}
    session._next_id = MAX_PACKET_ID  # in use: skipped
    assert session.request("x") == 3
    assert session.answered(ids[0]) == 0
    with pytest.raises(KeyError):
        session.answered(ids[0])


def test_packet_ids_exhausted():
    session = Session()
    for i in range(MAX_PACKET_ID):
        session.request(i)
    with pytest.raises(PacketIdsExhausted):
        session.request("one too many")


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 50)), max_size=200),
       st.integers(1, 8))
def test_window_invariants(steps, receive_maximum):
    """Random publishes and acknowledgements: ids unique and non-zero, never more than the
    window in flight, every publish acknowledged at most once, order kept."""
    session = Session(receive_maximum)
    n = 0
    sent: list[int] = []  # tokens in the order they went out
    acked: set[int] = set()
    for publish, choice in steps:
        if publish:
            if session.publish(item(n)):
                sent.append(n)
            n += 1
        elif session.inflight:
            pid = list(session.inflight)[choice % len(session.inflight)]
            done, released = session.acknowledged(pid)
            assert done is not None and done.token not in acked
            acked.add(done.token)
            sent += [r.token for r in released]
        assert len(session.inflight) <= receive_maximum
        assert 0 not in session.inflight
        assert all(pid == i.packet_id for pid, i in session.inflight.items())
    assert sent == sorted(sent) == list(range(len(sent)))
    assert sorted([*acked, *(i.token for i in session.inflight.values()),
                   *(i.token for i in session.waiting)]) == list(range(n))


def test_abandon_returns_everything_in_order():
    session = Session(receive_maximum=1)
    for i in range(3):
        session.publish(item(i))
    assert [i.token for i in session.abandon()] == [0, 1, 2]
    assert not session.inflight and not session.waiting


def test_keepalive_pings_when_idle_and_declares_a_silent_server_dead():
    k = KeepAlive(10, now=0)
    assert k.poll(5) == (None, 5)
    k.sent(8)
    assert k.poll(12) == (None, 6)
    assert k.poll(18) == ("ping", 10)
    assert k.poll(20) == (None, 8)
    k.received(21)  # the PINGRESP
    assert k.poll(21) == (None, 7)
    assert k.poll(28)[0] == "ping"
    assert k.poll(38) == ("dead", float("inf"))


def test_keepalive_off():
    assert KeepAlive(0, now=0).poll(1e9) == (None, float("inf"))


def test_publish_again_keeps_a_free_id_and_falls_back_to_a_new_one():
    session = Session(receive_maximum=3)
    session.start_ids_at(8)  # above the ids that go out again
    again = [Outbound(b"t", b"a", b""), Outbound(b"t", b"b", b"")]
    assert session.publish_again(again[0], 5) is True and again[0].packet_id == 5
    assert session.publish_again(again[1], 7) is True and again[1].packet_id == 7
    taken = Outbound(b"t", b"c", b"")
    assert session.publish_again(taken, 5) is False  # 5 is in use: a new publish, a new id
    assert taken.packet_id == 8 and list(session.inflight) == [5, 7, 8]
    full = Outbound(b"t", b"d", b"")
    assert session.publish_again(full, 9) is False  # no room: it waits, as a new one
    assert full.packet_id == 0 and list(session.waiting) == [full]
    _, released = session.acknowledged(5)
    assert released == [full] and full.packet_id == 9  # (the next new id)
    assert session.publish_again(Outbound(b"t", b"e", b""), 0) is False  # 0 is no id


def test_start_ids_at_wraps_out_of_range_to_one():
    session = Session()
    session.start_ids_at(65_536)
    assert session.request("s") == 1
