"""The generated AccessControlListEditor (programming.access_control) over real websocket
connections to a real cluster controller: a provider on the generated provider base, on the
editor's domain and well-known participant id, answers the generated proxy's twelve calls in
both dialects of libjoynr and both body formats, every entry arriving as the struct it was
sent as (the mediator lists with the master structs), every key by its parameters."""

from __future__ import annotations

from typing import Any

import pytest

from pyjoynr.libjoynr import LibjoynrConfig
from pyjoynr.programming.access_control import (
    ACL_EDITOR_DOMAIN,
    ACL_EDITOR_PARTICIPANT_ID,
    AccessControlListEditorProviderBase,
    MasterAccessControlEntry,
    MasterRegistrationControlEntry,
    OwnerAccessControlEntry,
    OwnerRegistrationControlEntry,
    Permission,
    TrustLevel,
    build_access_control_list_editor_proxy,
)
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE

MSGPACK, JSON = BodyFormat.MSGPACK, BodyFormat.JSON
#: (the provider's dialect, the consumer's, the body format of the proxy)
COMBINATIONS = [(JOYNR, JOYNR, JSON), (NATIVE, NATIVE, MSGPACK), (NATIVE, JOYNR, JSON),
                (JOYNR, NATIVE, MSGPACK)]


class Editor(AccessControlListEditorProviderBase):
    """Six lists keyed as joynr keys them: an update adds or replaces, a remove answers
    whether there was an entry."""

    def __init__(self) -> None:
        super().__init__()
        self.lists: dict[str, dict[tuple[str, ...], Any]] = {}

    def put(self, name: str, key: tuple[str, ...], entry: Any) -> bool:
        self.lists.setdefault(name, {})[key] = entry
        return True

    def drop(self, name: str, key: tuple[str, ...]) -> bool:
        return self.lists.get(name, {}).pop(key, None) is not None

    @staticmethod
    def ace_key(entry: Any) -> tuple[str, ...]:
        return (entry.uid, entry.domain, entry.interface_name, entry.operation)

    @staticmethod
    def rce_key(entry: Any) -> tuple[str, ...]:
        return (entry.uid, entry.domain, entry.interface_name)

    async def update_master_access_control_entry(
            self, updated_master_ace: MasterAccessControlEntry) -> bool:
        return self.put("master ACL", self.ace_key(updated_master_ace), updated_master_ace)

    async def remove_master_access_control_entry(self, uid: str, domain_: str,
                                                 interface_name: str, operation: str) -> bool:
        return self.drop("master ACL", (uid, domain_, interface_name, operation))

    async def update_mediator_access_control_entry(
            self, updated_mediator_ace: MasterAccessControlEntry) -> bool:
        return self.put("mediator ACL", self.ace_key(updated_mediator_ace),
                        updated_mediator_ace)

    async def remove_mediator_access_control_entry(self, uid: str, domain_: str,
                                                   interface_name: str, operation: str) -> bool:
        return self.drop("mediator ACL", (uid, domain_, interface_name, operation))

    async def update_owner_access_control_entry(
            self, updated_owner_ace: OwnerAccessControlEntry) -> bool:
        return self.put("owner ACL", self.ace_key(updated_owner_ace), updated_owner_ace)

    async def remove_owner_access_control_entry(self, uid: str, domain_: str,
                                                interface_name: str, operation: str) -> bool:
        return self.drop("owner ACL", (uid, domain_, interface_name, operation))

    async def update_master_registration_control_entry(
            self, updated_master_rce: MasterRegistrationControlEntry) -> bool:
        return self.put("master RCL", self.rce_key(updated_master_rce), updated_master_rce)

    async def remove_master_registration_control_entry(self, uid: str, domain_: str,
                                                       interface_name: str) -> bool:
        return self.drop("master RCL", (uid, domain_, interface_name))

    async def update_mediator_registration_control_entry(
            self, updated_mediator_rce: MasterRegistrationControlEntry) -> bool:
        return self.put("mediator RCL", self.rce_key(updated_mediator_rce),
                        updated_mediator_rce)

    async def remove_mediator_registration_control_entry(self, uid: str, domain_: str,
                                                         interface_name: str) -> bool:
        return self.drop("mediator RCL", (uid, domain_, interface_name))

    async def update_owner_registration_control_entry(
            self, updated_owner_rce: OwnerRegistrationControlEntry) -> bool:
        return self.put("owner RCL", self.rce_key(updated_owner_rce), updated_owner_rce)

    async def remove_owner_registration_control_entry(self, uid: str, domain_: str,
                                                      interface_name: str) -> bool:
        return self.drop("owner RCL", (uid, domain_, interface_name))


