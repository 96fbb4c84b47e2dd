"""The websocket settings: one frozen, validated class per end.

:class:`WebSocketServerSettings` is the cluster controller's ``[websocket]`` configuration
section as it is (the TOML loader builds it; the server transport takes it);
:class:`WebSocketClientSettings` is what a libjoynr runtime's connection to its cluster
controller is made of. Both hold only values a TOML file can say: TLS is named by PEM file
paths, and the transports build their SSL contexts from them (:func:`server_ssl_context`,
:func:`client_ssl_context`).

Frame dialects (see transports.dialects): the server speaks both on one port and tells a
connection's dialect by its first frame; a client speaks the one of its ``dialect`` setting:
``"native"`` (the msgpack frame of runtime.messages) or ``"joynr"`` (joynr's init frame and
SMRF frames of runtime.smrf, as joynr's Java, C++ and JavaScript runtimes speak).

Owner ids (wss only): a server with ``tls_client_ca_file`` asks clients for a certificate and
verifies it against those CAs; the common name (CN) of a client's certificate is the owner id of
its connection. On a joynr-dialect connection with an owner id, every message must be
custom-signed with exactly the owner id's UTF-8 bytes, as joynr's C++ cluster controller
requires; other messages are refused (``bad-owner``). A client signs its SMRF frames with its
``owner_id`` setting (the CN of its ``tls_certificate``).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

from pyjoynr.runtime.messages import DEFAULT_MAX_FRAME_BYTES, DIALECTS, JOYNR, NATIVE

__all__ = [
    "DEFAULT_MAX_BACKLOG_BYTES",
    "DEFAULT_MAX_FRAGMENTS",
    "DIALECTS",
    "JOYNR",
    "MIN_FRAME_BYTES",
    "NATIVE",
    "WebSocketClientSettings",
    "WebSocketServerSettings",
    "client_ssl_context",
    "server_ssl_context",
]

#: the smallest frame limit accepted (an init frame and a small message must fit)
MIN_FRAME_BYTES = 1024
#: fragments a websocket message may come in, by default (the project's own ends send one)
DEFAULT_MAX_FRAGMENTS = 4096
#: bytes of the messages a connection keeps before they can be handed on (before its handler is
#: set: e.g. while the server decides whether a connection may take over a client id); at the
#: bound, reading pauses until they are handed on (an empty backlog takes one message of any size)
DEFAULT_MAX_BACKLOG_BYTES = 1024 * 1024
#: the longest owner id (a custom signature's size is a uint16)
MAX_OWNER_ID_BYTES = 0xFFFF


def _check_common(settings: WebSocketServerSettings | WebSocketClientSettings) -> None:
    if settings.max_frame_bytes < MIN_FRAME_BYTES:
        raise ValueError(f"max_frame_bytes must be at least {MIN_FRAME_BYTES}, "
                         f"got {settings.max_frame_bytes}")
    if settings.max_fragments_per_message < 1:
        raise ValueError("max_fragments_per_message must be >= 1, got "
                         f"{settings.max_fragments_per_message}")
    # the server's settings come from the CC's configuration file (seconds), the client's
    # are part of the application API (milliseconds, as every time there)
    for name in (("ping_interval_s", "ping_timeout_s")
                 if isinstance(settings, WebSocketServerSettings)
                 else ("ping_interval_ms", "ping_timeout_ms")):
        if not getattr(settings, name) > 0:
            raise ValueError(f"{name} must be > 0, got {getattr(settings, name)}")


@dataclass(frozen=True)
class WebSocketServerSettings:
    """The cluster controller's websocket server (its ``[websocket]`` section)."""

    #: address libjoynr runtimes connect to
    host: str = "127.0.0.1"
    #: port (0: any free port; the transport's ``address`` tells the real one)
    port: int = 4242
    #: the path served; requests for other paths (and those of ``uid_paths``) get an HTTP 404
    path: str = "/"
    #: more paths served, each naming the uid (for access control) of the connections on it
    #: that present no client certificate (with one, its CN is the uid)
    uid_paths: dict[str, str] = field(default_factory=dict)
    #: TLS (wss) when both are set: PEM certificate chain file and private key file
    tls_certificate: str = ""
    tls_private_key: str = ""
    #: wss: PEM file of the CA certificates that sign client certificates. When set, a client
    #: may present a certificate, which must verify against these CAs (else the TLS handshake
    #: fails); its CN is the owner id of the connection (see the module docstring). Empty: no
    #: client certificates are asked for
    tls_client_ca_file: str = ""
    #: wss with ``tls_client_ca_file``: a client without a valid certificate is refused in the
    #: TLS handshake (mutual TLS, as joynr's C++ cluster controller does)
    tls_require_client_certificate: bool = False
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
    #: bytes of the messages a client sends after its init frame that are kept until its
    #: connection is accepted (while its client id is taken over from a silent connection), then
    #: routed in order; at this bound the server stops reading the connection until then (an
    #: empty backlog takes one message of any size)
    max_backlog_bytes_per_connection: int = DEFAULT_MAX_BACKLOG_BYTES

    def __post_init__(self) -> None:
        if not 0 <= self.port < 65536:
            raise ValueError(f"port must be in 0..65535, got {self.port}")
        if not self.path.startswith("/"):
            raise ValueError(f"path must start with '/', got {self.path!r}")
        for extra in self.uid_paths:
            if not extra.startswith("/"):
                raise ValueError(f"uid_paths: {extra!r} must start with '/'")
        if bool(self.tls_certificate) != bool(self.tls_private_key):
            raise ValueError("tls_certificate and tls_private_key go together")
        if self.tls_client_ca_file and not self.tls_certificate:
            raise ValueError("tls_client_ca_file needs wss (tls_certificate and "
                             "tls_private_key)")
        if self.tls_require_client_certificate and not self.tls_client_ca_file:
            raise ValueError("tls_require_client_certificate needs tls_client_ca_file")
        _check_common(self)
        if not self.init_timeout_s > 0:
            raise ValueError(f"init_timeout_s must be > 0, got {self.init_timeout_s}")
        if self.max_queued_per_connection < 1:
            raise ValueError("max_queued_per_connection must be >= 1, got "
                             f"{self.max_queued_per_connection}")
        if self.max_queued_bytes_per_connection < 1:
            raise ValueError("max_queued_bytes_per_connection must be >= 1, got "
                             f"{self.max_queued_bytes_per_connection}")
        if self.max_backlog_bytes_per_connection < 1:
            raise ValueError("max_backlog_bytes_per_connection must be >= 1, got "
                             f"{self.max_backlog_bytes_per_connection}")

    @property
    def tls(self) -> bool:
        return bool(self.tls_certificate)


