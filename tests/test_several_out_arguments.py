# mypy: disable-error-code="empty-body"
"""Methods with several out arguments (``@outputs("a", "b")`` returning ``tuple[A, B]``), end to
end: a provider of this project in one libjoynr runtime, called by proxies in another that write
msgpack or joynr's JSON bodies, over real websocket connections to one cluster controller.

Checked: the proxy returns the tuple; the reply's ``response`` holds the values in order, each
written and read as its own declared type (a struct, an enum, bytes); a method with one out
argument still answers its value, one without none; a provider that returns something else than
the tuple is answered with a ProviderRuntime error; declarations that do not fit are refused.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import pytest

from pyjoynr.libjoynr import Provider, interface
from pyjoynr.libjoynr.advanced import ProviderRuntimeError
from pyjoynr.runtime.bodies import BodyFormat, format_of
from pyjoynr.runtime.interface import interface_def, joynr_name, outputs
from pyjoynr.runtime.joynr_json import decode, encode, reply_types
from pyjoynr.runtime.messages import MessageType
from pyjoynr.runtime.payloads import Reply
from tests.support.wire import Wire

pytestmark = pytest.mark.network

MSGPACK, JSON = BodyFormat.MSGPACK, BodyFormat.JSON


class Country(enum.Enum):
    AUSTRIA = "AUSTRIA"
    ITALY = "ITALY"


@joynr_name("joynr.vehicle.GeoPosition")
@dataclass
class GeoPosition:
    latitude: float
    longitude: float


@interface("test/Locator", version=(1, 0))
class Locator:
    @outputs("country", "position", "raw")
    async def locate(self, name: str) -> tuple[Country, GeoPosition, bytes]: ...

    @outputs("low", "high")
    async def split(self, n: int) -> tuple[int, int]: ...

    async def count(self) -> int: ...

    async def reset(self) -> None: ...


class LocatorProvider(Provider, interface=Locator):
    async def locate(self, name: str) -> tuple[Country, GeoPosition, bytes]:
        return Country.AUSTRIA, GeoPosition(48.2, 16.37), name.encode()

    async def split(self, n: int) -> tuple[int, int]:
        if n < 0:
            return n  # type: ignore[return-value]  # (a provider that gets it wrong)
        return n // 2, n - n // 2

    async def count(self) -> int:
        return 3

    async def reset(self) -> None:
        return None


@pytest.mark.parametrize("body_format", [MSGPACK, JSON])
async def test_several_out_arguments_travel_in_order(cc, runtimes, body_format) -> None:
    wire = Wire(cc)
    provider_rt, consumer_rt = await runtimes(), await runtimes()
    await provider_rt.register_provider("lab", LocatorProvider())
    proxy = await consumer_rt.build_proxy(Locator, "lab", ttl_ms=3_000, body_format=body_format)

    assert await proxy.locate("Wien") == (Country.AUSTRIA, GeoPosition(48.2, 16.37), b"Wien")
    assert await proxy.split(7) == (3, 4)
    assert await proxy.count() == 3
    assert await proxy.reset() is None
    with pytest.raises(ProviderRuntimeError, match="not a tuple of its 2 out arguments"):
        await proxy.split(-1)

    replies = wire.kinds(MessageType.REPLY, recipient=proxy.participant_id)
    assert len(replies) == 5
    assert {format_of(r.body) for r in replies} == {body_format}
    if body_format is JSON:
        responses = [r.get("response") for r in
                     wire.json(MessageType.REPLY, recipient=proxy.participant_id)]
        assert responses[:4] == [
            ["AUSTRIA", {"_typeName": "joynr.vehicle.GeoPosition", "latitude": 48.2,
                         "longitude": 16.37}, [87, 105, 101, 110]],
            [3, 4],
            [3],
            [],
        ]
        assert responses[4] is None  # the error's reply


def test_a_json_reply_is_typed_per_out_argument() -> None:
    method = interface_def(Locator).methods["locate"]
    assert method.outputs == (("country", Country), ("position", GeoPosition), ("raw", bytes))
    assert reply_types(method) == [Country, GeoPosition, bytes]
    assert reply_types(interface_def(Locator).methods["count"]) == [int]
    assert reply_types(interface_def(Locator).methods["reset"]) == []
    wired = ["ITALY", {"latitude": 41.9, "longitude": 12.5}, b"\x01\xff"]
    body = encode(Reply("r1", wired), types=reply_types(method))
    assert b'"response":["ITALY",{"_typeName":"joynr.vehicle.GeoPosition"' in body
    assert b'[1,-1]]' in body
    assert decode(Reply, body, types=reply_types(method)) == Reply("r1", wired)


def test_declarations_that_do_not_fit_are_refused() -> None:
    with pytest.raises(TypeError, match="two or more out arguments"):
        outputs("only")
    with pytest.raises(TypeError, match="not distinct names"):
        outputs("a", "a")
    with pytest.raises(TypeError, match=r"names 2 out arguments, so it returns a tuple of 2"):
        @interface("test/Bad")
        class Bad:
            @outputs("a", "b")
            async def m(self) -> tuple[int, int, int]: ...
    with pytest.raises(TypeError, match=r"names 2 out arguments"):
        @interface("test/Bad")
        class Worse:
            @outputs("a", "b")
            async def m(self) -> int: ...
