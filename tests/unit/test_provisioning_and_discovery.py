"""Provisioned global providers (file loading) and how local discovery answers with them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyjoynr.cluster_controller.local_discovery import LocalDiscovery
from pyjoynr.cluster_controller.provisioning import load_provisioning
from pyjoynr.programming.body_format import proxy_body_format
from pyjoynr.programming.discovery_types import (
    DiscoveryEntry,
    DiscoveryQos,
    DiscoveryScope,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.runtime.config import ConfigError
from pyjoynr.runtime.errors import ApplicationError
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import NO_EXPIRY_MS, RoutingTable, RuntimeKind
from pyjoynr.transports.mqtt.settings import parse_broker_url

GOOD = """
[[provider]]
participant_id = "p-1"
domain = "vehicle"
interface = "test/Radio"
version = "1.2"
gbid = "gbid-a"
topic = "joynr/cc/cc-9"
body = "msgpack"

[[provider]]
participant_id = "p-2"
domain = "vehicle"
interface = "test/Other"
gbid = "gbid-b"
topic = "joynr/cc/cc-8"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "provisioning.toml"
    path.write_text(text)
    return path


def test_provisioning_file_is_read() -> None:
    root = Path(__file__).resolve().parents[2]
    example = root / "pyjoynr" / "config" / "provisioning.example.toml"
    (provider,) = load_provisioning(example)
    assert provider.participant_id == "radio-provider-1"


def test_provisioned_entries(tmp_path: Path) -> None:
    first, second = load_provisioning(write(tmp_path, GOOD))
    assert first.address == MqttAddress("gbid-a", "joynr/cc/cc-9")
    assert first.entry.provider_version == Version(1, 2)
    assert first.entry.is_local is False
    assert first.entry.qos.scope is ProviderScope.GLOBAL
    assert first.entry.expiry_date_ms == NO_EXPIRY_MS
    assert second.entry.provider_version == Version(1, 0)  # the default
    # what the proxies of either write: msgpack for the first, JSON (the default) otherwise
    assert proxy_body_format(first.entry) is BodyFormat.MSGPACK
    assert proxy_body_format(second.entry) is BodyFormat.JSON


@pytest.mark.parametrize(("text", "message"), [
    ("[[provider]]\ndomain = 'd'\n", "participant_id must be a non-empty string"),
    ("[[provider]]\nparticipant_id = 'p'\ndomain = 'd'\ninterface = 'i'\ngbid = 'g'\n",
     "topic must be a non-empty string"),
    ("[[provider]]\nparticipant_id = 'p'\ndomain = 'd'\ninterface = 'i'\ngbid = 'g'\n"
     "topic = 't'\nversion = 'one'\n", "version must look like 1.0"),
    ("[[provider]]\nparticipant_id = 'p'\ndomain = 'd'\ninterface = 'i'\ngbid = 'g'\n"
     "topic = 't'\ncolour = 'red'\n", "unknown key(s) ['colour']"),
    (GOOD + "\n[[provider]]\nparticipant_id = 'p-1'\ndomain = 'd'\ninterface = 'i'\n"
     "gbid = 'g'\ntopic = 't'\n", "appears twice"),
    ("[[provider]]\nparticipant_id = 'p'\ndomain = 'd'\ninterface = 'i'\ngbid = 'g'\n"
     "topic = 't'\nbody = 'xml'\n", "body must be one of ['json', 'msgpack']"),
    ("[providers]\n", "unknown table(s)"),
    ("provider = 3\n", "array of tables"),
    ("[[provider]\n", "not valid TOML"),
])
def test_bad_provisioning_is_refused_with_the_reason(tmp_path: Path, text: str,
                                                     message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_provisioning(write(tmp_path, text))
    assert message in str(error.value)
    assert "provisioning.toml" in str(error.value)


def test_missing_provisioning_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_provisioning(tmp_path / "nothing.toml")


def local_entry(pid: str, scope: ProviderScope) -> DiscoveryEntry:
    return DiscoveryEntry(Version(1, 2), "vehicle", "test/Radio", pid,
                          ProviderQos(scope=scope), 0, NO_EXPIRY_MS)


@pytest.mark.parametrize(("scope", "with_local", "expected"), [
    (DiscoveryScope.LOCAL_ONLY, True, ["local-global", "local-local"]),
    (DiscoveryScope.LOCAL_ONLY, False, []),
    (DiscoveryScope.LOCAL_THEN_GLOBAL, True, ["local-global", "local-local"]),
    (DiscoveryScope.LOCAL_THEN_GLOBAL, False, ["p-1"]),
    (DiscoveryScope.LOCAL_AND_GLOBAL, True, ["local-global", "local-local", "p-1"]),
    (DiscoveryScope.GLOBAL_ONLY, True, ["local-global", "p-1"]),
    (DiscoveryScope.GLOBAL_ONLY, False, ["p-1"]),
])
async def test_lookup_by_discovery_scope(tmp_path: Path, scope: DiscoveryScope,
                                         with_local: bool, expected: list[str]) -> None:
    discovery = LocalDiscovery(MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER)))
    for provider in load_provisioning(write(tmp_path, GOOD)):
        discovery.add_global(provider.entry)
    if with_local:  # registered in-process (no caller: the CC's own runtime)
        await discovery.add(local_entry("local-global", ProviderScope.GLOBAL))
        await discovery.add(local_entry("local-local", ProviderScope.LOCAL))
    found = await discovery.lookup(["vehicle"], "test/Radio", DiscoveryQos(discovery_scope=scope))
    assert sorted(e.participant_id for e in found) == expected
    assert all(e.is_local == e.participant_id.startswith("local") for e in found)


async def test_lookup_participant_finds_provisioned_entries_unless_local_only(
        tmp_path: Path) -> None:
    discovery = LocalDiscovery(MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER)))
    for provider in load_provisioning(write(tmp_path, GOOD)):
        discovery.add_global(provider.entry)
    found = await discovery.lookup_participant_in("p-2", DiscoveryQos(), [])
    assert found.interface_name == "test/Other" and not found.is_local
    assert await discovery.lookup_participant("p-2") == found
    with pytest.raises(ApplicationError):
        await discovery.lookup_participant_in(
            "p-2", DiscoveryQos(discovery_scope=DiscoveryScope.LOCAL_ONLY), [])


@pytest.mark.parametrize(("url", "expected"), [
    ("mqtt://h", ("h", 1883, False, None, None, None)),
    ("tcp://h:1999", ("h", 1999, False, None, None, None)),
    ("mqtts://h", ("h", 8883, True, None, None, None)),
    ("ssl://h:9000?version=3.1.1", ("h", 9000, True, None, None, "3.1.1")),
    ("mqtt://us%40er:p%3Ass@h?version=5", ("h", 1883, False, "us@er", "p:ss", "5")),
])
def test_broker_urls(url: str, expected: tuple[object, ...]) -> None:
    parsed = parse_broker_url(url)
    assert (parsed.host, parsed.port, parsed.tls, parsed.username, parsed.password,
            parsed.version) == expected
    assert "p:ss" not in str(parsed)  # never printed


def test_the_cluster_controller_id_of_a_gcd_entry_is_the_last_level_of_its_topic() -> None:
    from pyjoynr.gcd.provider import cluster_controller_id_of  # noqa: PLC0415

    assert cluster_controller_id_of("joynr/cc/cc-1234") == "cc-1234"
    assert cluster_controller_id_of("plain") == "plain"
