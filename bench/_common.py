"""Shared helpers of the benchmarks (bench/websocket_oneway.py, bench/websocket_rpc.py,
bench/mqtt_oneway.py, bench/mqtt_rpc.py, bench/dialects.py).

- :class:`Sink` / :class:`SinkProvider`: the benchmark interface (a one-way ``push`` and a
  request/reply ``echo``) and its provider, which counts pushes in a :class:`Progress`;
- :class:`ProjectSetup`: an in-process cluster controller with two libjoynr runtimes, each on
  its own websocket connection: the provider lives in runtime B, the proxy in runtime A (the
  runtimes' configuration, e.g. joynr's dialect, and the proxy's body format may be chosen);
  :func:`one_way_body`: the body of the proxy's ``push`` call in either body format;
- :func:`start_raw_server`: a bare ``websockets`` server (its asyncio API) on 127.0.0.1 with the
  same connection options as the project's transports (no compression, same frame limit and
  keep-alive);
- :class:`Mosquitto`: a mosquitto broker process on a free loopback port, for the MQTT benches;
- :class:`MqttProjectSetup`: two in-process cluster controllers linked through that broker,
  runtime A (proxy) on CC1 and runtime B (provider, a provisioned GLOBAL participant) on CC2;
- :func:`raw_mqtt_client`: an aiomqtt client with the connection options of the project's MQTT
  transport (MQTT 5, same in-flight limit), for the raw baselines;
- :class:`PendingCallsWarnings`: counts aiomqtt's "pending publish calls" warnings and keeps
  them out of the output;
- :func:`profiled`: cProfile around a coroutine, for ``--profile`` (optionally with the time
  charged per owner: the project's code, aiomqtt + paho, websockets, asyncio, ...);
- :data:`AUDIT_ON` and :func:`audit_summary`: a CC writing the audit log (``--audit``);
- :data:`METRICS_ON`, :func:`metered`, :class:`Scraper`, :func:`scraped` and
  :func:`metrics_summary`: a CC with its admin endpoint on, scraped as a
  Prometheus and an open status page would while a round runs (``--metrics``).

Nothing here changes the project: it is only driven through its public API.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import io
import logging
import pstats
import re
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiomqtt
from websockets.asyncio.server import Server, ServerConnection, serve

from pyjoynr.cluster_controller.config import ClusterControllerConfig
from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import (
    LibjoynrConfig,
    LibjoynrRuntime,
    Provider,
    ProviderQos,
    ProviderScope,
    Proxy,
    connect,
    interface,
    one_way,
)
from pyjoynr.runtime.bodies import BodyFormat, encode_body, schema_of
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def
from pyjoynr.runtime.messages import DEFAULT_MAX_FRAME_BYTES, Message, MessageType, encode_frame
from pyjoynr.runtime.payloads import OneWayRequest, Request
from pyjoynr.runtime.smrf import FORM as SMRF_FORM
from pyjoynr.testing.brokers import MOSQUITTO
from pyjoynr.testing.brokers import Mosquitto as TestMosquitto
from tests.support.mqtt_cluster import write_provisioning

T = TypeVar("T")

HOST = "127.0.0.1"
DOMAIN = "bench"
PROJECT_ROOT = Path(__file__).resolve().parents[1]  # for telling project files in profiles
#: a generous bound for one timed round: the loops always end, even when messages get lost
ROUND_TIMEOUT_S = 60.0


def help_text(doc: str | None) -> str:
    """A script's ``--help`` description: the first paragraph of its docstring as plain text
    (RST markup such as double backquotes or :class:`x` removed)."""
    paragraph = (doc or "").strip().split("\n\n", 1)[0]
    text = " ".join(paragraph.split())
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def setup_logging() -> None:
    """WARNING and up only: INFO lines would slow the runs down."""
    logging.basicConfig(level=logging.WARNING,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")


class PendingCallsWarnings(logging.Filter):
    """Counts aiomqtt's "There are N pending publish calls." warnings (logged by every publish
    while more than ``Client.pending_calls_threshold``, default 10, wait for their PUBACK) per
    logger, and keeps them out of the output. Install with :meth:`install`; they are still
    logged (the records are made and handled), only not written."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = defaultdict(int)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == "There are %d pending publish calls.":
            self.counts[record.name] += 1
            return False
        return True

    def install(self) -> PendingCallsWarnings:
        for handler in logging.getLogger().handlers:
            handler.addFilter(self)
        return self

    def summary(self) -> str:
        found = ", ".join(f"{count:,} by logger {name!r}" for name, count in self.counts.items())
        return f"aiomqtt 'pending publish calls' warnings (not shown): {found or 'none'}"


