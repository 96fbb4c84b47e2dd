"""The MQTT settings: one frozen, validated section, read from ``[mqtt]`` of a process's TOML
configuration and taken as it is by the MQTT transport and the client seam.

What is not configuration but follows from the process (the topic a cluster controller is
reached at, its client id, broker URLs resolved from ``"embedded"``, a TLS context) is passed to
the transport beside this section.

Frame dialects: a backend speaks ``native`` (this project's msgpack frames, published to the
address's topic) or ``joynr`` (joynr's SMRF frames, unicast to ``<address topic>/low``, custom
headers also as MQTT 5 user properties ``c-<key>``) in what this process originates on it:
``dialect`` below, or ``?dialect=`` in a backend's URL. Whatever a backend's dialect, what
arrives is read in its own, and answers go back in the dialect of their request
(transports.mqtt.dialect).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

from pyjoynr.transports.mqtt.dialect import DIALECTS

__all__ = ["EMBEDDED", "BrokerUrl", "MqttSettings", "parse_broker_url"]

#: the broker URL that names the embedded broker of the cluster controller
EMBEDDED = "embedded"

VERSIONS = ("5", "3.1.1")
#: the MQTT client implementations (transports.mqtt.client): the project's own, or aiomqtt
CLIENTS = ("native", "aiomqtt")

_SCHEMES = {"mqtt": False, "tcp": False, "mqtts": True, "ssl": True}
_VERSIONS = {"5": "5", "5.0": "5", "3.1.1": "3.1.1", "311": "3.1.1", "4": "3.1.1"}


@dataclass(frozen=True)
class BrokerUrl:
    host: str
    port: int
    tls: bool
    username: str | None = None
    password: str | None = None
    #: "5" or "3.1.1"; None: the transport's default
    version: str | None = None
    #: the frame dialect of what this process originates on the backend: "native" or
    #: "joynr"; None: the settings' ``dialect``
    dialect: str | None = None

    def __str__(self) -> str:  # never shows the password
        user = f"{self.username}@" if self.username else ""
        query = "&".join(f"{name}={value}" for name, value in (
            ("version", self.version), ("dialect", self.dialect)) if value)
        return (f"{'mqtts' if self.tls else 'mqtt'}://{user}{self.host}:{self.port}"
                f"{'?' if query else ''}{query}")


def parse_broker_url(url: str) -> BrokerUrl:
    """Parse a broker URL; ValueError saying what is wrong."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"bad broker URL {url!r}: {exc}") from None
    if parts.scheme not in _SCHEMES:
        raise ValueError(f"bad broker URL {url!r}: the scheme must be one of "
                         f"{', '.join(sorted(_SCHEMES))}")
    if not parts.hostname:
        raise ValueError(f"bad broker URL {url!r}: no host")
    tls = _SCHEMES[parts.scheme]
    version = None
    query = parse_qs(parts.query)
    unknown = set(query) - {"version", "dialect"}
    if unknown:
        raise ValueError(f"bad broker URL {url!r}: unknown parameter(s) {sorted(unknown)}")
    if "version" in query:
        version = _VERSIONS.get(query["version"][-1])
        if version is None:
            raise ValueError(f"bad broker URL {url!r}: version must be 5 or 3.1.1")
    dialect = None
    if "dialect" in query:
        dialect = query["dialect"][-1]
        if dialect not in DIALECTS:
            raise ValueError(f"bad broker URL {url!r}: dialect must be one of "
                             f"{', '.join(DIALECTS)}")
    return BrokerUrl(
        host=parts.hostname,
        port=port or (8883 if tls else 1883),
        tls=tls,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        version=version,
        dialect=dialect,
    )