H, L = TrustLevel.HIGH, TrustLevel.LOW
YES, NO, ASK = Permission.YES, Permission.NO, Permission.ASK


@pytest.mark.network
@pytest.mark.parametrize("combination", COMBINATIONS, ids=lambda c: "-".join(map(str, c)))
async def test_the_generated_editor_is_served_and_called_in_both_dialects(
        runtimes: Any, combination: tuple[str, str, BodyFormat]) -> None:
    provider_dialect, consumer_dialect, body_format = combination

    def config(dialect: str) -> LibjoynrConfig:
        return LibjoynrConfig(dialect=JOYNR) if dialect == JOYNR else LibjoynrConfig()

    provider_rt = await runtimes(config=config(provider_dialect))
    consumer_rt = await runtimes(config=config(consumer_dialect))
    editor = Editor()
    pid = await provider_rt.register_provider(ACL_EDITOR_DOMAIN, editor,
                                              participant_id=ACL_EDITOR_PARTICIPANT_ID)
    assert pid == ACL_EDITOR_PARTICIPANT_ID
    proxy = await build_access_control_list_editor_proxy(
        consumer_rt, ACL_EDITOR_DOMAIN, ttl_ms=5_000, body_format=body_format)
    assert proxy.provider_participant_id == ACL_EDITOR_PARTICIPANT_ID

    master_ace = MasterAccessControlEntry("u", "vehicle", "vehicle/Radio", H, [H, L], H, [H],
                                          "*", YES, [YES, NO, ASK])
    mediator_ace = MasterAccessControlEntry("*", "vehicle.*", "vehicle/Radio", L, [L], H, [],
                                            "addFavorite", NO, [NO])
    owner_ace = OwnerAccessControlEntry("", "vehicle", "vehicle/Radio", L, L, "*", ASK)
    master_rce = MasterRegistrationControlEntry("p", "vehicle", "vehicle/*", H, [], H, [],
                                                YES, [YES])
    mediator_rce = MasterRegistrationControlEntry("p", "vehicle", "vehicle/Radio", L, [L, H],
                                                  L, [L], NO, [])
    owner_rce = OwnerRegistrationControlEntry("p", "vehicle", "vehicle/Radio", H, L, NO)
    assert await proxy.update_master_access_control_entry(master_ace) is True
    assert await proxy.update_mediator_access_control_entry(mediator_ace) is True
    assert await proxy.update_owner_access_control_entry(owner_ace) is True
    assert await proxy.update_master_registration_control_entry(master_rce) is True
    assert await proxy.update_mediator_registration_control_entry(mediator_rce) is True
    assert await proxy.update_owner_registration_control_entry(owner_rce) is True
    assert editor.lists == {
        "master ACL": {("u", "vehicle", "vehicle/Radio", "*"): master_ace},
        "mediator ACL": {("*", "vehicle.*", "vehicle/Radio", "addFavorite"): mediator_ace},
        "owner ACL": {("", "vehicle", "vehicle/Radio", "*"): owner_ace},
        "master RCL": {("p", "vehicle", "vehicle/*"): master_rce},
        "mediator RCL": {("p", "vehicle", "vehicle/Radio"): mediator_rce},
        "owner RCL": {("p", "vehicle", "vehicle/Radio"): owner_rce},
    }
    # (dataclasses are equal only to one of their own class: each arrived as the struct sent)

    assert await proxy.remove_master_access_control_entry(
        "u", "vehicle", "vehicle/Radio", "*") is True
    assert await proxy.remove_master_access_control_entry(
        "u", "vehicle", "vehicle/Radio", "*") is False
    assert await proxy.remove_mediator_access_control_entry(
        "*", "vehicle.*", "vehicle/Radio", "addFavorite") is True
    assert await proxy.remove_owner_access_control_entry(
        "", "vehicle", "vehicle/Radio", "other") is False
    assert await proxy.remove_owner_access_control_entry(
        "", "vehicle", "vehicle/Radio", "*") is True
    assert await proxy.remove_master_registration_control_entry(
        "p", "vehicle", "vehicle/*") is True
    assert await proxy.remove_mediator_registration_control_entry(
        "p", "vehicle", "vehicle/Radio") is True
    assert await proxy.remove_owner_registration_control_entry(
        "p", "vehicle", "vehicle/Radio") is True
    assert all(not entries for entries in editor.lists.values())
