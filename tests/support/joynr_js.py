"""A websocket client that behaves on the wire as joynr's JavaScript runtime does, for tests.

It writes and reads joynr's frames and JSON payloads by hand (plain dicts, never this
project's payload classes or JSON codec), in the order joynr's JavaScript runtime uses them:

1. a binary init frame ``{"_typeName":"joynr.system.RoutingTypes.WebSocketClientAddress","id":...}``
   (``_typeName`` first, no whitespace);
2. ``addNextHop`` of its routing proxy's own participantId (the reply can only reach that
   participant because of this very call), ``getReplyToAddress``, ``addNextHop`` of its
   discovery proxy's participantId;
3. providers: ``addNextHop(pid, <its WebSocketClientAddress>, scope == GLOBAL)``, then Discovery
   ``add(entry, false, [])``; proxies: Discovery ``lookup``, then ``addNextHop`` of the proxy's
   participantId; requests carry ``c-z4`` (the requestReplyId) and, towards providers that are not
   local, ``re``; replies echo the request's ``c-`` headers and keep its expiry; providers
   confirm ``arq`` and ``mrq`` with ``srp``.

Frames are SMRF (runtime.smrf's frame layer, itself checked against joynr's npm package ``smrf``
in the suite). Ids are nanoid-like (``<random>_<counter>``) as the JavaScript runtime makes them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
import string
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from pyjoynr.runtime.smrf import SmrfFrame, decode_smrf, encode_smrf

__all__ = ["JS_EXCEPTION_TYPES", "JoynrCallError", "JoynrJsClient", "JsProxy", "discovery_entry",
           "provider_qos"]

ROUTING = "CC.RoutingProvider.ParticipantId"
DISCOVERY = "CC.DiscoveryProvider.ParticipantId"
CLIENT_ADDRESS = "joynr.system.RoutingTypes.WebSocketClientAddress"
#: joynr's default messaging ttl plus the 10 s its runtime adds to its system calls
SYSTEM_TTL_MS = 70_000
CONNECT_TIMEOUT_S = 10.0

_ALPHABET = string.ascii_letters + string.digits + "_-"
_counter = itertools.count()


def nanoid() -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(21))


def new_id() -> str:
    """A message or request id as joynr's JavaScript runtime makes them."""
    return f"{nanoid()}_{next(_counter)}"


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


#: the exception types joynr's JavaScript runtime registers (its type registry, see
#: docs/wire.md, "Error answers joynr's runtimes decode"): a reply whose error is of another
#: type fails to decode there and is dropped, so that the call waits for its TTL; this client
#: does the same
JS_EXCEPTION_TYPES = frozenset(f"joynr.exceptions.{name}" for name in (
    "ApplicationException", "DiscoveryException", "IllegalAccessException", "JoynrException",
    "JoynrRuntimeException", "MethodInvocationException", "NoCompatibleProviderFoundException",
    "ProviderRuntimeException", "PublicationMissedException", "SubscriptionException"))


