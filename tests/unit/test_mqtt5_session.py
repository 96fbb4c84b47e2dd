"""transports.mqtt5.session: packet ids, the in-flight window, resend order, keep-alive."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from transports.mqtt5.session import (
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


def test_resume_with_session_present_resends_in_flight_in_order_with_their_ids():
    session = Session(receive_maximum=3)
    for i in range(5):
        session.publish(item(i))
    ids = list(session.inflight)
    session.acknowledged(ids[1])  # 1 done; 3 goes out
    before = {i.token: i.packet_id for i in session.inflight.values()}
    again = session.resume(session_present=True, receive_maximum=4)
    assert [i.token for i in again[:3]] == [0, 2, 3]
    assert [i.packet_id for i in again[:3]] == [before[0], before[2], before[3]]
    assert [i.token for i in again[3:]] == [4]  # the window grew: the waiting one follows


def test_resume_without_session_sends_everything_again_as_new_in_order():
    session = Session(receive_maximum=2)
    for i in range(4):
        session.publish(item(i))
    session.request("subscribe")
    again = session.resume(session_present=False, receive_maximum=3)
    assert [i.token for i in again] == [0, 1, 2]
    assert [i.token for i in session.waiting] == [3]
    assert not session.requests


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
