"""The websocket settings: one frozen, validated class per end.

:class:`WebSocketServerSettings` is the cluster controller's ``[websocket]`` configuration
section as it is (the TOML loader builds it; the server transport takes it);
:class:`WebSocketClientSettings` is what a libjoynr runtime's connection to its cluster
controller is made of. Both hold only values a TOML file can say: TLS is named by PEM file
paths, and the transports build their SSL contexts from them (:func:`server_ssl_context`,
:func:`client_ssl_context`).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from runtime.messages import DEFAULT_MAX_FRAME_BYTES

__all__ = [
    "DEFAULT_MAX_FRAGMENTS",
    "MIN_FRAME_BYTES",
    "WebSocketClientSettings",
    "WebSocketServerSettings",
    "client_ssl_context",
    "server_ssl_context",
]

#: the smallest frame limit accepted (an init frame and a small message must fit)
MIN_FRAME_BYTES = 1024
#: fragments a websocket message may come in, by default (the project's own ends send one)
DEFAULT_MAX_FRAGMENTS = 4096


def _check_common(settings: WebSocketServerSettings | WebSocketClientSettings) -> None:
    if settings.max_frame_bytes < MIN_FRAME_BYTES:
        raise ValueError(f"max_frame_bytes must be at least {MIN_FRAME_BYTES}, "
                         f"got {settings.max_frame_bytes}")
    if settings.max_fragments_per_message < 1:
        raise ValueError("max_fragments_per_message must be >= 1, got "
                         f"{settings.max_fragments_per_message}")
    for name in ("ping_interval_s", "ping_timeout_s"):
        if not getattr(settings, name) > 0:
            raise ValueError(f"{name} must be > 0, got {getattr(settings, name)}")


@dataclass(frozen=True)
class WebSocketServerSettings:
    """The cluster controller's websocket server (its ``[websocket]`` section)."""

    #: address libjoynr runtimes connect to
    host: str = "127.0.0.1"
    #: port (0: any free port; the transport's ``address`` tells the real one)
    port: int = 4242
    #: the one path served; requests for other paths get an HTTP 404
    path: str = "/"
    #: TLS (wss) when both are set: PEM certificate chain file and private key file
    tls_certificate: str = ""
    tls_private_key: str = ""
    #: messages larger than this are refused one by one (counted, connection kept); larger
    #: than twice this, the connection is closed with 1009
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: keep-alive: a ping every interval; a connection without pong within the timeout is
    #: dead (the timeout also bounds the wait for the peer's part of the close handshake)
    ping_interval_s: float = 20.0
    ping_timeout_s: float = 20.0
    #: seconds a new connection has to send its init frame
    init_timeout_s: float = 10.0
    #: messages waiting to be written to one connection before sends to it are refused
    max_queued_per_connection: int = 10_000
    #: ... and the bytes they may hold (an empty queue takes one message of any size)
    max_queued_bytes_per_connection: int = 16 * 1024 * 1024
    #: a message sent in more fragments than this closes the connection (1009)
    max_fragments_per_message: int = DEFAULT_MAX_FRAGMENTS

    def __post_init__(self) -> None:
        if not 0 <= self.port < 65536:
            raise ValueError(f"port must be in 0..65535, got {self.port}")
        if not self.path.startswith("/"):
            raise ValueError(f"path must start with '/', got {self.path!r}")
        if bool(self.tls_certificate) != bool(self.tls_private_key):
            raise ValueError("tls_certificate and tls_private_key go together")
        _check_common(self)
        if not self.init_timeout_s > 0:
            raise ValueError(f"init_timeout_s must be > 0, got {self.init_timeout_s}")
        if self.max_queued_per_connection < 1:
            raise ValueError("max_queued_per_connection must be >= 1, got "
                             f"{self.max_queued_per_connection}")
        if self.max_queued_bytes_per_connection < 1:
            raise ValueError("max_queued_bytes_per_connection must be >= 1, got "
                             f"{self.max_queued_bytes_per_connection}")

    @property
    def tls(self) -> bool:
        return bool(self.tls_certificate)


@dataclass(frozen=True)
class WebSocketClientSettings:
    """A libjoynr runtime's connection to its cluster controller."""

    #: messages larger than this are refused one by one; larger than twice this, the
    #: connection is closed with 1009
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: keep-alive: a ping every interval; no pong within the timeout = dead connection
    #: (the timeout also bounds the wait for the peer's part of the close handshake)
    ping_interval_s: float = 20.0
    ping_timeout_s: float = 20.0
    #: seconds to open a connection (TCP, TLS and websocket handshakes)
    open_timeout_s: float = 10.0
    #: reconnect backoff: first wait and longest wait (s), each with +-20 % jitter
    reconnect_initial_s: float = 0.05
    reconnect_max_s: float = 5.0
    #: messages waiting to be written before sends are refused (the router queues them)
    max_queued: int = 10_000
    #: ... and the bytes they may hold (an empty queue takes one message of any size)
    max_queued_bytes: int = 16 * 1024 * 1024
    #: a message sent in more fragments than this closes the connection (1009)
    max_fragments_per_message: int = DEFAULT_MAX_FRAGMENTS
    #: for wss: PEM file of the CA certificates to trust; empty: the system's
    tls_ca_file: str = ""

    def __post_init__(self) -> None:
        _check_common(self)
        if not self.open_timeout_s > 0:
            raise ValueError(f"open_timeout_s must be > 0, got {self.open_timeout_s}")
        if not 0 < self.reconnect_initial_s <= self.reconnect_max_s:
            raise ValueError("need 0 < reconnect_initial_s <= reconnect_max_s, got "
                             f"{self.reconnect_initial_s} and {self.reconnect_max_s}")
        if self.max_queued < 1:
            raise ValueError(f"max_queued must be >= 1, got {self.max_queued}")
        if self.max_queued_bytes < 1:
            raise ValueError(f"max_queued_bytes must be >= 1, got {self.max_queued_bytes}")


def server_ssl_context(settings: WebSocketServerSettings) -> ssl.SSLContext | None:
    """The server's SSL context (None without TLS); OSError/SSLError for unusable files."""
    if not settings.tls:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(settings.tls_certificate, settings.tls_private_key)
    return context


def client_ssl_context(settings: WebSocketClientSettings) -> ssl.SSLContext:
    """The SSL context for wss: the configured CA file, or the system's trust store."""
    return ssl.create_default_context(cafile=settings.tls_ca_file or None)