class JoynrCallError(Exception):
    """A reply carried an ``error``: ``error`` is the exception object as received."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('_typeName')}: {error.get('detailMessage')}")
        self.error = error


def provider_qos(scope: str = "LOCAL", custom: list[tuple[str, str]] | None = None
                 ) -> dict[str, Any]:
    return {"_typeName": "joynr.types.ProviderQos",
            "customParameters": [{"_typeName": "joynr.types.CustomParameter", "name": n,
                                  "value": v} for n, v in custom or []],
            "priority": int(time.time() * 1000), "scope": scope,
            "supportsOnChangeSubscriptions": True}


def discovery_entry(domain: str, interface_name: str, participant_id: str,
                    version: tuple[int, int], scope: str = "LOCAL") -> dict[str, Any]:
    """A ``joynr.types.DiscoveryEntry`` as the JavaScript runtime registers one."""
    now = int(time.time() * 1000)
    return {"providerVersion": {"_typeName": "joynr.types.Version", "majorVersion": version[0],
                                "minorVersion": version[1]},
            "domain": domain, "interfaceName": interface_name,
            "participantId": participant_id, "qos": provider_qos(scope),
            "lastSeenDateMs": now, "expiryDateMs": now + 6 * 7 * 24 * 3600 * 1000,
            "publicKeyId": "", "_typeName": "joynr.types.DiscoveryEntry"}


#: a provider's method: (methodName, paramDatatypes, params) -> the ``response`` list; raise
#: JoynrCallError to answer with an error object
Handler = Callable[[str, list[str], list[Any]], Awaitable[list[Any]]]


@dataclass
class Received:
    """A message as it arrived: the SMRF fields, its headers and its JSON body."""

    sender: str
    recipient: str
    expiry_ms: int
    headers: dict[str, str]
    body: dict[str, Any]
    frame: bytes = field(repr=False, default=b"")

    @property
    def type(self) -> str:
        return self.headers["t"]


class JoynrJsClient:
    """One runtime: a websocket connection to a cluster controller, as joynr's JS runtime."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.client_id = nanoid()
        self.address = {"_typeName": CLIENT_ADDRESS, "id": self.client_id}
        self.routing_proxy = f"routing-proxy-{nanoid()}"
        self.discovery_proxy = f"discovery-proxy-{nanoid()}"
        self.reply_to: str | None = None
        self._waiting: dict[str, asyncio.Future[Received]] = {}
        self._providers: dict[str, Handler] = {}
        #: attribute subscriptions served: subscriptionId -> (subscriber, attribute name)
        self.served_subscriptions: dict[str, tuple[str, str]] = {}
        #: everything that arrived and was not an answer to a call of this client
        self.inbox: asyncio.Queue[Received] = asyncio.Queue()
        #: every frame this client received, in order (bytes)
        self.frames: list[bytes] = []
        #: the answers joynr's JavaScript runtime could not decode (an error of a type it
        #: does not register: JS_EXCEPTION_TYPES), dropped as it drops them
        self.undecodable: list[Received] = []
        self._reader: asyncio.Task[None] | None = None
        self._serving: set[asyncio.Task[None]] = set()

    @classmethod
    async def open(cls, stack: AsyncExitStack, url: str, *, start: bool = True
                   ) -> JoynrJsClient:
        """Connect to ``url``, send the init frame and (``start``) make the system calls of
        joynr's runtime start; closed (code 4000, joynr's "shutdown") when ``stack`` closes."""
        ws = await asyncio.wait_for(connect(url, compression=None), CONNECT_TIMEOUT_S)
        client = cls(ws)
        stack.push_async_callback(client.close)
        await ws.send(client.init_frame())
        client._reader = asyncio.create_task(client._read())
        if start:
            await client.start()
        return client

    def init_frame(self) -> bytes:
        return ('{"_typeName":"' + CLIENT_ADDRESS + '","id":"' + self.client_id + '"}').encode()

    async def close(self) -> None:
        await self.ws.close(4000, "shutdown")
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)

    async def start(self) -> None:
        """joynr's JavaScript runtime start: the routing proxy's own hop first, then the
        replyTo address, then the discovery proxy's hop."""
        await self.add_next_hop(self.routing_proxy, False, sender=self.routing_proxy)
        self.reply_to = (await self.call(ROUTING, "getReplyToAddress", [], [],
                                         sender=self.routing_proxy, ttl_ms=SYSTEM_TTL_MS))[0]
        await self.add_next_hop(self.discovery_proxy, False, sender=self.routing_proxy)

    # ------------------------------------------------------------------ system calls

    async def add_next_hop(self, participant_id: str, visible: bool, *,
                           sender: str | None = None) -> None:
        assert await self.call(
            ROUTING, "addNextHop", ["String", CLIENT_ADDRESS, "Boolean"],
            [participant_id, self.address, visible], sender=sender or self.routing_proxy,
            ttl_ms=SYSTEM_TTL_MS) == []

    async def remove_next_hop(self, participant_id: str) -> None:
        await self.call(ROUTING, "removeNextHop", ["String"], [participant_id],
                        sender=self.routing_proxy, ttl_ms=SYSTEM_TTL_MS)

    async def resolve_next_hop(self, participant_id: str) -> bool:
        found = await self.call(ROUTING, "resolveNextHop", ["String"], [participant_id],
                                sender=self.routing_proxy, ttl_ms=SYSTEM_TTL_MS)
        return bool(found[0])

    async def register_provider(self, domain: str, interface_name: str,
                                version: tuple[int, int], handler: Handler, *,
                                scope: str = "LOCAL") -> str:
        pid = f"provider-{nanoid()}"
        self._providers[pid] = handler
        await self.add_next_hop(pid, scope == "GLOBAL")
        entry = discovery_entry(domain, interface_name, pid, version, scope)
        assert await self.call(DISCOVERY, "add",
                               ["joynr.types.DiscoveryEntry", "Boolean", "String[]"],
                               [entry, False, []], sender=self.discovery_proxy,
                               ttl_ms=SYSTEM_TTL_MS) == []
        return pid

    async def unregister_provider(self, pid: str) -> None:
        await self.call(DISCOVERY, "remove", ["String"], [pid], sender=self.discovery_proxy,
                        ttl_ms=SYSTEM_TTL_MS)
        await self.remove_next_hop(pid)
        self._providers.pop(pid, None)

    async def lookup(self, domains: list[str], interface_name: str, *,
                     scope: str = "LOCAL_THEN_GLOBAL", timeout_ms: int = 10_000
                     ) -> list[dict[str, Any]]:
        qos = {"_typeName": "joynr.types.DiscoveryQos", "cacheMaxAge": 0,
               "discoveryTimeout": timeout_ms, "discoveryScope": scope,
               "providerMustSupportOnChange": False}
        found = await self.call(DISCOVERY, "lookup",
                                ["String[]", "String", "joynr.types.DiscoveryQos", "String[]"],
                                [domains, interface_name, qos, []],
                                sender=self.discovery_proxy, ttl_ms=timeout_ms + 10_000)
        return list(found[0])

    async def build_proxy(self, domain: str, interface_name: str, version: tuple[int, int],
                          **lookup: Any) -> tuple[str, dict[str, Any]]:
        """Discovery lookup, arbitration (same major, minor at least ours), the proxy's hop:
        (the proxy's participantId, the chosen entry)."""
        entries = [e for e in await self.lookup([domain], interface_name, **lookup)
                   if e["providerVersion"]["majorVersion"] == version[0]
                   and e["providerVersion"]["minorVersion"] >= version[1]]
        if not entries:
            raise LookupError(f"no provider of {interface_name} in {domain}")
        entry = max(entries, key=lambda e: e["qos"]["priority"])
        proxy = f"proxy-{nanoid()}"
        await self.add_next_hop(proxy, not entry["isLocal"])
        return proxy, entry

    async def proxy(self, domain: str, interface_name: str, version: tuple[int, int],
                    **lookup: Any) -> JsProxy:
        """:meth:`build_proxy` as a :class:`JsProxy`: its requests carry ``re`` when the
        provider's entry is not local, as joynr's runtimes send them."""
        participant_id, entry = await self.build_proxy(domain, interface_name, version,
                                                       **lookup)
        return JsProxy(self, participant_id, entry)

    async def publish_attribute(self, provider: str, attribute: str, value: Any) -> int:
        """Publish ``value`` to every subscription of ``attribute`` this client serves (as
        ``provider``); how many there were."""
        served = [(sid, subscriber) for sid, (subscriber, name)
                  in list(self.served_subscriptions.items()) if name == attribute]
        for sid, subscriber in served:
            await self.publish(provider, subscriber, sid, [value])
        return len(served)

    async def add_multicast_receiver(self, multicast_id: str, subscriber: str, provider: str
                                     ) -> None:
        assert await self.call(ROUTING, "addMulticastReceiver", ["String", "String", "String"],
                               [multicast_id, subscriber, provider], sender=self.routing_proxy,
                               ttl_ms=SYSTEM_TTL_MS) == []

    async def remove_multicast_receiver(self, multicast_id: str, subscriber: str, provider: str
                                        ) -> None:
        assert await self.call(ROUTING, "removeMulticastReceiver",
                               ["String", "String", "String"],
                               [multicast_id, subscriber, provider], sender=self.routing_proxy,
                               ttl_ms=SYSTEM_TTL_MS) == []

    # ------------------------------------------------------------------ messages

    def frame(self, message_type: str, sender: str, recipient: str, body: dict[str, Any], *,
              ttl_ms: int = 60_000, headers: dict[str, str] | None = None,
              expiry_ms: int | None = None) -> bytes:
        all_headers = {"t": message_type, "id": new_id(), **(headers or {})}
        expiry = int(time.time() * 1000) + ttl_ms if expiry_ms is None else expiry_ms
        return encode_smrf(SmrfFrame(sender, recipient, expiry, True,
                                     tuple(all_headers.items()), dumps(body)))

    async def send(self, message_type: str, sender: str, recipient: str, body: dict[str, Any],
                   **options: Any) -> None:
        await self.ws.send(self.frame(message_type, sender, recipient, body, **options))

    async def call(self, recipient: str, method: str, datatypes: list[str], params: list[Any],
                   *, sender: str, ttl_ms: int = 60_000, reply_to: bool = False,
                   headers: dict[str, str] | None = None, timeout_s: float = 10.0
                   ) -> list[Any]:
        """A request; its ``response`` (a JoynrCallError for an ``error``)."""
        rrid = new_id()
        body: dict[str, Any] = {"methodName": method, "paramDatatypes": datatypes,
                                "params": params, "requestReplyId": rrid,
                                "_typeName": "joynr.Request"}
        all_headers = {"c-z4": rrid, **(headers or {})}
        if reply_to:
            assert self.reply_to is not None, "start() first"
            all_headers["re"] = self.reply_to
        answer = await self._ask(rrid, "rq", sender, recipient, body, ttl_ms=ttl_ms,
                                 headers=all_headers, timeout_s=timeout_s)
        reply = answer.body
        assert reply["_typeName"] == "joynr.Reply", reply
        if reply.get("error") is not None:
            raise JoynrCallError(reply["error"])
        response = reply.get("response")
        return [] if response is None else list(response)

    async def one_way(self, recipient: str, method: str, datatypes: list[str],
                      params: list[Any], *, sender: str) -> None:
        await self.send("o", sender, recipient,
                        {"methodName": method, "paramDatatypes": datatypes, "params": params,
                         "_typeName": "joynr.OneWayRequest"})

    async def subscribe_attribute(self, recipient: str, attribute: str, *, sender: str,
                                  min_interval_ms: int = 0, validity_ms: int = 60_000,
                                  reply_to: bool = False) -> tuple[str, Received]:
        """An attribute subscription (``arq``); its id and the subscription reply."""
        qos = {"_typeName": "joynr.OnChangeSubscriptionQos", "minIntervalMs": min_interval_ms,
               "expiryDateMs": int(time.time() * 1000) + validity_ms,
               "publicationTtlMs": 10_000}
        return await self.subscribe(recipient, attribute, qos, sender=sender,
                                    reply_to=reply_to)

    async def subscribe(self, recipient: str, name: str, qos: Any, *, sender: str,
                        filter_parameters: Any = None, selective: bool = False,
                        subscription_id: str | None = None, reply_to: bool = False,
                        ttl_ms: int = 60_000) -> tuple[str, Received]:
        """A subscription request with ``qos`` as it is (a QoS object, or anything else to
        see it refused): of an attribute (``arq``, ``joynr.SubscriptionRequest``), or with
        ``selective`` of a selective broadcast (``brq``, ``joynr.BroadcastSubscriptionRequest``
        whose ``filterParameters`` is ``{"_typeName": "joynr.BroadcastFilterParameters",
        "filterParameters": filter_parameters}``, left out when None); ``subscription_id``:
        an update of that subscription. Its id and the subscription reply."""
        sid = subscription_id or new_id()
        body: dict[str, Any] = {"subscribedToName": name, "subscriptionId": sid, "qos": qos}
        if selective:
            body["_typeName"] = "joynr.BroadcastSubscriptionRequest"
            if filter_parameters is not None:
                body["filterParameters"] = {"_typeName": "joynr.BroadcastFilterParameters",
                                            "filterParameters": filter_parameters}
        else:
            body["_typeName"] = "joynr.SubscriptionRequest"
        headers = {"c-z4": sid}
        if reply_to:
            assert self.reply_to is not None
            headers["re"] = self.reply_to
        answer = await self._ask(sid, "brq" if selective else "arq", sender, recipient, body,
                                 ttl_ms=ttl_ms, headers=headers, timeout_s=10.0)
        return sid, answer

    async def collect(self, duration_s: float, kind: str | None = "p") -> list[Received]:
        """The messages of type ``kind`` (any: None) that arrive within ``duration_s`` (and
        those waiting already), in order; others that arrive meanwhile are dropped."""
        found: list[Received] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + duration_s
        while (left := deadline - loop.time()) > 0:
            try:
                message = await asyncio.wait_for(self.inbox.get(), left)
            except TimeoutError:
                break
            if kind is None or message.type == kind:
                found.append(message)
        return found

    async def stop_subscription(self, recipient: str, subscription_id: str, *, sender: str
                                ) -> None:
        await self.send("sst", sender, recipient,
                        {"subscriptionId": subscription_id, "_typeName": "joynr.SubscriptionStop"},
                        headers={"c-z4": subscription_id})

    async def publish_multicast(self, provider: str, multicast_id: str, response: list[Any]
                                ) -> None:
        await self.send("m", provider, multicast_id,
                        {"multicastId": multicast_id, "response": response,
                         "_typeName": "joynr.MulticastPublication"})

    async def publish(self, provider: str, subscriber: str, subscription_id: str,
                      response: list[Any]) -> None:
        await self.send("p", provider, subscriber,
                        {"subscriptionId": subscription_id, "response": response,
                         "_typeName": "joynr.SubscriptionPublication"},
                        headers={"c-z4": subscription_id})

    async def next_message(self, kind: str | None = None, timeout_s: float = 10.0) -> Received:
        """The next message of type ``kind`` (any: None) that was not an answer."""
        async with asyncio.timeout(timeout_s):
            while True:
                message = await self.inbox.get()
                if kind is None or message.type == kind:
                    return message

    async def _ask(self, key: str, message_type: str, sender: str, recipient: str,
                   body: dict[str, Any], *, ttl_ms: int, headers: dict[str, str],
                   timeout_s: float) -> Received:
        future: asyncio.Future[Received] = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        try:
            await self.send(message_type, sender, recipient, body, ttl_ms=ttl_ms,
                            headers=headers)
            return await asyncio.wait_for(future, timeout_s)
        finally:
            self._waiting.pop(key, None)

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                assert isinstance(frame, bytes), "a text frame from the cluster controller"
                self.frames.append(frame)
                smrf = decode_smrf(frame)
                headers = dict(smrf.headers)
                message = Received(smrf.sender, smrf.recipient, smrf.ttl_ms, headers,
                                   json.loads(smrf.body), frame)
                await self._dispatch(message)
        except ConnectionClosed:
            pass

    async def _dispatch(self, message: Received) -> None:
        body = message.body
        kind = message.type
        key = {"rp": body.get("requestReplyId"), "srp": body.get("subscriptionId")}.get(kind)
        error = body.get("error") if kind in ("rp", "srp") else None
        if isinstance(error, dict) and error.get("_typeName") not in JS_EXCEPTION_TYPES:
            self.undecodable.append(message)  # (joynr's JavaScript runtime logs and drops it)
            return
        if key is not None and key in self._waiting:
            if not self._waiting[key].done():
                self._waiting[key].set_result(message)
            return
        if kind in ("rq", "o") and message.recipient in self._providers:
            task = asyncio.create_task(self._serve(message))
            self._serving.add(task)  # (a task nobody holds may be collected mid-call)
            task.add_done_callback(self._serving.discard)
            return
        if kind in ("arq", "brq") and message.recipient in self._providers:
            await self._subscribed(message)
        if kind == "mrq" and message.recipient in self._providers:
            await self._multicast_subscribed(message)
        if kind == "sst":
            self.served_subscriptions.pop(body.get("subscriptionId", ""), None)
        await self.inbox.put(message)

    async def _serve(self, request: Received) -> None:
        body = request.body
        handler = self._providers[request.recipient]
        try:
            response = await handler(body["methodName"], list(body.get("paramDatatypes", [])),
                                     list(body.get("params") or []))
            reply: dict[str, Any] = {"requestReplyId": body.get("requestReplyId"),
                                     "response": response, "_typeName": "joynr.Reply"}
        except JoynrCallError as exc:
            reply = {"requestReplyId": body.get("requestReplyId"), "error": exc.error,
                     "_typeName": "joynr.Reply"}
        if request.type == "o":
            await self.inbox.put(request)
            return
        echoed = {k: v for k, v in request.headers.items() if k.startswith("c-")}
        await self.send("rp", request.recipient, request.sender, reply, headers=echoed,
                        expiry_ms=request.expiry_ms)

    async def _multicast_subscribed(self, request: Received) -> None:
        """A ``joynr.MulticastSubscriptionRequest``: joynr's proxies only call
        addMulticastReceiver, but its providers still take one and confirm it (the multicast
        itself needs no state in the provider)."""
        sid = request.body["subscriptionId"]
        await self.send("srp", request.recipient, request.sender,
                        {"subscriptionId": sid, "_typeName": "joynr.SubscriptionReply"},
                        headers={"c-z4": sid}, expiry_ms=request.expiry_ms)

    async def _subscribed(self, request: Received) -> None:
        sid = request.body["subscriptionId"]
        self.served_subscriptions[sid] = (request.sender, request.body["subscribedToName"])
        await self.send("srp", request.recipient, request.sender,
                        {"subscriptionId": sid, "_typeName": "joynr.SubscriptionReply"},
                        headers={"c-z4": sid}, expiry_ms=request.expiry_ms)


