"""What the provider-side subscription tests share: the Tuner interface (attributes with and
without a getter of their own, one not notifiable, a selective broadcast and a multicast one),
its provider, joynr JSON QoS objects, and a subscriber of this project's native dialect
(msgpack frames and bodies written by hand, so no proxy of this project is involved)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from websockets.exceptions import ConnectionClosed

from pyjoynr.libjoynr import LibjoynrRuntime, Provider, attribute, broadcast, interface
from pyjoynr.programming.system_interfaces import DEFAULT_ROUTING_PARTICIPANT_ID, Routing
from pyjoynr.runtime.addresses import WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.payloads import (
    BroadcastSubscriptionRequest,
    Publication,
    Reply,
    Request,
    SubscriptionReply,
    SubscriptionRequest,
    SubscriptionStop,
    decode_payload,
)
from tests.support.joynr_js import JoynrJsClient, JsProxy
from tests.support.raw_websocket import RawClient

__all__ = ["GENRES", "Native", "Tuner", "TunerProvider", "Tuning", "keep_alive", "on_change",
           "periodic", "tuning"]

ROUTING = interface_def(Routing)
DOMAIN = "tuning"
#: the genre of each station the tests fire
GENRES = {"Hits": "pop", "Charts": "pop", "Metal": "rock", "Boom": "pop"}


@interface("test/Tuner", version=(1, 0))
class Tuner:
    station = attribute(str)
    level = attribute(int)
    hidden = attribute(int, notifiable=False)
    signal = broadcast(selective=True, filter_parameters=("genre",), station=str, strength=int)
    news = broadcast(text=str)


class TunerProvider(Provider, interface=Tuner):
    """``station`` is stored; ``level`` comes from :meth:`get_level` (counted; it fails while
    ``level_fails``)."""

    def __init__(self) -> None:
        super().__init__(station="FM4", hidden=1)
        self.level_value = 0
        self.level_calls = 0
        self.level_fails = False

    async def get_level(self) -> int:
        self.level_calls += 1
        await asyncio.sleep(0)  # (waits: runs in a task of its own)
        if asyncio.current_task() is None:
            raise RuntimeError("no task")
        if self.level_fails:
            raise RuntimeError("the meter broke")
        return self.level_value


def _expiry(validity_ms: int | None) -> int:
    return 0 if validity_ms is None else int(time.time() * 1000) + validity_ms


def on_change(min_interval_ms: int = 0, *, validity_ms: int | None = 60_000,
              ttl_ms: int = 10_000) -> dict[str, Any]:
    """A joynr.OnChangeSubscriptionQos as joynr's JavaScript runtime writes it."""
    return {"_typeName": "joynr.OnChangeSubscriptionQos", "minIntervalMs": min_interval_ms,
            "expiryDateMs": _expiry(validity_ms), "publicationTtlMs": ttl_ms}


def keep_alive(max_interval_ms: int, min_interval_ms: int = 0, *,
               validity_ms: int | None = 60_000, ttl_ms: int = 10_000) -> dict[str, Any]:
    return {"_typeName": "joynr.OnChangeWithKeepAliveSubscriptionQos",
            "minIntervalMs": min_interval_ms, "maxIntervalMs": max_interval_ms,
            "alertAfterIntervalMs": 0, "expiryDateMs": _expiry(validity_ms),
            "publicationTtlMs": ttl_ms}


def periodic(period_ms: int, *, validity_ms: int | None = 60_000, ttl_ms: int = 10_000
             ) -> dict[str, Any]:
    return {"_typeName": "joynr.PeriodicSubscriptionQos", "periodMs": period_ms,
            "alertAfterIntervalMs": 0, "expiryDateMs": _expiry(validity_ms),
            "publicationTtlMs": ttl_ms}


@dataclass
class Tuning:
    """A Tuner provider in a libjoynr runtime, and a client of joynr's JavaScript runtime
    with a proxy of it."""

    runtime: LibjoynrRuntime
    provider: TunerProvider
    pid: str
    client: JoynrJsClient
    proxy: JsProxy

    @property
    def counters(self) -> Any:
        return self.runtime.core.telemetry.counters

    @property
    def publisher(self) -> Any:
        return self.provider.registrations[0].publisher


