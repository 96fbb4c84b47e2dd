"""The cluster controller's configuration: one section per component, loaded from TOML with
environment overrides (JOYNR_CC__SECTION__KEY)."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from pyjoynr.admin.settings import AdminSettings
from pyjoynr.cluster_controller.snapshots import RoutingSnapshotSettings
from pyjoynr.programming.system_interfaces import (
    DEFAULT_DISCOVERY_PARTICIPANT_ID,
    DEFAULT_ROUTING_PARTICIPANT_ID,
)
from pyjoynr.runtime.audit import AuditSettings
from pyjoynr.runtime.config import load_config
from pyjoynr.runtime.logs import LOG_FORMATS, get_logger
from pyjoynr.runtime.quotas import ConnectionBounds
from pyjoynr.runtime.router import RouterSettings
from pyjoynr.runtime.routing import RoutingSettings
from pyjoynr.transports.mqtt.broker import EmbeddedBrokerSettings
from pyjoynr.transports.mqtt.settings import MqttSettings
from pyjoynr.transports.uds.settings import UdsServerSettings
from pyjoynr.transports.websocket.settings import WebSocketServerSettings

log = get_logger(__name__)


ENV_PREFIX = "JOYNR_CC"
#: the packaged default configuration (it documents every setting)
DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "config" / "cluster-controller.toml"


@dataclass(frozen=True)
class IdentitySection:
    #: this cluster controller's id; empty: generated once, kept in <data_dir>/cluster-controller-id
    id: str = ""
    #: where the cluster controller keeps its state (relative paths: to the working directory)
    data_dir: Path = Path("var/cluster-controller")


@dataclass(frozen=True)
class DiscoverySection:
    #: TOML file of provisioned global providers (cluster_controller/provisioning.py); "": none
    provisioning_file: str = ""
    #: use the Global Capabilities Directory (with MQTT backends): at participantId
    #: capabilitiesdirectory_participantid, topic discoverydirectory_channelid of the default
    #: backend, unless the provisioning file names it
    gcd: bool = True
    #: time to live of the CC's own calls to the GCD (ms); lookups for a libjoynr runtime
    #: take the caller's discovery timeout
    gcd_request_ttl_ms: int = 10_000
    #: seconds between two touches of this CC's global providers (joynr: 6 h)
    touch_interval_s: float = 3600.0
    #: removeStale of a previous life is retried this long after the start (s)
    remove_stale_for_s: float = 300.0
    #: a GCD call made for a libjoynr runtime's request (a lookup, an awaited global
    #: registration) ends this long (ms) before that request expires, so that the answer
    #: (the GCD's, or that it did not answer) reaches the caller in time
    answer_margin_ms: int = 500
    #: the providers of a libjoynr runtime whose connection ended without unregistering them
    #: stay registered (locally and in the GCD) this long (s), so that a restarted runtime
    #: can take them over; then they are removed unless registered again
    vanished_provider_grace_s: float = 60.0

    def __post_init__(self) -> None:
        if self.gcd_request_ttl_ms < 100:
            raise ValueError("gcd_request_ttl_ms must be >= 100")
        if self.answer_margin_ms < 0:
            raise ValueError("answer_margin_ms must be >= 0")
        if not self.vanished_provider_grace_s >= 0:
            raise ValueError("vanished_provider_grace_s must be >= 0")
        if not self.touch_interval_s > 0 or not self.remove_stale_for_s > 0:
            raise ValueError("touch_interval_s and remove_stale_for_s must be > 0")


@dataclass(frozen=True)
class EmbeddedGcdSection:
    #: run a GCD instance (SQLite) inside the CC, on its default backend
    enabled: bool = False
    #: empty: <data_dir>/gcd.sqlite
    sqlite_path: str = ""


@dataclass(frozen=True)
class SystemSection:
    #: provisioned participantIds of the CC's own providers (libjoynr runtimes use the same)
    routing_participant_id: str = DEFAULT_ROUTING_PARTICIPANT_ID
    discovery_participant_id: str = DEFAULT_DISCOVERY_PARTICIPANT_ID


#: joynr's participant id of a cluster controller's AccessControlListEditor provider
DEFAULT_ACL_EDITOR_PARTICIPANT_ID = "CC.AccessControlListEditor.ParticipantId"


@dataclass(frozen=True)
class AccessControlSection:
    """Access control as joynr's cluster controller has it (docs/access-control.md)."""

    #: check calls to this host's providers against the access control lists and provider
    #: registrations against the registration control lists
    enabled: bool = False
    #: log and count what would be refused, refuse nothing
    audit: bool = False
    #: the directory of provisioning files in joynr's JSON format (every regular file in it,
    #: in name order; later files replace entries with the same key); read at start (an error
    #: stops the start) and again when a file changes (an error keeps the tables in force)
    entries_directory: str = ""
    #: how often (ms) the directory is looked at for changed files; 0: read only at start
    reload_interval_ms: int = 2000
    #: the largest provisioning file read (bytes)
    max_file_bytes: int = 64 * 1024 * 1024
    #: where the changes made through the AccessControlListEditor are kept (they are applied
    #: over the directory's entries, at start and after each reload); "": <data_dir>/acl-edits.json
    edits_file: str = ""
    #: serve joynr's AccessControlListEditor (calls to it are checked like any others: the
    #: caller needs an entry for interface infrastructure/AccessControlListEditor on domain
    #: io.joynr.system, and the domain role the change asks for)
    editor: bool = True
    editor_participant_id: str = DEFAULT_ACL_EDITOR_PARTICIPANT_ID
    #: the uid of connections without a client certificate, by websocket path: each path
    #: named here is served too (beside [websocket] path), and connections on it get its uid
    websocket_paths: dict[str, str] = field(default_factory=dict)
    #: the uid of Unix domain socket connections by the peer's user name (or numeric uid);
    #: a peer not named here gets its user name ([uds] owner = "user") or ""
    uds_users: dict[str, str] = field(default_factory=dict)
    #: the uid of messages from other hosts (over MQTT): joynr's C++ cluster controller gives
    #: them "", joynr's Java one "backend"
    backend_uid: str = ""
    #: take the uid of a message from another host from its custom signature (joynr's
    #: runtimes sign with their owner id) when it has one; only when every cluster controller
    #: that can publish to the backends is trusted
    trust_backend_signature: bool = False

    def __post_init__(self) -> None:
        if self.reload_interval_ms < 0:
            raise ValueError("reload_interval_ms must be >= 0")
        if self.max_file_bytes < 1024:
            raise ValueError("max_file_bytes must be >= 1024")
        for path in self.websocket_paths:
            if not path.startswith("/"):
                raise ValueError(f"websocket_paths: {path!r} must start with /")
        if not self.editor_participant_id:
            raise ValueError("editor_participant_id must not be empty")


