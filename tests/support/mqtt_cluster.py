"""Two cluster controllers linked by MQTT, each with a libjoynr runtime, for tests.

CC "two" hosts the provider (registered with a fixed participantId, scope GLOBAL); CC "one"
knows it from a provisioning file, so proxies in runtime one reach it through the broker(s).
"""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import LibjoynrRuntime, ProviderQos, ProviderScope
from pyjoynr.libjoynr import connect as joynr_connect
from pyjoynr.testing.cluster import cc_config
from tests.support.radio import Radio, RadioProvider

WAIT_S = 10.0
GBID = "joynrdefaultgbid"


def backends_value(backends: dict[str, str]) -> str:
    return "{" + ", ".join(f'{gbid} = "{url}"' for gbid, url in backends.items()) + "}"


def mqtt_cc_config(data_dir: Path, cc_id: str, backends: dict[str, str], **overrides: Any
                   ) -> Any:
    return cc_config(
        data_dir,
        cluster_controller__id=cc_id,
        mqtt__backends=backends_value(backends),
        mqtt__reconnect_initial_s="0.05",
        mqtt__reconnect_max_s="0.5",
        **overrides,
    )


def write_provisioning(path: Path, *entries: dict[str, str]) -> Path:
    lines = []
    for entry in entries:
        lines.append("[[provider]]")
        lines += [f'{key} = "{value}"' for key, value in entry.items()]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@dataclass
class MqttPair:
    one: ClusterController
    two: ClusterController
    rt_one: LibjoynrRuntime
    rt_two: LibjoynrRuntime
    provider: RadioProvider
    provider_pid: str
    domain: str

    async def proxy(self, ttl_ms: int = 5_000) -> Any:
        return await self.rt_one.build_proxy(Radio, self.domain, ttl_ms=ttl_ms)


async def start_pair(stack: AsyncExitStack, tmp_path: Path, backends_one: dict[str, str],
                     backends_two: dict[str, str] | None = None, *,
                     provider_gbid: str = GBID, **overrides: Any) -> MqttPair:
    """CC two (provider side) and CC one (consumer side), both connected to their brokers."""
    suffix = uuid.uuid4().hex[:8]
    two_id, one_id = f"cc-two-{suffix}", f"cc-one-{suffix}"
    provider_pid = f"radio-{suffix}"
    domain = f"mqtt.test.{suffix}"
    two = await stack.enter_async_context(ClusterController(mqtt_cc_config(
        tmp_path / "two", two_id, backends_two or backends_one, **overrides)))
    provisioning = write_provisioning(tmp_path / "provisioning.toml", {
        "participant_id": provider_pid, "domain": domain, "interface": "test/Radio",
        "version": "1.2", "gbid": provider_gbid, "topic": two.own_topic,
    })
    one = await stack.enter_async_context(ClusterController(mqtt_cc_config(
        tmp_path / "one", one_id, backends_one,
        discovery__provisioning_file=str(provisioning), **overrides)))
    for cc in (one, two):
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
    rt_two = await joynr_connect(two.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(rt_two.close)
    rt_one = await joynr_connect(one.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(rt_one.close)
    provider = RadioProvider()
    await rt_two.register_provider(domain, provider, participant_id=provider_pid,
                                   qos=ProviderQos(scope=ProviderScope.GLOBAL))
    return MqttPair(one, two, rt_one, rt_two, provider, provider_pid, domain)