def environment() -> str:
    codec = "compiled" if SMRF_FORM.compiled else "plain Python"
    return (f"Python {sys.version.split()[0]}, uvloop {version('uvloop')}, "
            f"websockets {version('websockets')}, msgpack {version('msgpack')}, "
            f"SMRF codec {codec}")


def mqtt_environment() -> str:
    return (f"{environment()}, aiomqtt {version('aiomqtt')}, paho-mqtt {version('paho-mqtt')}, "
            f"{Mosquitto.version()}")


# ---------------------------------------------------------------------- counting


class Progress:
    """A counter that one waiter can await reaching a target (without a wake-up per hit)."""

    def __init__(self) -> None:
        self.count = 0
        self._target = 0
        self._waiter: asyncio.Future[None] | None = None

    def hit(self) -> None:
        self.count += 1
        waiter = self._waiter
        if waiter is not None and self.count >= self._target:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def reach(self, target: int) -> None:
        if self.count >= target:
            return
        self._target = target
        self._waiter = asyncio.get_running_loop().create_future()
        await self._waiter

    def reset(self) -> None:
        self.count = 0


#: the CC settings of the benchmarks' "audit on" runs (``--audit``): the audit log on, in the
#: CC's temporary data directory, with the defaults of config/cluster-controller.toml
AUDIT_ON: dict[str, str] = {"audit__enabled": "true", "audit__stats_interval_s": "0"}
#: the goal of the issue: with the audit log on, at most 10 % slower
AUDIT_GOAL = 0.9


def audit_summary(off: float, on: float, stats: dict[str, int]) -> str:
    """The lines that compare the best rates with the audit log off and on."""
    ratio = on / off
    return (f"audit log on                       {on:9,.0f} msg/s ({1e6 / on:6.1f} us/msg)\n"
            f"ratio audit on/off {ratio:4.2f}   goal >= {AUDIT_GOAL}: "
            f"{'met' if ratio >= AUDIT_GOAL else 'MISSED'}   (audit log: {stats})")


async def send_windowed(send: Callable[[], Awaitable[object]], n: int, window: int,
                        progress: Progress) -> float:
    """Send ``n`` messages, never more than ``window`` ahead of the receiver (when that many
    are in flight: wait until at most ``window // 2`` are); return the seconds from the first
    send until the receiver has counted all ``n``. Raises TimeoutError after ROUND_TIMEOUT_S."""
    progress.reset()
    half = window // 2
    async with asyncio.timeout(ROUND_TIMEOUT_S):
        start = time.perf_counter()
        for sent in range(n):
            if sent - progress.count >= window:
                await progress.reach(sent - half)
            await send()
        await progress.reach(n)
        return time.perf_counter() - start


async def cancel(task: asyncio.Task[None]) -> None:
    """Cancel a helper task and wait until it has ended."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def quiet_gc() -> None:
    """Start every timed round with the same, clean heap."""
    gc.collect()


async def best_rates(rounds_of: Mapping[str, Callable[[int], Awaitable[float]]],
                     messages: int, rounds: int, *, warm: int,
                     report: Callable[[int, dict[str, float]], None]) -> dict[str, float]:
    """Throughput, best of ``rounds`` alternating rounds: each path (name -> a round of ``n``
    messages, returning its seconds) runs once with ``warm`` messages, then each round runs
    every path in turn with ``messages``, on a clean heap. ``report(i, rates)`` is told each
    round's messages per second by path; the best per path is returned. TimeoutError from a
    round goes through."""
    for one_round in rounds_of.values():
        await one_round(warm)
    best = dict.fromkeys(rounds_of, 0.0)
    for i in range(1, rounds + 1):
        rates = {}
        for name, one_round in rounds_of.items():
            quiet_gc()
            rates[name] = messages / await one_round(messages)
            best[name] = max(best[name], rates[name])
        report(i, rates)
    return best


def throughput_options(parser: argparse.ArgumentParser, *, messages: int, rounds: int,
                       payload_help: str = "payload string length") -> None:
    """The options of a throughput benchmark: --messages, --rounds, --payload, --window."""
    parser.add_argument("--messages", type=int, default=messages, help="messages per round")
    parser.add_argument("--rounds", type=int, default=rounds,
                        help="rounds of each (alternating)")
    parser.add_argument("--payload", type=int, default=200, help=payload_help)
    parser.add_argument("--window", type=int, default=1_000,
                        help="most messages in flight (sent, not yet received)")


def check_throughput_options(parser: argparse.ArgumentParser, args: argparse.Namespace
                             ) -> None:
    """Exit with a usage error when :func:`throughput_options`' values make no sense."""
    if args.messages < 1 or args.rounds < 1 or args.payload < 0 or args.window < 2:
        parser.error("need --messages >= 1, --rounds >= 1, --payload >= 0, --window >= 2")


# ---------------------------------------------------------------------- the project


