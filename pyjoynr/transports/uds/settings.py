"""The Unix domain socket settings: one frozen, validated class per end.

:class:`UdsServerSettings` is the cluster controller's ``[uds]`` configuration section as it
is (the TOML loader builds it; the server transport takes it); :class:`UdsClientSettings` is
what a libjoynr runtime's connection to its cluster controller over a Unix domain socket is
made of.

Frame dialects (transports.dialects): the server speaks both and tells a connection's dialect
by the payload of its init frame (joynr's JSON ``UdsClientAddress``, or the project's msgpack
init); a client speaks the one of its ``dialect`` setting, joynr's (SMRF frames) by default, as
joynr's C++ and JavaScript runtimes do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pyjoynr.runtime.messages import DEFAULT_MAX_FRAME_BYTES, DIALECTS, JOYNR

__all__ = ["DEFAULT_SOCKET_PATH", "OWNER_RULES", "UdsClientSettings", "UdsServerSettings"]

#: where joynr's cluster controllers and runtimes put the socket by default
DEFAULT_SOCKET_PATH: Final = "/var/run/joynr/cluster-controller.sock"
#: the smallest frame limit accepted (an init frame and a small message must fit)
MIN_FRAME_BYTES: Final = 1024
#: the longest socket path (sun_path holds 108 bytes with its NUL)
MAX_PATH_BYTES: Final = 107
#: how the owner id of a connection is taken from the peer's credentials (SO_PEERCRED):
#: "user" its user name (its uid when the user has no name), "none" no owner id
OWNER_RULES: Final = ("user", "none")


def _check_path(path: str) -> None:
    if not path or "\0" in path:
        raise ValueError(f"path must be a non-empty file path, got {path!r}")
    if len(path.encode()) > MAX_PATH_BYTES:
        raise ValueError(f"path must be at most {MAX_PATH_BYTES} bytes (a Unix socket "
                         f"path's limit), got {len(path.encode())}")


@dataclass(frozen=True)
class UdsServerSettings:
    """The cluster controller's Unix domain socket server (its ``[uds]`` section)."""

    #: serve libjoynr runtimes on a Unix domain socket beside websocket
    enabled: bool = False
    #: the socket file; a stale one (no process listens) is replaced, a live one refused
    path: str = DEFAULT_SOCKET_PATH
    #: the socket file's mode (connecting needs write permission): owner and group by default
    permissions: int = 0o660
    #: uids that may connect (checked with the peer's credentials); empty: any the file's
    #: permissions let in
    allowed_uids: tuple[int, ...] = ()
    #: the owner id of a connection (what the per-owner bounds count): "user" the peer's user
    #: name (its uid when it has none), "none" none
    owner: str = "user"
    #: frames announcing a larger payload close the connection (before it is read)
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: seconds a new connection has to send its init frame
    init_timeout_s: float = 10.0
    #: messages waiting to be written to one connection before sends to it are refused
    max_queued_per_connection: int = 10_000
    #: ... and the bytes they may hold (an empty queue takes one message of any size)
    max_queued_bytes_per_connection: int = 16 * 1024 * 1024
    #: bytes of the frames read before the connection's init is decided; at this bound the
    #: server stops reading the connection until then
    max_backlog_bytes_per_connection: int = 1024 * 1024
    #: the uid (for access control) of a connection by its peer's user name or numeric uid;
    #: a peer not named here has its user name (its numeric uid when it has none)
    uids: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_path(self.path)
        if type(self.permissions) is not int or not 0 <= self.permissions <= 0o777:
            raise ValueError(f"permissions must be a file mode in 0..0o777, got "
                             f"{self.permissions!r}")
        if not self.permissions & 0o200:
            raise ValueError("permissions must let the owner write (0o200): the cluster "
                             "controller's own user could not connect")
        object.__setattr__(self, "allowed_uids", tuple(self.allowed_uids))
        if any(type(uid) is not int or uid < 0 for uid in self.allowed_uids):
            raise ValueError(f"allowed_uids must be uids (ints >= 0), got {self.allowed_uids!r}")
        if self.owner not in OWNER_RULES:
            raise ValueError(f"owner must be one of {', '.join(map(repr, OWNER_RULES))}, got "
                             f"{self.owner!r}")
        if self.max_frame_bytes < MIN_FRAME_BYTES:
            raise ValueError(f"max_frame_bytes must be at least {MIN_FRAME_BYTES}, got "
                             f"{self.max_frame_bytes}")
        if not self.init_timeout_s > 0:
            raise ValueError(f"init_timeout_s must be > 0, got {self.init_timeout_s}")
        for name in ("max_queued_per_connection", "max_queued_bytes_per_connection",
                     "max_backlog_bytes_per_connection"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class UdsClientSettings:
    """A libjoynr runtime's connection to its cluster controller over a Unix domain socket (its
    times in milliseconds, as every time of the application API)."""

    #: frames announcing a larger payload end the connection
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: reconnect backoff (ms): first delay, doubled up to the max (with jitter); joynr's
    #: runtimes retry every 500 ms while the socket is not there
    reconnect_initial_ms: int = 50
    reconnect_max_ms: int = 500
    #: messages waiting to be written before sends are refused (they wait in the router)
    max_queued: int = 10_000
    #: ... and the bytes they may hold (an empty queue takes one message of any size)
    max_queued_bytes: int = 16 * 1024 * 1024
    #: "joynr" (joynr's init frame and SMRF frames, as joynr's runtimes write them) or
    #: "native" (the project's msgpack init and frames)
    dialect: str = JOYNR

    def __post_init__(self) -> None:
        if self.max_frame_bytes < MIN_FRAME_BYTES:
            raise ValueError(f"max_frame_bytes must be at least {MIN_FRAME_BYTES}, got "
                             f"{self.max_frame_bytes}")
        if not 0 < self.reconnect_initial_ms <= self.reconnect_max_ms:
            raise ValueError("need 0 < reconnect_initial_ms <= reconnect_max_ms, got "
                             f"{self.reconnect_initial_ms}, {self.reconnect_max_ms}")
        if self.max_queued < 1 or self.max_queued_bytes < 1:
            raise ValueError("max_queued and max_queued_bytes must be >= 1")
        if self.dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(map(repr, DIALECTS))}, got "
                             f"{self.dialect!r}")