@dataclass
class JsProxy:
    """A proxy of the JavaScript runtime: its participantId and the provider's entry (as the
    lookup returned it). Requests and subscription requests carry ``re`` (the runtime's
    replyTo address) when the entry's ``isLocal`` is false, as joynr's runtimes do."""

    client: JoynrJsClient
    participant_id: str
    entry: dict[str, Any]

    @property
    def provider(self) -> str:
        return str(self.entry["participantId"])

    @property
    def reply_to(self) -> bool:
        return not self.entry["isLocal"]

    async def call(self, method: str, datatypes: list[str], params: list[Any], **options: Any
                   ) -> list[Any]:
        return await self.client.call(self.provider, method, datatypes, params,
                                      sender=self.participant_id, reply_to=self.reply_to,
                                      **options)

    async def get(self, attribute: str) -> Any:
        """``get<Attribute>``: the attribute's value."""
        (value,) = await self.call(f"get{attribute[:1].upper()}{attribute[1:]}", [], [])
        return value

    async def set(self, attribute: str, datatype: str, value: Any) -> None:
        """``set<Attribute>``."""
        assert await self.call(f"set{attribute[:1].upper()}{attribute[1:]}", [datatype],
                               [value]) == []

    async def subscribe_attribute(self, attribute: str, **options: Any
                                  ) -> tuple[str, Received]:
        return await self.client.subscribe_attribute(self.provider, attribute,
                                                     sender=self.participant_id,
                                                     reply_to=self.reply_to, **options)

    async def subscribe(self, name: str, qos: Any, **options: Any) -> tuple[str, Received]:
        """:meth:`JoynrJsClient.subscribe` from this proxy."""
        return await self.client.subscribe(self.provider, name, qos,
                                           sender=self.participant_id,
                                           reply_to=self.reply_to, **options)

    async def stop_subscription(self, subscription_id: str) -> None:
        await self.client.stop_subscription(self.provider, subscription_id,
                                            sender=self.participant_id)

    async def add_multicast_receiver(self, multicast_id: str) -> None:
        await self.client.add_multicast_receiver(multicast_id, self.participant_id,
                                                 self.provider)

    async def remove_multicast_receiver(self, multicast_id: str) -> None:
        await self.client.remove_multicast_receiver(multicast_id, self.participant_id,
                                                    self.provider)