@dataclass(frozen=True)
class LoggingSection:
    #: DEBUG, INFO, WARNING or ERROR
    level: str = "INFO"
    #: "text" (one line of text per record) or "json" (one JSON object per line)
    format: str = "text"

    def __post_init__(self) -> None:
        if self.level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise ValueError(f"level must be DEBUG, INFO, WARNING or ERROR, not {self.level!r}")
        object.__setattr__(self, "level", self.level.upper())  # frozen: normalised once
        if self.format not in LOG_FORMATS:
            raise ValueError(f"format must be one of {', '.join(LOG_FORMATS)}, not "
                             f"{self.format!r}")


@dataclass(frozen=True)
class ClusterControllerConfig:
    cluster_controller: IdentitySection = field(default_factory=IdentitySection)
    routing: RoutingSettings = field(default_factory=RoutingSettings)
    router: RouterSettings = field(default_factory=RouterSettings)
    websocket: WebSocketServerSettings = field(default_factory=WebSocketServerSettings)
    uds: UdsServerSettings = field(default_factory=UdsServerSettings)
    connection_bounds: ConnectionBounds = field(default_factory=ConnectionBounds)
    mqtt: MqttSettings = field(default_factory=MqttSettings)
    embedded_broker: EmbeddedBrokerSettings = field(default_factory=EmbeddedBrokerSettings)
    discovery: DiscoverySection = field(default_factory=DiscoverySection)
    embedded_gcd: EmbeddedGcdSection = field(default_factory=EmbeddedGcdSection)
    system: SystemSection = field(default_factory=SystemSection)
    admin: AdminSettings = field(default_factory=AdminSettings)
    logging: LoggingSection = field(default_factory=LoggingSection)
    audit: AuditSettings = field(default_factory=AuditSettings)
    routing_snapshots: RoutingSnapshotSettings = field(default_factory=RoutingSnapshotSettings)
    access_control: AccessControlSection = field(default_factory=AccessControlSection)

    @classmethod
    def load(cls, path: Path | None = DEFAULT_CONFIG, env: dict[str, str] | None = None
             ) -> ClusterControllerConfig:
        return load_config(cls, path, env_prefix=ENV_PREFIX, env=env)


def cluster_controller_id(section: IdentitySection) -> str:
    """The configured id, or the one generated on the first start and kept since."""
    if section.id:
        return section.id
    path = section.data_dir / "cluster-controller-id"
    try:
        stored = path.read_text(encoding="utf-8").strip()
        if stored:
            return stored
    except FileNotFoundError:
        pass
    new_id = f"cc-{uuid.uuid4()}"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(new_id + "\n", encoding="utf-8")
    os.replace(tmp, path)
    log.info("generated cluster controller id %s (kept in %s)", new_id, path)
    return new_id