@dataclass(frozen=True)
class MqttSettings:
    #: GBID -> broker URL, in order; the first GBID is the default backend. URLs:
    #: mqtt://host:port, mqtts://host:port (TLS), mqtt://user:password@host:port, and
    #: ?version=3.1.1 or ?version=5; "embedded": the embedded broker. Empty: no MQTT.
    backends: dict[str, str] = field(default_factory=dict)
    #: a cluster controller's topic is <topic_prefix><cluster controller id>
    topic_prefix: str = "joynr/cc/"
    #: MQTT protocol version for backends whose URL does not say: "5" or "3.1.1"
    version: str = "5"
    keepalive_s: int = 30
    #: the broker keeps the session (subscriptions, QoS 1 messages) this long while the
    #: connection is down; 0: clean sessions
    session_expiry_s: int = 3600
    connect_timeout_s: float = 10.0
    #: QoS 1 messages published and not yet acknowledged, per backend
    max_inflight: int = 100
    #: messages waiting for one backend (e.g. while it is down) before sends are refused
    max_queued_per_backend: int = 10_000
    #: ... and the bytes they may hold, with those in flight (an empty queue takes one message
    #: of any size)
    max_queued_bytes_per_backend: int = 32 * 1024 * 1024
    #: the fraction of those two that the messages from one connection (a websocket client,
    #: another backend) may take, so that one sender cannot fill a backend's queue for all;
    #: 1.0: no limit of its own
    max_queued_share_per_connection: float = 0.5
    #: the longest a message waits for its broker (ms), whatever the expiry its sender chose
    max_queue_wait_ms: int = 300_000
    #: incoming MQTT messages larger than this are refused (bytes)
    max_message_bytes: int = 4 * 1024 * 1024
    #: CA certificates (PEM) for mqtts backends; empty: the system's
    tls_ca_file: str = ""
    #: first and longest wait before connecting again after a connection failed (s)
    reconnect_initial_s: float = 0.1
    reconnect_max_s: float = 5.0
    #: longest wait before connecting again after another client took this one's session
    #: (the same client id): the waits grow from reconnect_max_s, doubling, to this (s)
    takeover_backoff_max_s: float = 60.0
    #: ids of received messages remembered to drop QoS 1 redeliveries
    duplicate_window: int = 100_000
    #: the MQTT client: "native" (the project's own, transports.mqtt.mqtt5) or "aiomqtt"
    client: str = "native"
    #: the frame dialect of what this process originates on backends whose URL does not say
    #: (?dialect=): "native" (msgpack frames, to the address's topic) or "joynr" (SMRF
    #: frames: unicast to <address topic>/low, multicast to the multicast topic, custom
    #: headers also as MQTT 5 user properties c-<key>). Received messages are read in their
    #: own dialect whatever this says, and answers go back in the dialect of their request
    dialect: str = "native"

    def __post_init__(self) -> None:
        for gbid, url in self.backends.items():
            if not gbid or "/" in gbid:
                raise ValueError(f"bad GBID {gbid!r}")
            if url != EMBEDDED:
                parse_broker_url(url)  # ValueError with the reason
        if self.version not in VERSIONS:
            raise ValueError(f"version must be \"5\" or \"3.1.1\", not {self.version!r}")
        for name in ("keepalive_s", "max_inflight", "max_queued_per_backend",
                     "max_queued_bytes_per_backend", "max_queue_wait_ms",
                     "max_message_bytes", "duplicate_window"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, not "
                             f"{self.dialect!r}")
        if self.client not in CLIENTS:
            raise ValueError(f"client must be one of {', '.join(CLIENTS)}, not "
                             f"{self.client!r}")
        if not 0 < self.max_queued_share_per_connection <= 1:
            raise ValueError("max_queued_share_per_connection must be > 0 and <= 1, got "
                             f"{self.max_queued_share_per_connection}")
        if self.session_expiry_s < 0:
            raise ValueError("session_expiry_s must be >= 0")
        if not self.connect_timeout_s > 0:
            raise ValueError("connect_timeout_s must be > 0")
        if not 0 < self.reconnect_initial_s <= self.reconnect_max_s:
            raise ValueError("reconnect_initial_s must be > 0 and <= reconnect_max_s")
        if not self.takeover_backoff_max_s >= self.reconnect_max_s:
            raise ValueError("takeover_backoff_max_s must be >= reconnect_max_s")

    def dialect_of(self, url: BrokerUrl) -> str:
        """The dialect of a backend at ``url``: its own, else the section's."""
        return url.dialect or self.dialect

    @property
    def default_gbid(self) -> str | None:
        """The GBID of the default backend (the first); None without backends."""
        return next(iter(self.backends), None)