@interface("bench/Sink", version=(1, 0))
class Sink:
    @one_way
    async def push(self, data: str) -> None: ...

    async def echo(self, data: str) -> str: ...


class SinkProvider(Provider, interface=Sink):
    def __init__(self) -> None:
        super().__init__()
        self.progress = Progress()

    async def push(self, data: str) -> None:
        self.progress.hit()

    async def echo(self, data: str) -> str:
        return data


def cc_config(data_dir: str, **overrides: str) -> ClusterControllerConfig:
    """The benchmarks' CC configuration; ``overrides`` like ``mqtt__backends='{...}'``.
    Without a GCD (``discovery__gcd='true'`` when the benchmark runs one): a CC with MQTT
    backends would otherwise call a GCD that is not there (removeStale, registrations) and
    warn about each call in the middle of the figures."""
    env = {
        "JOYNR_CC__WEBSOCKET__HOST": HOST,
        "JOYNR_CC__WEBSOCKET__PORT": "0",
        "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": data_dir,
        "JOYNR_CC__LOGGING__LEVEL": "WARNING",
        "JOYNR_CC__DISCOVERY__GCD": "false",
        "JOYNR_CC__ADMIN__ENABLED": "false",  # (--metrics runs a CC with it on)
        "JOYNR_CC__ADMIN__PORT": "0",
    }
    env.update({f"JOYNR_CC__{key.upper()}": value for key, value in overrides.items()})
    return ClusterControllerConfig.load(None, env=env)


class ProjectSetup:
    """``async with ProjectSetup() as p``: a CC, runtimes ``p.a`` (proxy ``p.proxy``) and
    ``p.b`` (provider ``p.provider``), all in this process and event loop."""

    #: counters whose every count is a refused (dropped) message, by name suffix
    REFUSAL_COUNTERS: tuple[str, ...] = ("websocket", "transport")

    cc: ClusterController
    a: LibjoynrRuntime
    b: LibjoynrRuntime
    provider: SinkProvider
    proxy: Proxy

    def __init__(self, ttl_ms: int = 60_000, *, runtime_config: LibjoynrConfig | None = None,
                 body_format: BodyFormat | None = None, **cc_overrides: str) -> None:
        """``cc_overrides``: settings of the CC(s), as for :func:`cc_config`;
        ``runtime_config``: both runtimes' (e.g. ``LibjoynrConfig(dialect="joynr")``; default
        native); ``body_format``: the proxy's bodies (default: what the provider's entry
        says, see ``build_proxy``)."""
        self.ttl_ms = ttl_ms
        self.runtime_config = runtime_config
        self.body_format = body_format
        self.cc_overrides = cc_overrides
        self._stack = AsyncExitStack()

    def admin_urls(self) -> list[str]:
        """The admin endpoints of the CCs (those that have one on)."""
        return [cc.ops.server.url for cc in (self.cc,) if cc.ops.server is not None]

    async def __aenter__(self) -> ProjectSetup:
        stack = self._stack
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-cc-"))
        self.cc = await stack.enter_async_context(ClusterController(cc_config(
            data_dir, **self.cc_overrides)))
        url = self.cc.websocket_address.url
        config = self.runtime_config
        self.a = await stack.enter_async_context(connect(url, client_id="bench-a",
                                                         config=config))
        self.b = await stack.enter_async_context(connect(url, client_id="bench-b",
                                                         config=config))
        self.provider = SinkProvider()
        await self.b.register_provider(DOMAIN, self.provider)
        self.proxy = await self.a.build_proxy(Sink, DOMAIN, ttl_ms=self.ttl_ms,
                                              body_format=self.body_format)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self._stack.aclose()

    def counters(self) -> dict[str, dict[str, int]]:
        """Every non-empty counter of the CC and both runtimes (drops, refusals, queueing)."""
        found = {
            "cc.router": self.cc.telemetry.counters,
            "cc.websocket": self.cc.websocket.counters,
            "a.router": self.a.core.telemetry.counters,
            "a.transport": self.a.core.transport.counters,
            "b.router": self.b.core.telemetry.counters,
            "b.transport": self.b.core.transport.counters,
        }
        return {name: dict(c) for name, c in found.items() if c}

    def dropped(self) -> int:
        """Messages dropped anywhere on the path (router drops and refused frames)."""
        total = 0
        for name, counter in self.counters().items():
            for key, value in counter.items():
                if key.startswith("dropped-") or name.endswith(self.REFUSAL_COUNTERS):
                    total += value
        return total

    def queued(self) -> int:
        return self.cc.router.queued() + self.a.core.router.queued() + self.b.core.router.queued()

    def audit_stats(self) -> dict[str, int]:
        """The audit log counters of the CC(s) (summed), empty when the audit log is off."""
        total: dict[str, int] = defaultdict(int)
        for cc in {id(c): c for c in self.ccs()}.values():
            if cc.audit is not None:
                for key, value in cc.audit.stats().items():
                    total[key.removeprefix("audit_")] += value
        return dict(total)

    def ccs(self) -> list[ClusterController]:
        return [self.cc]

    def _frame(self, message_type: MessageType, body: bytes) -> bytes:
        proxy = self.proxy
        return encode_frame(Message(
            type=message_type, sender=proxy.participant_id,
            recipient=proxy.provider_participant_id, expiry_date_ms=now_ms() + self.ttl_ms,
            body=body,
            reply_to=None if message_type is MessageType.ONE_WAY else self.a.core.reply_to_address,
        ))

    def one_way_frame(self, data: str) -> bytes:
        """A frame as the proxy sends for ``push(data)`` (same fields and sizes)."""
        return self._frame(MessageType.ONE_WAY, one_way_body(data, BodyFormat.MSGPACK))

    def one_way_message(self, data: str, body_format: BodyFormat) -> Message:
        """A message as the proxy sends for ``push(data)`` with a body in ``body_format`` (to
        be encoded in either frame dialect)."""
        proxy = self.proxy
        return Message(type=MessageType.ONE_WAY, sender=proxy.participant_id,
                       recipient=proxy.provider_participant_id,
                       expiry_date_ms=now_ms() + self.ttl_ms,
                       body=one_way_body(data, body_format))

    def request_frame(self, data: str) -> bytes:
        """A frame as the proxy sends for ``echo(data)`` (same fields and sizes)."""
        types = interface_def(Sink).methods["echo"].param_datatypes
        body = Request("0" * 32, "echo", [data], types).to_body()  # a uuid4().hex id
        return self._frame(MessageType.REQUEST, body)


