"""Shared helpers of the websocket benchmarks (bench/websocket_oneway.py, bench/websocket_rpc.py).

- :class:`Sink` / :class:`SinkProvider`: the benchmark interface (a one-way ``push`` and a
  request/reply ``echo``) and its provider, which counts pushes in a :class:`Progress`;
- :class:`ProjectSetup`: an in-process cluster controller with two libjoynr runtimes, each on
  its own websocket connection: the provider lives in runtime B, the proxy in runtime A;
- :func:`start_raw_server`: a bare ``websockets`` server on 127.0.0.1 with the same connection
  options as the project's transports (no compression, same frame limit and keep-alive);
- :func:`profiled`: cProfile around a coroutine, for ``--profile``.

Nothing here changes the project: it is only driven through its public API.
"""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import gc
import io
import logging
import pstats
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack
from importlib.metadata import version
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from websockets.asyncio.server import Server, ServerConnection, serve

from runtime.clock import now_ms
from runtime.cluster_controller import ClusterController, ClusterControllerConfig
from runtime.dispatch import Provider, Proxy
from runtime.interface import interface, interface_def, one_way
from runtime.messages import DEFAULT_MAX_FRAME_BYTES, Message, MessageType, encode_frame
from runtime.payloads import OneWayRequest, Request
from runtime.runtime import LibjoynrRuntime, connect

T = TypeVar("T")

HOST = "127.0.0.1"
DOMAIN = "bench"
#: a generous bound for one timed round: the loops always end, even when messages get lost
ROUND_TIMEOUT_S = 60.0


def setup_logging() -> None:
    """WARNING and up only: INFO lines would slow the runs down."""
    logging.basicConfig(level=logging.WARNING,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")


def environment() -> str:
    return (f"Python {sys.version.split()[0]}, uvloop {version('uvloop')}, "
            f"websockets {version('websockets')}, msgpack {version('msgpack')}")


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


def cc_config(data_dir: str) -> ClusterControllerConfig:
    return ClusterControllerConfig.load(None, env={
        "JOYNR_CC__WEBSOCKET__HOST": HOST,
        "JOYNR_CC__WEBSOCKET__PORT": "0",
        "JOYNR_CC__CLUSTER_CONTROLLER__DATA_DIR": data_dir,
        "JOYNR_CC__LOGGING__LEVEL": "WARNING",
    })


class ProjectSetup:
    """``async with ProjectSetup() as p``: a CC, runtimes ``p.a`` (proxy ``p.proxy``) and
    ``p.b`` (provider ``p.provider``), all in this process and event loop."""

    cc: ClusterController
    a: LibjoynrRuntime
    b: LibjoynrRuntime
    provider: SinkProvider
    proxy: Proxy

    def __init__(self, ttl_ms: int = 60_000) -> None:
        self.ttl_ms = ttl_ms
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> ProjectSetup:
        stack = self._stack
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-cc-"))
        self.cc = await stack.enter_async_context(ClusterController(cc_config(data_dir)))
        url = self.cc.websocket_address.url
        self.a = await stack.enter_async_context(await connect(url, client_id="bench-a"))
        self.b = await stack.enter_async_context(await connect(url, client_id="bench-b"))
        self.provider = SinkProvider()
        await self.b.register_provider(DOMAIN, self.provider)
        self.proxy = await self.a.build_proxy(Sink, DOMAIN, ttl_ms=self.ttl_ms)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self._stack.aclose()

    def counters(self) -> dict[str, dict[str, int]]:
        """Every non-empty counter of the CC and both runtimes (drops, refusals, queueing)."""
        found = {
            "cc.router": self.cc.router.counters,
            "cc.websocket": self.cc.websocket.counters,
            "a.router": self.a.router.counters,
            "a.transport": self.a.transport.counters,
            "b.router": self.b.router.counters,
            "b.transport": self.b.transport.counters,
        }
        return {name: dict(c) for name, c in found.items() if c}

    def dropped(self) -> int:
        """Messages dropped anywhere on the path (router drops and refused frames)."""
        total = 0
        for name, counter in self.counters().items():
            for key, value in counter.items():
                if key.startswith("dropped-") or name.endswith(("websocket", "transport")):
                    total += value
        return total

    def queued(self) -> int:
        return self.cc.router.queued() + self.a.router.queued() + self.b.router.queued()

    def _frame(self, message_type: MessageType, body: bytes) -> bytes:
        proxy = self.proxy
        return encode_frame(Message(
            type=message_type, sender=proxy.participant_id,
            recipient=proxy.provider_participant_id, expiry_date_ms=now_ms() + self.ttl_ms,
            body=body,
            reply_to=None if message_type is MessageType.ONE_WAY else self.a.reply_to_address,
        ))

    def one_way_frame(self, data: str) -> bytes:
        """A frame as the proxy sends for ``push(data)`` (same fields and sizes)."""
        types = interface_def(Sink).methods["push"].param_datatypes
        return self._frame(MessageType.ONE_WAY,
                           OneWayRequest("push", [data], types).to_body())

    def request_frame(self, data: str) -> bytes:
        """A frame as the proxy sends for ``echo(data)`` (same fields and sizes)."""
        types = interface_def(Sink).methods["echo"].param_datatypes
        body = Request("0" * 32, "echo", [data], types).to_body()  # a uuid4().hex id
        return self._frame(MessageType.REQUEST, body)


# ---------------------------------------------------------------------- raw websockets

#: the connection options of the project's transports (transports/websocket_*.py)
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


# ---------------------------------------------------------------------- profiling


async def profiled(coro: Coroutine[Any, Any, T], top: int = 25) -> T:
    """Run ``coro`` under cProfile (the whole event loop: every task of this process) and
    print the ``top`` functions by own time and by cumulative time."""
    profile = cProfile.Profile()
    profile.enable()
    try:
        return await coro
    finally:
        profile.disable()
        for key in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profile, stream=out).strip_dirs().sort_stats(key).print_stats(top)
            print(f"--- profile, top {top} by {key} ---")
            print("\n".join(line for line in out.getvalue().splitlines()[5:] if line.strip()))
