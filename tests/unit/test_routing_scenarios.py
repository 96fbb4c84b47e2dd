"""The routing scenarios a joynr deployment lives through (providers registering, restarting and
leaving, proxies built and calling locally and across backends), one test each, on the routing
table (and, for learned replyTo routes, the rule that decides them)."""

from __future__ import annotations

from pyjoynr.runtime.addresses import (
    InProcessAddress,
    MqttAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.routing import NO_EXPIRY_MS, PutResult, RoutingEntry, RoutingTable, RuntimeKind
from pyjoynr.runtime.rules import NO_REPLY_TO, Refusal, reply_route

CC = RuntimeKind.CLUSTER_CONTROLLER
LIB = RuntimeKind.LIBJOYNR
GBID = "joynrdefaultgbid"
CC_WS = WebSocketAddress("ws", "127.0.0.1", 4242, "/")


class Skeleton:
    """Stands for the dispatcher of an in-process participant."""


def test_scenario_1_inprocess_provider_in_the_cc_registers_and_restarts():
    cc = RoutingTable(CC)
    first_run = InProcessAddress(Skeleton())
    assert cc.put("prov", first_run, is_globally_visible=False,
                  expiry_date_ms=NO_EXPIRY_MS) is PutResult.CREATED

    # restart with the same participantId (and now registered globally): replaced
    second_run = InProcessAddress(Skeleton())
    assert cc.put("prov", second_run, is_globally_visible=True,
                  expiry_date_ms=NO_EXPIRY_MS) is PutResult.REPLACED
    assert cc.get("prov") == RoutingEntry(second_run, True, NO_EXPIRY_MS, False)

    # a WebSocketClient entry (a libjoynr provider that used the id) yields to InProcess
    cc.put("prov2", WebSocketClientAddress("c1"), is_globally_visible=False, expiry_date_ms=1)
    assert cc.put("prov2", second_run, is_globally_visible=False,
                  expiry_date_ms=NO_EXPIRY_MS) is PutResult.REPLACED
    # an Mqtt entry (an old global entry discovered before re-registration) yields too
    cc.put("prov3", MqttAddress(GBID, "cc/old"), is_globally_visible=True, expiry_date_ms=1)
    assert cc.put("prov3", second_run, is_globally_visible=True,
                  expiry_date_ms=NO_EXPIRY_MS) is PutResult.REPLACED
    assert cc.participants_at(second_run) == {"prov", "prov2", "prov3"}


def test_scenario_2_websocket_provider_registers_in_its_runtime_and_in_the_cc():
    lib, cc = RoutingTable(LIB), RoutingTable(CC)
    skeleton = InProcessAddress(Skeleton())
    assert lib.put("prov", skeleton, is_globally_visible=True,
                   expiry_date_ms=NO_EXPIRY_MS) is PutResult.CREATED
    assert cc.put("prov", WebSocketClientAddress("client-a"), is_globally_visible=True,
                  expiry_date_ms=NO_EXPIRY_MS) is PutResult.CREATED

    # after a crash the provider comes back over a new connection: the stale entry is replaced
    assert cc.put("prov", WebSocketClientAddress("client-b"), is_globally_visible=True,
                  expiry_date_ms=NO_EXPIRY_MS) is PutResult.REPLACED
    assert cc.get("prov").address == WebSocketClientAddress("client-b")

    # a stale Mqtt entry (its old global entry was discovered first) is replaced
    cc.put("prov-b", MqttAddress(GBID, "cc/old"), is_globally_visible=True, expiry_date_ms=1)
    assert cc.put("prov-b", WebSocketClientAddress("client-b"), is_globally_visible=True,
                  expiry_date_ms=NO_EXPIRY_MS) is PutResult.REPLACED

    # an InProcess entry in the CC (a CC-internal provider with that id) is kept
    internal = InProcessAddress(Skeleton())
    cc.put("routing", internal, is_globally_visible=False, expiry_date_ms=NO_EXPIRY_MS)
    assert cc.put("routing", WebSocketClientAddress("client-b"), is_globally_visible=False,
                  expiry_date_ms=NO_EXPIRY_MS) is PutResult.REJECTED_PRECEDENCE
    assert cc.get("routing").address == internal


def test_scenario_3_libjoynr_proxy_found_its_own_provider_before_it_reregistered():
    lib = RoutingTable(LIB)
    # the proxy discovered the provider's old entry: reachable via the CC
    assert lib.put("prov", CC_WS, is_globally_visible=False,
                   expiry_date_ms=NO_EXPIRY_MS) is PutResult.CREATED
    # the provider registers in this runtime: InProcess replaces the WebSocket entry
    skeleton = InProcessAddress(Skeleton())
    assert lib.put("prov", skeleton, is_globally_visible=False,
                   expiry_date_ms=NO_EXPIRY_MS) is PutResult.REPLACED
    assert lib.get("prov").address == skeleton
    # and the WebSocket address cannot take it back
    assert lib.put("prov", CC_WS, is_globally_visible=False,
                   expiry_date_ms=NO_EXPIRY_MS) is PutResult.REJECTED_PRECEDENCE


def test_scenario_4_provider_unregisters():
    cc = RoutingTable(CC)
    cc.put("prov", WebSocketClientAddress("c"), is_globally_visible=False,
           expiry_date_ms=NO_EXPIRY_MS)
    assert cc.remove("prov") is True
    assert "prov" not in cc
    assert cc.participants_at(WebSocketClientAddress("c")) == set()
    assert cc.remove("prov") is False  # unknown: a no-op


def test_scenario_5_proxy_is_built():
    lib, cc = RoutingTable(LIB), RoutingTable(CC)
    proxy = InProcessAddress(Skeleton())
    assert lib.put("proxy-1", proxy, is_globally_visible=False,
                   expiry_date_ms=NO_EXPIRY_MS) is PutResult.CREATED
    assert cc.put("proxy-1", WebSocketClientAddress("client-a"), is_globally_visible=False,
                  expiry_date_ms=NO_EXPIRY_MS) is PutResult.CREATED
    # a proxy inside the CC itself only has its InProcess entry
    assert cc.put("proxy-2", InProcessAddress(Skeleton()), is_globally_visible=False,
                  expiry_date_ms=NO_EXPIRY_MS) is PutResult.CREATED


def test_scenario_6_global_provider_is_discovered():
    cc = RoutingTable(CC)
    found = MqttAddress(GBID, "cc/remote-1")
    assert cc.put("glob", found, is_globally_visible=True,
                  expiry_date_ms=10_000) is PutResult.CREATED
    # a newer lookup result with another global address replaces the global entry
    moved = MqttAddress("gbid2", "cc/remote-2")
    assert cc.put("glob", moved, is_globally_visible=True,
                  expiry_date_ms=20_000) is PutResult.REPLACED
    assert cc.get("glob") == RoutingEntry(moved, True, 20_000, False)
    # a local provider that was also found globally keeps its local entry
    local = WebSocketClientAddress("client-a")
    cc.put("loc", local, is_globally_visible=True, expiry_date_ms=NO_EXPIRY_MS)
    assert cc.put("loc", found, is_globally_visible=True,
                  expiry_date_ms=10_000) is PutResult.REJECTED_PRECEDENCE
    inproc = InProcessAddress(Skeleton())
    cc.put("loc2", inproc, is_globally_visible=True, expiry_date_ms=NO_EXPIRY_MS)
    assert cc.put("loc2", found, is_globally_visible=True,
                  expiry_date_ms=10_000) is PutResult.REJECTED_PRECEDENCE
    assert cc.get("loc").address == local
    assert cc.get("loc2").address == inproc


def learn_reply_to(table: RoutingTable, sender: str, reply_to: object, *, gbid: str,
                   message_expiry_ms: int, grace_ms: int) -> PutResult | Refusal:
    """What the MQTT transport does for a request from ``gbid``: the rule, then the put."""
    request = Message(MessageType.REQUEST, sender, "prov", message_expiry_ms,
                      reply_to=reply_to)  # type: ignore[arg-type]
    route = reply_route(request, gbid=gbid, now_ms=0, grace_ms=grace_ms,
                        max_ttl_ms=NO_EXPIRY_MS)
    assert route is not None  # a request always teaches something, or is refused
    if isinstance(route, Refusal):
        return route
    return table.put(route.participant_id, route.address, is_globally_visible=True,
                     expiry_date_ms=route.expiry_date_ms)


def test_scenario_7_global_proxy_calls_and_its_reply_to_is_learned():
    own = MqttAddress(GBID, "cc/me")
    cc = RoutingTable(CC, own_addresses=[own])
    grace = 30_000
    # the replyTo names another backend; the request arrived over our gbid2 connection
    reply_to = MqttAddress("whatever-the-caller-wrote", "cc/caller/low")
    assert learn_reply_to(cc, "caller-proxy", reply_to, gbid="gbid2",
                             message_expiry_ms=1_000, grace_ms=grace) is PutResult.CREATED
    assert cc.get("caller-proxy") == RoutingEntry(
        MqttAddress("gbid2", "cc/caller/low"), True, 1_000 + grace, False
    )
    # a later request extends the expiry
    assert learn_reply_to(cc, "caller-proxy", reply_to, gbid="gbid2",
                             message_expiry_ms=5_000, grace_ms=grace) is PutResult.MERGED
    assert cc.get("caller-proxy").expiry_date_ms == 5_000 + grace
    # an older request does not shorten it
    learn_reply_to(cc, "caller-proxy", reply_to, gbid="gbid2", message_expiry_ms=2_000,
                      grace_ms=grace)
    assert cc.get("caller-proxy").expiry_date_ms == 5_000 + grace
    # a different replyTo replaces the entry (Mqtt over Mqtt)
    moved = MqttAddress(GBID, "cc/caller-restarted/low")
    assert learn_reply_to(cc, "caller-proxy", moved, gbid=GBID, message_expiry_ms=3_000,
                             grace_ms=grace) is PutResult.REPLACED
    assert cc.get("caller-proxy").address == moved
    assert cc.get("caller-proxy").expiry_date_ms == 5_000 + grace
    # never over a local entry or a sticky one
    cc.put("local", WebSocketClientAddress("c"), is_globally_visible=False, expiry_date_ms=1)
    assert learn_reply_to(cc, "local", reply_to, gbid=GBID, message_expiry_ms=9,
                             grace_ms=grace) is PutResult.REJECTED_PRECEDENCE
    cc.put("gcd", MqttAddress(GBID, "discoverydirectory_channelid"), is_globally_visible=True,
           expiry_date_ms=NO_EXPIRY_MS, is_sticky=True)
    assert learn_reply_to(cc, "gcd", reply_to, gbid=GBID, message_expiry_ms=9,
                             grace_ms=grace) is PutResult.REJECTED_STICKY
    # a replyTo that is not an MqttAddress, or names us, cannot be learned
    refused = learn_reply_to(cc, "x", WebSocketClientAddress("c"), gbid=GBID,
                             message_expiry_ms=9, grace_ms=grace)
    assert isinstance(refused, Refusal) and refused.reason == NO_REPLY_TO
    assert learn_reply_to(cc, "y", MqttAddress("other", "cc/me"), gbid=GBID,
                             message_expiry_ms=9, grace_ms=grace) is PutResult.REJECTED_INVALID
    assert "x" not in cc
    assert "y" not in cc


def test_scenario_8_entries_expire_and_cleanup_removes_them_but_not_sticky_ones():
    cc = RoutingTable(CC)
    learned = MqttAddress(GBID, "cc/caller")
    cc.put("old-proxy", learned, is_globally_visible=True, expiry_date_ms=1_000)
    cc.put("live-proxy", learned, is_globally_visible=True, expiry_date_ms=5_000)
    cc.put("provisioned", MqttAddress(GBID, "gcd"), is_globally_visible=True,
           expiry_date_ms=1_000, is_sticky=True)
    cc.put("forever", WebSocketClientAddress("c"), is_globally_visible=False,
           expiry_date_ms=NO_EXPIRY_MS)

    assert cc.purge(1_000) == []  # expiry == now is not yet expired
    assert sorted(cc.purge(1_001)) == ["old-proxy"]
    assert cc.participants_at(learned) == {"live-proxy"}
    assert sorted(cc.purge(10**15)) == ["live-proxy"]
    assert set(cc) == {"provisioned", "forever"}
    assert cc.remove("provisioned") is False
    assert "provisioned" in cc