def one_way_body(data: str, body_format: BodyFormat) -> bytes:
    """The body of a ``push(data)`` call in ``body_format``, as a proxy writes it."""
    definition = interface_def(Sink)
    payload = OneWayRequest("push", [data], definition.methods["push"].param_datatypes)
    if body_format is BodyFormat.MSGPACK:
        return payload.to_body()
    return encode_body(payload, body_format, schema=schema_of(definition))


# ---------------------------------------------------------------------- MQTT

GBID = "joynrdefaultgbid"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


class Mosquitto(TestMosquitto):
    """``async with Mosquitto() as broker``: the tests' mosquitto (pyjoynr/testing/brokers.py: a
    free loopback port, ``set_tcp_nodelay true``, no limit on QoS 1 messages in flight, 100,000
    queued per client) without persistence, in a temporary directory of its own."""

    def __init__(self) -> None:
        self._directory = tempfile.TemporaryDirectory(prefix="bench-mosquitto-")
        super().__init__(Path(self._directory.name), persistence=False)

    @staticmethod
    def version() -> str:
        try:
            out = subprocess.run([MOSQUITTO, "-h"], capture_output=True, check=False, timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            return "mosquitto (version unknown)"
        first = (out.stdout or out.stderr).decode(errors="replace").splitlines()
        return first[0].strip() if first else "mosquitto (version unknown)"

    async def __aexit__(self, *exc: object) -> None:
        await super().__aexit__(*exc)
        self._directory.cleanup()


class MqttProjectSetup(ProjectSetup):
    """``async with MqttProjectSetup(broker.url) as p``: cluster controllers ``p.cc1`` and
    ``p.cc2``, each with one MQTT backend (GBID joynrdefaultgbid) on the broker; runtime ``p.a``
    (proxy ``p.proxy``) connected to CC1 by websocket, runtime ``p.b`` (provider
    ``p.provider``, registered GLOBAL with a fixed participantId) connected to CC2. CC1 knows
    the provider from a provisioning file (CC2's topic), so every message between proxy and
    provider crosses the broker. All in this process and event loop; ``p.cc`` is CC1."""

    REFUSAL_COUNTERS = ("websocket", "transport", "mqtt")

    cc1: ClusterController
    cc2: ClusterController

    def __init__(self, broker_url: str, ttl_ms: int = 60_000, mqtt_client: str = "native", *,
                 runtime_config: LibjoynrConfig | None = None,
                 body_format: BodyFormat | None = None, **cc_overrides: str) -> None:
        super().__init__(ttl_ms, runtime_config=runtime_config, body_format=body_format,
                         **cc_overrides)
        self.broker_url = broker_url
        self.mqtt_client = mqtt_client

    def admin_urls(self) -> list[str]:
        return [cc.ops.server.url for cc in (self.cc1, self.cc2) if cc.ops.server is not None]

    async def __aenter__(self) -> MqttProjectSetup:
        stack = self._stack
        data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-cc-")))
        suffix = uuid.uuid4().hex[:8]
        provider_id = f"bench-sink-{suffix}"
        backends = f'{{{GBID} = "{self.broker_url}"}}'
        self.cc2 = await stack.enter_async_context(ClusterController(cc_config(
            str(data_dir / "cc2"), cluster_controller__id=f"bench-cc2-{suffix}",
            mqtt__backends=backends, mqtt__client=self.mqtt_client, **self.cc_overrides)))
        provisioning = write_provisioning(data_dir / "provisioning.toml", {
            "participant_id": provider_id, "domain": DOMAIN,
            "interface": interface_def(Sink).name,
            "version": ".".join(map(str, interface_def(Sink).version)),
            "gbid": GBID, "topic": self.cc2.own_topic,
            "body": "msgpack",  # a provider of this project's runtimes (proxies may force JSON)
        })
        self.cc1 = self.cc = await stack.enter_async_context(ClusterController(cc_config(
            str(data_dir / "cc1"), cluster_controller__id=f"bench-cc1-{suffix}",
            mqtt__backends=backends, discovery__provisioning_file=str(provisioning),
            mqtt__client=self.mqtt_client, **self.cc_overrides)))
        for cc in (self.cc1, self.cc2):
            assert cc.mqtt is not None
            await cc.mqtt.wait_connected(10.0)
        self.b = await stack.enter_async_context(connect(
            self.cc2.websocket_address.url, client_id="bench-b", config=self.runtime_config))
        self.a = await stack.enter_async_context(connect(
            self.cc1.websocket_address.url, client_id="bench-a", config=self.runtime_config))
        self.provider = SinkProvider()
        await self.b.register_provider(DOMAIN, self.provider, participant_id=provider_id,
                                       qos=ProviderQos(scope=ProviderScope.GLOBAL))
        self.proxy = await self.a.build_proxy(Sink, DOMAIN, ttl_ms=self.ttl_ms,
                                              body_format=self.body_format)
        return self

    def counters(self) -> dict[str, dict[str, int]]:
        """Every non-empty counter of both CCs (router, websocket, MQTT) and both runtimes."""
        found: dict[str, Any] = {}
        for name, cc in (("cc1", self.cc1), ("cc2", self.cc2)):
            found[f"{name}.router"] = cc.telemetry.counters
            found[f"{name}.websocket"] = cc.websocket.counters
            found[f"{name}.mqtt"] = cc.mqtt.counters if cc.mqtt is not None else {}
        for name, rt in (("a", self.a), ("b", self.b)):
            found[f"{name}.router"] = rt.core.telemetry.counters
            found[f"{name}.transport"] = rt.core.transport.counters
        return {name: dict(c) for name, c in found.items() if c}

    def queued(self) -> int:
        """Messages waiting in a router or for an MQTT backend (queued or unacknowledged)."""
        total = sum(x.router.queued() for x in (self.cc1, self.cc2, self.a.core, self.b.core))
        return total + sum(cc.mqtt.pending() for cc in (self.cc1, self.cc2)
                           if cc.mqtt is not None)

    def ccs(self) -> list[ClusterController]:
        return [self.cc1, self.cc2]

    def mqtt_traffic(self) -> str:
        """What the CCs published to and received from the broker (since their start)."""
        parts = []
        for name, cc in (("cc1", self.cc1), ("cc2", self.cc2)):
            if cc.mqtt is not None:
                parts.append(f"{name} published {cc.mqtt.published:,}, "
                             f"received {cc.mqtt.received:,}")
        return "; ".join(parts)


def raw_mqtt_client(broker: Mosquitto, name: str, max_inflight: int = 100,
                    socket_options: tuple[tuple[int, int, int], ...] = ()) -> aiomqtt.Client:
    """An aiomqtt client as the project's MQTT transport opens them (MQTT 5, ``max_inflight``
    QoS 1 messages unacknowledged at once, aiomqtt's defaults otherwise) but with a clean
    session, logging to ``bench.<name>``, with ``socket_options`` (``setsockopt`` arguments,
    e.g. TCP_NODELAY) on its socket; ``async with`` it."""
    return aiomqtt.Client(HOST, broker.port, identifier=f"{name}-{uuid.uuid4().hex[:8]}",
                          protocol=aiomqtt.ProtocolVersion.V5, keepalive=30,
                          max_inflight_messages=max_inflight,
                          logger=logging.getLogger(f"bench.{name}"),
                          socket_options=socket_options)


# ---------------------------------------------------------------------- raw websockets

#: the connection options of the project's transports (transports/websocket/settings.py
#: defaults: no compression, twice the frame limit, keep-alive every 20 s)
WS_OPTIONS: dict[str, Any] = {
    "compression": None,
    "max_size": 2 * DEFAULT_MAX_FRAME_BYTES,
    "ping_interval": 20.0,
    "ping_timeout": 20.0,
}


async def start_raw_server(handler: Callable[[ServerConnection], Awaitable[None]]
                           ) -> tuple[Server, str]:
    server = await serve(handler, HOST, 0, **WS_OPTIONS)
    port = next(iter(server.sockets)).getsockname()[1]
    return server, f"ws://{HOST}:{port}/"


# ---------------------------------------------------------------------- metrics on

#: the configuration of a CC with its admin endpoint on (any free port)
METRICS_ON = {"admin__enabled": "true", "admin__port": "0"}


#: the goal of the issue: with the admin endpoint on and scraped, at most 5 % slower
METRICS_GOAL = 0.95


@contextlib.asynccontextmanager
async def metered(enabled: bool, setup: type[ProjectSetup] = ProjectSetup, *args: Any,
                  **kwargs: Any) -> AsyncIterator[Any]:
    """``setup(*args, **kwargs)`` with its CCs' admin endpoints on (METRICS_ON) when
    ``enabled``, else None (``--metrics`` of the benchmarks)."""
    if not enabled:
        yield None
        return
    async with setup(*args, **kwargs, **METRICS_ON) as project:
        yield project


def metrics_summary(off: float, on: float, scraper: Scraper) -> str:
    """The lines that compare the best rates with the admin endpoint off and on (scraped)."""
    ratio = on / off
    return (f"metrics on and scraped             {on:9,.0f} msg/s ({1e6 / on:6.1f} us/msg)\n"
            f"ratio metrics on/off {ratio:4.2f}   goal >= {METRICS_GOAL}: "
            f"{'met' if ratio >= METRICS_GOAL else 'MISSED'}   ({scraper.scrapes} scrapes, "
            f"{scraper.bytes:,} B)")


def scraped(scraper: Scraper, one_round: Callable[[int], Awaitable[float]]
            ) -> Callable[[int], Awaitable[float]]:
    """``one_round`` with ``scraper`` scraping while it runs (the ``--metrics`` path)."""
    async def wrapped(n: int) -> float:
        async with scraper:
            return await one_round(n)
    return wrapped


class Scraper:
    """While ``async with scraper:`` is open, GET ``/metrics`` of every admin endpoint once a
    second and ``/status.json`` every other time: what a Prometheus and an open status page
    ask of a CC. The second counts only while open: a round shorter than the interval gets a
    share of the scrapes, not one each (the schedule goes on at the next round). In this
    process and event loop, like the CCs (what a scrape costs the CC is on its loop anyway)."""

    def __init__(self, urls: list[str], interval_s: float = 1.0) -> None:
        self.urls = urls
        self.interval_s = interval_s
        self.scrapes = 0
        self.bytes = 0
        self._left_s = 0.0  # of the interval, until the next scrape (the first: at once)
        self._tick = 0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Scraper:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            await cancel(self._task)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            try:
                await asyncio.sleep(self._left_s)
            except asyncio.CancelledError:
                self._left_s = max(0.0, self._left_s - (loop.time() - started))
                raise
            self._left_s = self.interval_s
            for url in self.urls:
                await self._get(url, "/metrics")
                if self._tick % 2 == 0:
                    await self._get(url, "/status.json")
            self._tick += 1

    async def _get(self, url: str, path: str) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
                         .encode())
            answer = await reader.read(-1)
        finally:
            writer.close()
        if not answer.startswith(b"HTTP/1.1 200 "):
            raise RuntimeError(f"{url}{path}: {answer[:100]!r}")
        self.scrapes += 1
        self.bytes += len(answer)