@dataclass(frozen=True)
class WebSocketClientSettings:
    """A libjoynr runtime's connection to its cluster controller (its times in milliseconds,
    as every time of the application API)."""

    #: messages larger than this are refused one by one; larger than twice this, the
    #: connection is closed with 1009
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: keep-alive (ms): a ping every interval; no pong within the timeout = dead connection
    #: (the timeout also bounds the wait for the peer's part of the close handshake)
    ping_interval_ms: int = 20_000
    ping_timeout_ms: int = 20_000
    #: milliseconds to open a connection (TCP, TLS and websocket handshakes)
    open_timeout_ms: int = 10_000
    #: reconnect backoff: first wait and longest wait (ms), each with +-20 % jitter
    reconnect_initial_ms: int = 50
    reconnect_max_ms: int = 5_000
    #: messages waiting to be written before sends are refused (the router queues them)
    max_queued: int = 10_000
    #: ... and the bytes they may hold (an empty queue takes one message of any size)
    max_queued_bytes: int = 16 * 1024 * 1024
    #: a message sent in more fragments than this closes the connection (1009)
    max_fragments_per_message: int = DEFAULT_MAX_FRAGMENTS
    #: for wss: PEM file of the CA certificates to trust; empty: the system's
    tls_ca_file: str = ""
    #: for wss: this runtime's client certificate (PEM chain) and its private key, presented
    #: to a cluster controller that asks for one; both or neither
    tls_certificate: str = ""
    tls_private_key: str = ""
    #: the frame dialect: "native" (the msgpack frame) or "joynr" (joynr's init frame, SMRF
    #: frames), for a cluster controller of joynr's
    dialect: str = NATIVE
    #: joynr dialect: every frame is custom-signed with these bytes (UTF-8), as joynr's
    #: runtimes sign with their owner id; a cluster controller that knows the connection's
    #: owner id (the CN of its client certificate) refuses frames signed otherwise. Empty: not
    #: signed
    owner_id: str = ""

    def __post_init__(self) -> None:
        _check_common(self)
        if self.dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, got "
                             f"{self.dialect!r}")
        if self.owner_id:
            if self.dialect != JOYNR:
                raise ValueError("owner_id needs the joynr dialect (the native frame carries "
                                 "no signature)")
            try:
                size = len(self.owner_id.encode("utf-8"))
            except UnicodeEncodeError:
                raise ValueError("owner_id must be encodable as UTF-8") from None
            if size > MAX_OWNER_ID_BYTES:
                raise ValueError(f"owner_id must be at most {MAX_OWNER_ID_BYTES} bytes, got "
                                 f"{size}")
        if bool(self.tls_certificate) != bool(self.tls_private_key):
            raise ValueError("tls_certificate and tls_private_key go together")
        if not self.open_timeout_ms > 0:
            raise ValueError(f"open_timeout_ms must be > 0, got {self.open_timeout_ms}")
        if not 0 < self.reconnect_initial_ms <= self.reconnect_max_ms:
            raise ValueError("need 0 < reconnect_initial_ms <= reconnect_max_ms, got "
                             f"{self.reconnect_initial_ms} and {self.reconnect_max_ms}")
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
    if settings.tls_client_ca_file:
        context.load_verify_locations(cafile=settings.tls_client_ca_file)
        context.verify_mode = (ssl.CERT_REQUIRED if settings.tls_require_client_certificate
                               else ssl.CERT_OPTIONAL)
    return context


def client_ssl_context(settings: WebSocketClientSettings) -> ssl.SSLContext:
    """The SSL context for wss: the configured CA file, or the system's trust store; the
    client certificate, when one is configured."""
    context = ssl.create_default_context(cafile=settings.tls_ca_file or None)
    if settings.tls_certificate:
        context.load_cert_chain(settings.tls_certificate, settings.tls_private_key)
    return context
