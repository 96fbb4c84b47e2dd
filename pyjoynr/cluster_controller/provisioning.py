"""Provisioned global discovery entries: providers in other cluster controllers that this one
knows from a file, before (or without) a Global Capabilities Directory.

The file is TOML with one ``[[provider]]`` table per entry::

    [[provider]]
    participant_id = "radio-provider-1"      # the provider's participantId
    domain = "vehicle"
    interface = "test/Radio"                 # interface name
    version = "1.2"                          # major.minor (default "1.0")
    gbid = "joynrdefaultgbid"                # backend it is reached in
    topic = "joynr/cc/cc-1234"               # MQTT topic of its cluster controller
    body = "msgpack"                         # its runtime reads msgpack bodies (default
                                             # "json": any joynr runtime reads JSON)

At start the cluster controller installs each as a sticky routing entry (MqttAddress(gbid,
topic), globally visible) and as a global entry of its discovery directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyjoynr.programming.body_format import with_body_parameter
from pyjoynr.programming.discovery_types import (
    DiscoveryEntryWithMetaInfo,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.runtime.addresses import AddressError, MqttAddress
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.runtime.config import ConfigError, read_toml
from pyjoynr.runtime.routing import NO_EXPIRY_MS

__all__ = ["ProvisionedProvider", "load_provisioning"]

_KEYS = {"participant_id", "domain", "interface", "version", "gbid", "topic", "body"}
_BODIES = {f.value: f for f in BodyFormat}


class ProvisionedProvider:
    __slots__ = ("address", "entry")

    def __init__(self, entry: DiscoveryEntryWithMetaInfo, address: MqttAddress) -> None:
        self.entry = entry
        self.address = address

    @property
    def participant_id(self) -> str:
        return self.entry.participant_id


def _text(table: dict[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: {key} must be a non-empty string")
    return value


def _version(text: str, where: str) -> Version:
    try:
        major, minor = (int(part) for part in text.split("."))
    except ValueError:
        raise ConfigError(f"{where}: version must look like 1.0, got {text!r}") from None
    if major < 0 or minor < 0:
        raise ConfigError(f"{where}: version must not be negative")
    return Version(major, minor)


def load_provisioning(path: Path) -> list[ProvisionedProvider]:
    """Read a provisioning file; ConfigError naming the file, entry and problem."""
    data = read_toml(path, "provisioning file")
    unknown = set(data) - {"provider"}
    if unknown:
        raise ConfigError(f"{path}: unknown table(s) {sorted(unknown)}; expected [[provider]]")
    tables = data.get("provider", [])
    if not isinstance(tables, list):
        raise ConfigError(f"{path}: provider must be an array of tables ([[provider]])")
    providers: list[ProvisionedProvider] = []
    seen: set[str] = set()
    for i, table in enumerate(tables):
        where = f"{path}: provider {i + 1}"
        extra = set(table) - _KEYS
        if extra:
            raise ConfigError(f"{where}: unknown key(s) {sorted(extra)}")
        pid = _text(table, "participant_id", where)
        if pid in seen:
            raise ConfigError(f"{where}: participant_id {pid!r} appears twice")
        seen.add(pid)
        version = table.get("version", "1.0")
        if not isinstance(version, str):
            raise ConfigError(f"{where}: version must be a string like \"1.0\"")
        try:
            address = MqttAddress(_text(table, "gbid", where), _text(table, "topic", where))
        except AddressError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        body = _BODIES.get(table.get("body", "json"))
        if body is None:
            raise ConfigError(f"{where}: body must be one of {sorted(_BODIES)}, "
                              f"got {table.get('body')!r}")
        qos = ProviderQos(scope=ProviderScope.GLOBAL)
        if body is BodyFormat.MSGPACK:  # what a runtime of this project says at registration
            qos = with_body_parameter(qos)
        entry = DiscoveryEntryWithMetaInfo(
            provider_version=_version(version, where),
            domain=_text(table, "domain", where),
            interface_name=_text(table, "interface", where),
            participant_id=pid,
            qos=qos,
            last_seen_date_ms=0,
            expiry_date_ms=NO_EXPIRY_MS,
            is_local=False,
        )
        providers.append(ProvisionedProvider(entry, address))
    return providers