# ---------------------------------------------------------------------- profiling


async def profiled(coro: Awaitable[T], top: int = 25, by_package: bool = False,
                   per: tuple[int, str] | None = None) -> T:
    """Run ``coro`` under cProfile (the whole event loop: every task of this process) and
    print the ``top`` functions by own time and by cumulative time; with ``by_package``, first
    the time per owner and the own time per package (see :func:`print_by_package`); with
    ``per`` (how many, of what: ``(3000, "call")``), first the time per part of the path per
    one of them (see :func:`print_by_part`)."""
    profile = cProfile.Profile()
    profile.enable()
    try:
        return await coro
    finally:
        profile.disable()
        if per is not None:
            print_by_part(pstats.Stats(profile), *per)
        if by_package:
            print_by_package(pstats.Stats(profile))
        for key in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profile, stream=out).strip_dirs().sort_stats(key).print_stats(top)
            print(f"--- profile, top {top} by {key} ---")
            print("\n".join(line for line in out.getvalue().splitlines()[5:] if line.strip()))


def package_of(filename: str, function: str) -> str:
    """Where a profiled function lives: ``project runtime/router.py``, ``aiomqtt``, ``paho``,
    ``stdlib asyncio``, ``built-in <name>`` (C functions, named by what they are)..."""
    if filename == "~":  # a built-in: cProfile names it "<method 'x' of 'y' objects>" or so
        return f"built-in {function.strip('<>')}"
    path = Path(filename)
    if "site-packages" in path.parts:
        return path.parts[path.parts.index("site-packages") + 1].removesuffix(".py")
    with contextlib.suppress(ValueError):
        return f"project {path.relative_to(PROJECT_ROOT)}"
    if "python3" in filename:
        stdlib = path.parts[-2] if path.parts[-2] not in ("python3.11", "lib") else path.stem
        return f"stdlib {stdlib}"
    return filename


