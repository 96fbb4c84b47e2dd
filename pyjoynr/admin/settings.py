"""The ``[admin]`` section: where the admin endpoint listens and what it allows a client."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

__all__ = ["AdminSettings", "is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address literal) names this host's loopback interface."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class AdminSettings:
    """The admin endpoint of a process (metrics, health, status page): an HTTP server apart
    from the port its clients use. Checked when made (ValueError saying what is wrong)."""

    #: serve the admin endpoint
    enabled: bool = True
    #: where it listens: the loopback interface by default (for the host's operators and its
    #: Prometheus; the status page names participants and brokers). A loopback endpoint only
    #: answers requests whose Host header names the loopback interface (a web page elsewhere
    #: cannot read it through a DNS name rebound to 127.0.0.1)
    host: str = "127.0.0.1"
    #: 0: any free port (the start line names it)
    port: int = 4280
    #: connections served at once; a further one is closed at once (counted, logged)
    max_connections: int = 32
    #: bytes a request's head (request line and headers) may have; more: refused (431)
    max_request_head_bytes: int = 8192
    #: seconds a client has to send a whole request, and to read the response
    request_timeout_s: float = 10.0
    #: seconds between two refreshes of the status page (it polls /status.json)
    status_refresh_s: float = 2.0
    #: rows a table of the status page shows at most (runtimes, recent refusals, ...)
    status_max_rows: int = 200
    #: seconds a readiness probe's answer (the GCD answers; the store answers) is reused
    probe_max_age_s: float = 10.0
    #: seconds a readiness probe may take before it counts as failed
    probe_timeout_s: float = 2.0

    def __post_init__(self) -> None:
        if not self.host:
            raise ValueError("host must not be empty")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be 0..65535, got {self.port}")
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {self.max_connections}")
        if not 256 <= self.max_request_head_bytes <= 1024 * 1024:
            raise ValueError("max_request_head_bytes must be 256..1048576, got "
                             f"{self.max_request_head_bytes}")
        for name in ("request_timeout_s", "status_refresh_s", "probe_timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not self.probe_max_age_s >= 0:
            raise ValueError(f"probe_max_age_s must be >= 0, got {self.probe_max_age_s!r}")
        if not 1 <= self.status_max_rows <= 100_000:
            raise ValueError(f"status_max_rows must be 1..100000, got {self.status_max_rows}")

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)