async def tuning(stack: AsyncExitStack, cc: Any, runtimes: Any) -> Tuning:
    runtime = await runtimes()
    provider = TunerProvider()
    pid = await runtime.register_provider(DOMAIN, provider)
    client = await JoynrJsClient.open(stack, cc.websocket_address.url)
    proxy = await client.proxy(DOMAIN, "test/Tuner", (1, 0))
    assert proxy.provider == pid
    return Tuning(runtime, provider, pid, client, proxy)


class Native:
    """A participant of this project's native dialect, written by hand: msgpack frames and
    bodies, its participantId routed to its connection with Routing.add_next_hop."""

    def __init__(self, raw: RawClient) -> None:
        self.raw = raw
        self.pid = raw.pid
        #: everything that arrived (but the add_next_hop reply)
        self.inbox: asyncio.Queue[Message] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, stack: AsyncExitStack, cc: Any) -> Native:
        raw = await RawClient.open(stack, cc.websocket_address.url)
        native = cls(raw)
        native._reader = asyncio.create_task(native._read())
        stack.push_async_callback(native.close)
        rid = uuid.uuid4().hex
        await raw.send(Message(
            MessageType.REQUEST, native.pid, DEFAULT_ROUTING_PARTICIPANT_ID, now_ms() + 10_000,
            Request(rid, "add_next_hop",
                    [native.pid, WebSocketClientAddress(raw.client_id).to_dict(), False],
                    ROUTING.methods["add_next_hop"].param_datatypes).to_body()))
        answer = await native.next(MessageType.REPLY)
        reply = decode_payload(Reply, answer.body)
        assert (reply.request_reply_id, reply.error) == (rid, None), reply
        return native

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                try:
                    message = await self.raw.receive(timeout_s=3600)
                except TimeoutError:
                    continue
                await self.inbox.put(message)

    async def next(self, kind: MessageType, timeout_s: float = 10.0) -> Message:
        """The next message of type ``kind`` (others before it are dropped)."""
        async with asyncio.timeout(timeout_s):
            while True:
                message = await self.inbox.get()
                if message.type is kind:
                    return message

    async def subscribe(self, provider: str, name: str, qos: dict[str, Any], *,
                        filter_parameters: dict[str, Any] | None = None,
                        subscription_id: str | None = None) -> tuple[str, SubscriptionReply]:
        """An attribute subscription request (``filter_parameters`` None) or a selective
        broadcast one, with ``qos`` as it is: its id and the subscription reply."""
        sid = subscription_id or uuid.uuid4().hex
        if filter_parameters is None:
            kind, body = (MessageType.SUBSCRIPTION_REQUEST,
                          SubscriptionRequest(sid, name, qos).to_body())
        else:
            kind, body = (MessageType.BROADCAST_SUBSCRIPTION_REQUEST,
                          BroadcastSubscriptionRequest(sid, name, qos, filter_parameters
                                                       ).to_body())
        return sid, await self.request(kind, provider, body, sid)

    async def request(self, kind: MessageType, provider: str, body: bytes, sid: str
                      ) -> SubscriptionReply:
        """Send a subscription request of ``kind`` with ``body`` as it is; the subscription
        reply of ``sid``."""
        await self.raw.send(Message(kind, self.pid, provider, now_ms() + 60_000, body))
        while True:
            answer = await self.next(MessageType.SUBSCRIPTION_REPLY)
            reply = decode_payload(SubscriptionReply, answer.body)
            if reply.subscription_id == sid:
                return reply

    async def stop(self, provider: str, subscription_id: str) -> None:
        await self.raw.send(Message(MessageType.SUBSCRIPTION_STOP, self.pid, provider,
                                    now_ms() + 60_000,
                                    SubscriptionStop(subscription_id).to_body()))

    async def collect(self, duration_s: float) -> list[tuple[Message, Publication]]:
        """The publications that arrive within ``duration_s`` (and those waiting already),
        with their messages; other messages are dropped."""
        found = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + duration_s
        while (left := deadline - loop.time()) > 0:
            try:
                message = await asyncio.wait_for(self.inbox.get(), left)
            except TimeoutError:
                break
            if message.type is MessageType.PUBLICATION:
                found.append((message, decode_payload(Publication, message.body)))
        return found