Func = tuple[str, int, str]  # (filename, line, function name), as cProfile names a function
PASS_THROUGH = "(built-ins and stdlib helpers without a caller)"


def print_by_package(stats: pstats.Stats, top: int = 30) -> None:
    """Where the profile's time went, per owner: the project's code, the benchmark, aiomqtt +
    paho-mqtt, gmqtt, websockets, asyncio / uvloop. Each owner is charged its own time plus
    that of the built-ins (socket calls, msgpack, ...) and stdlib helpers (logging, threading,
    contextlib, ...) it calls, split between callers as cProfile measured; then the own time
    per package / project file."""
    raw: dict[Func, tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    own: dict[str, float] = defaultdict(float)
    own_per_owner: dict[str, float] = defaultdict(float)
    charged: dict[str, float] = defaultdict(float)
    memo: dict[Func, dict[str, float]] = {}
    for func, (_, _, tottime, _, _) in raw.items():
        package = package_of(func[0], func[2])
        own[package] += tottime
        owner = _owner(package)
        if owner is not None:
            own_per_owner[owner] += tottime
        for name, share in _owner_shares(raw, func, memo, set()).items():
            charged[name] += tottime * share
    total = sum(own.values()) or 1.0
    print(f"--- profile: time per owner, with the built-ins and stdlib helpers it calls "
          f"(total {total:.2f} s; own time alone in brackets) ---")
    for name, seconds in sorted(charged.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds:7.3f} s  {100 * seconds / total:5.1f} %  "
              f"({100 * own_per_owner.get(name, 0.0) / total:5.1f} %)  {name}")
    print(f"--- profile: own time per package / project file, top {top} ---")
    for name, seconds in sorted(own.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {seconds:7.3f} s  {100 * seconds / total:5.1f} %  {name}")


#: the parts of a message's path, each with the functions in it ("file:function" begins
#: with, or contains, one of the patterns; the first part that matches takes a function)
PATH_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("websocket frame read: the own reader, websockets' parser, data_received",
     ("websockets/", "connection.py:data_received", "websocket/framing.py:feed",
      "websocket/framing.py:read_binary_frames",
      "websocket/framing.py:_between_frames", "websocket/framing.py:_frame_loop")),
    ("websocket frame write: framing, send_frames and its socket write",
     ("connection.py:send_frames", "websocket/framing.py")),
    ("frame decode: decode_frame, replyTo addresses",
     ("messages.py:decode_frame", "messages.py:_optional_fields", "runtime/addresses.py",
      "smrf")),
    ("frame encode", ("messages.py:encode_frame",)),
    ("router: receive, route, _send, rules, routing table, queues, clock",
     ("runtime/router.py", "runtime/rules.py", "runtime/routing.py", "runtime/queues.py",
      "runtime/clock.py", "runtime/telemetry")),
    ("outbox and the turn coalescer", ("transports/outbox.py", "transports/coalescing.py")),
    ("websocket ends: server / client / inprocess send and on_frame",
     ("websocket/server.py", "websocket/client.py", "transports/inprocess.py")),
    ("proxy: _invoke, the message, waiting for the answer",
     ("programming/proxies.py", "programming/joynr_runtime.py")),
    ("bodies: request / reply encode and decode", ("runtime/payloads.py", "runtime/bodies.py")),
    ("skeleton / provider: dispatch, call, reply",
     ("programming/providers.py", "programming/calls.py")),
    ("MQTT client: packets, session, socket writes", ("mqtt/mqtt5/",)),
    ("MQTT transport: topics, dispatch, acknowledgements", ("transports/mqtt/",)),
    ("the CC's discovery and its GCD link", ("cluster_controller/",)),
    ("the GCD", ("pyjoynr/gcd/",)),
    ("typed values (interface)", ("runtime/interface.py",)),
    ("the benchmark itself", ("bench/",)),
)
OTHER_PART = "the rest (other project code, other libraries, the event loop's Python part)"


def _part_of(func: Func) -> str | None:
    """The part of the path ``func`` belongs to; None: a built-in or stdlib helper (charged
    to its callers)."""
    package = package_of(func[0], func[2])
    if _owner(package) is None:
        return None
    key = f"{Path(func[0]).as_posix()}:{func[2]}"
    for name, patterns in PATH_PARTS:
        if any(pattern in key for pattern in patterns):
            return name
    return OTHER_PART


def print_by_part(stats: pstats.Stats, count: int, unit: str) -> None:
    """Where the profile's time went per part of the path (:data:`PATH_PARTS`), in
    microseconds per ``unit`` (``count`` of them in the profile) and as a share: each
    function's own time, a built-in's or stdlib helper's split between its callers as with
    :func:`print_by_package`. cProfile sees Python only (the event loop's waiting and socket
    reads are in no part, a socket write is in the part that writes) and makes every call
    slower: compare the shares, not the microseconds with the unprofiled figure."""
    raw: dict[Func, tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    charged: dict[str, float] = defaultdict(float)
    memo: dict[Func, dict[str, float]] = {}
    for func, (_, _, tottime, _, _) in raw.items():
        for name, share in _owner_shares(raw, func, memo, set(), _part_of).items():
            charged[name] += tottime * share
    total = sum(charged.values()) or 1.0
    print(f"--- profile: time per part of the path, per {unit} ({count:,} {unit}s, "
          f"{1e6 * total / max(count, 1):.1f} us per {unit} profiled) ---")
    for name, seconds in sorted(charged.items(), key=lambda kv: -kv[1]):
        print(f"  {1e6 * seconds / max(count, 1):8.1f} us  {100 * seconds / total:5.1f} %  "
              f"{name}")


def _owner_shares(raw: dict[Func, tuple[Any, ...]], func: Func,
                  memo: dict[Func, dict[str, float]], visiting: set[Func],
                  owner_of: Callable[[Func], str | None] | None = None) -> dict[str, float]:
    """Which owners ``func``'s own time is charged to (fractions summing to 1): its own
    owner, or for a built-in or stdlib helper its callers' owners, in proportion to the time
    it spent under each caller. ``owner_of``: what owns a function (None: charged to its
    callers); the default, :func:`_owner` of its package."""
    owner = (_owner(package_of(func[0], func[2])) if owner_of is None else owner_of(func))
    if owner is not None:
        return {owner: 1.0}
    if func in memo:
        return memo[func]
    callers: dict[Func, tuple[Any, ...]] = raw[func][4] if func in raw else {}
    weights = {caller: float(timing[2]) for caller, timing in callers.items()
               if caller not in visiting}
    total = sum(weights.values())
    if total <= 0:
        weights = {caller: float(timing[0]) for caller, timing in callers.items()
                   if caller not in visiting}  # no measurable time: by number of calls
        total = sum(weights.values())
    shares: dict[str, float] = defaultdict(float)
    if total <= 0:
        shares[PASS_THROUGH] = 1.0
    else:
        visiting.add(func)
        for caller, weight in weights.items():
            for name, share in _owner_shares(raw, caller, memo, visiting,
                                             owner_of).items():
                shares[name] += share * weight / total
        visiting.discard(func)
    if not visiting:  # a result that depends on no cut cycle
        memo[func] = shares
    return shares


def _owner(package: str) -> str | None:
    """The owner a package's time is charged to; None: a built-in or stdlib helper, charged
    to its callers."""
    if package.startswith("project bench"):
        return "the benchmark itself (bench/)"
    if package.startswith("project"):
        return "project code (runtime/, transports/)"
    if package in ("aiomqtt", "paho"):
        return "aiomqtt + paho-mqtt"
    if package in ("gmqtt", "websockets"):
        return package
    if package.startswith(("stdlib asyncio", "uvloop")) or "uvloop" in package:
        return "asyncio / uvloop (the event loop)"
    return None


@dataclass
class Latency:
    """p50, p99 and mean of a list of durations (ns), in microseconds."""

    p50_us: float
    p99_us: float
    mean_us: float

    @classmethod
    def of(cls, samples_ns: list[int]) -> Latency:
        ordered = sorted(samples_ns)
        n = len(ordered)
        return cls(ordered[n // 2] / 1e3, ordered[min(n - 1, n * 99 // 100)] / 1e3,
                   sum(ordered) / n / 1e3)

    def best(self, other: Latency | None) -> Latency:
        """Each figure's best (lowest) of this and ``other`` (rounds on a noisy machine)."""
        if other is None:
            return self
        return Latency(min(self.p50_us, other.p50_us), min(self.p99_us, other.p99_us),
                       min(self.mean_us, other.mean_us))

    def line(self) -> str:
        return (f"p50 {self.p50_us:8.1f} us   p99 {self.p99_us:8.1f} us   "
                f"mean {self.mean_us:8.1f} us")

