"""Legal Franca that needed the runtime (tests/franca/oracle/legal_*.fidl), generated, imported
and used for real: a provider on the generated provider base and a consumer through the
generated proxy, over real websocket connections to a real cluster controller, in both
dialects of libjoynr and both body formats; on joynr's JSON wire the names and
``paramDatatypes`` are those joynr's generators give (checked against joynr 1.25.0's Java and
JavaScript output of the same files).
"""

from __future__ import annotations

import asyncio
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pyjoynr.franca.generate import generate
from pyjoynr.franca.parser import parse_files
from pyjoynr.libjoynr import LibjoynrConfig
from pyjoynr.programming.providers import Provider
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.runtime.interface import Int8, interface, interface_def, joynr_datatypes
from pyjoynr.runtime.messages import MessageType
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE
from tests.support.generated import imported
from tests.support.wire import Wire

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT / "tests" / "franca" / "oracle"
PACKAGE = "franca_legal"
WAIT_S = 5.0
MSGPACK, JSON = BodyFormat.MSGPACK, BodyFormat.JSON
#: (the provider's dialect, the consumer's, the body format of the proxy)
COMBINATIONS = [(JOYNR, JOYNR, JSON), (NATIVE, NATIVE, MSGPACK), (NATIVE, JOYNR, JSON),
                (JOYNR, NATIVE, MSGPACK), (NATIVE, NATIVE, JSON)]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ModuleType]]:
    out = tmp_path_factory.mktemp("legal")
    files = [ORACLE / "legal_names.fidl", ORACLE / "legal_overloads.fidl"]
    with imported(generate(parse_files(files), PACKAGE), out, PACKAGE) as pkg:
        yield out, pkg


def config(dialect: str) -> LibjoynrConfig:
    return LibjoynrConfig(dialect=JOYNR) if dialect == JOYNR else LibjoynrConfig()


async def pair(runtimes: Any, combination: tuple[str, str, BodyFormat]
               ) -> tuple[Any, Any, BodyFormat]:
    """(the provider's runtime, the consumer's, the proxy's body format) of a combination."""
    provider_dialect, consumer_dialect, body_format = combination
    return (await runtimes(config=config(provider_dialect)),
            await runtimes(config=config(consumer_dialect)), body_format)


def test_the_package_passes_mypy_strict(generated) -> None:
    out, _ = generated
    usage = out / "use_legal.py"
    usage.write_text(textwrap.dedent("""
        from franca_legal.legal_names import UnderscoresProviderBase, UnderscoresProxy


        async def use(proxy: UnderscoresProxy) -> int:
            echoed: str = await proxy.do_it_twice("x")
            del echoed
            doubled: int = await proxy.do_it(3)
            value: int = await proxy.my_attr.get()
            return doubled + value


        class Mine(UnderscoresProviderBase):
            async def do_it(self, count: int) -> int:
                self.fire_my_event(count)
                return count
    """))
    (out / "mypy.ini").write_text(
        "[mypy]\nfollow_imports = silent\n"
        "[mypy-msgpack.*,asyncpg.*,amqtt.*]\nignore_missing_imports = True\n")
    done = subprocess.run(
        [ROOT / ".venv" / "bin" / "mypy", "--strict", "--config-file", "mypy.ini",
         "--cache-dir", str(out / ".mypy_cache"), "--no-error-summary", PACKAGE, usage.name],
        capture_output=True, text=True, cwd=out, check=False, timeout=600,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr


class _Names:
    """A provider of Underscores."""

    @staticmethod
    def make(pkg: ModuleType) -> Any:
        class Provider(pkg.UnderscoresProviderBase):  # type: ignore[misc, name-defined]
            async def do_it(self, count: int) -> int:
                return count * 2

            async def do_it_twice(self, text: str) -> str:
                return text + text

            async def plain_call(self, n: int) -> int:
                return n + 1

        return Provider(my_attr=5, plain_name="p")


@pytest.mark.network
@pytest.mark.parametrize("combination", COMBINATIONS, ids=lambda c: "-".join(map(str, c)))
async def test_names_with_underscores_reach_the_provider_under_joynrs_names(
        generated, cc, runtimes, combination: tuple[str, str, BodyFormat]) -> None:
    _, pkg = generated
    wire = Wire(cc)
    provider_rt, consumer_rt, body_format = await pair(runtimes, combination)
    provider = _Names.make(pkg)
    pid = await provider_rt.register_provider("legal", provider)
    proxy = await pkg.build_underscores_proxy(consumer_rt, "legal", ttl_ms=3_000,
                                              body_format=body_format)
    assert await proxy.do_it(21) == 42
    assert await proxy.do_it_twice("ab") == "abab"
    assert await proxy.plain_call(1) == 2
    assert await proxy.my_attr.get() == 5
    await proxy.my_attr.set(6)
    assert provider.attribute_values["my_attr"] == 6
    changes: asyncio.Queue[Any] = asyncio.Queue()
    await proxy.my_attr.subscribe(changes.put_nowait)
    assert await asyncio.wait_for(changes.get(), WAIT_S) == 6
    provider.set_attribute("my_attr", 7)
    assert await asyncio.wait_for(changes.get(), WAIT_S) == 7
    events: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
    await proxy.my_event.subscribe(lambda *v: events.put_nowait(v))
    provider.fire_my_event(9)
    assert await asyncio.wait_for(events.get(), WAIT_S) == (9,)
    await proxy.close()
    if body_format is not JSON:
        return
    requests = wire.json(MessageType.REQUEST, sender=proxy.participant_id)
    called = [(r["methodName"], r["paramDatatypes"]) for r in requests]
    assert called == [("do_it", ["Integer"]), ("do_it", ["String"]), ("plainCall", ["Integer"]),
                      ("getMy_attr", []), ("setMy_attr", ["Integer"])]
    (subscribed,) = wire.json(MessageType.SUBSCRIPTION_REQUEST, sender=proxy.participant_id)
    assert subscribed["subscribedToName"] == "my_attr"
    multicasts = wire.kinds(MessageType.MULTICAST, sender=pid)
    assert {m.recipient.split("/")[1] for m in multicasts} == {"my_event"}


class _Widths:
    """A provider of Widths: each overload says which one ran."""

    @staticmethod
    def make(pkg: ModuleType) -> Any:
        def says(kind: str) -> Any:
            async def run(self: Any, value: Any) -> str:
                self.got.append((kind, value))
                return kind
            return run

        names = ["put", "put_2", "put_3", "put_4", "put_5", "put_6", "put_7", "put_8"]
        kinds = ["Byte", "Short", "Integer", "Long", "Float", "Double", "Integer[]", "Long[]"]
        members: dict[str, Any] = {n: says(k) for n, k in zip(names, kinds, strict=True)}

        async def scale(self: Any, factor: int) -> int:
            return factor * 10

        members["scale"] = scale
        provider = type("WidthsProvider", (pkg.WidthsProviderBase,), members)()
        provider.got = []
        return provider


@interface("legal/overloads/Widths", version=(1, 0))
class EarlierWidths:
    """Widths as an earlier runtime of this project declared its one Int32 method: a plain
    ``int``, named ``Long`` in its own requests."""

    async def scale(self, factor: int) -> int: ...


@interface("legal/overloads/Widths", version=(1, 0))
class OnePut:
    """Widths with one ``put``, of an Int8: no overload of it differs in width alone, so this
    project names its parameter ``Long``, as earlier versions named every integer."""

    @joynr_datatypes("Byte")
    async def put(self, small: Int8) -> str: ...


class OnePutProvider(Provider, interface=OnePut):
    async def put(self, small: int) -> str:
        return f"one put {small}"


def test_the_native_datatypes_carry_a_width_only_where_overloads_need_it(generated) -> None:
    _, pkg = generated
    methods = interface_def(pkg.Widths).methods
    # the eight overloads of put differ in width alone; scale (an Int32) has none
    assert [methods[n].param_datatypes for n in sorted(methods)] == [
        ["Byte"], ["Short"], ["Integer"], ["Long"], ["Float"], ["Double"], ["Integer[]"],
        ["Long[]"], ["Long"]]
    assert interface_def(EarlierWidths).methods["scale"].param_datatypes == ["Long"]
    assert interface_def(OnePut).methods["put"].param_datatypes == ["Long"]
    assert interface_def(OnePut).methods["put"].joynr_datatypes == ("Byte",)


@pytest.mark.network
@pytest.mark.parametrize("combination", COMBINATIONS, ids=lambda c: "-".join(map(str, c)))
async def test_overloads_that_differ_only_in_width_reach_their_own_method(
        generated, cc, runtimes, combination: tuple[str, str, BodyFormat]) -> None:
    _, pkg = generated
    wire = Wire(cc)
    provider_rt, consumer_rt, body_format = await pair(runtimes, combination)
    provider = _Widths.make(pkg)
    await provider_rt.register_provider("widths", provider)
    proxy = await pkg.build_widths_proxy(consumer_rt, "widths", ttl_ms=3_000,
                                         body_format=body_format)
    calls = [(proxy.put, 1), (proxy.put_2, 2), (proxy.put_3, 3), (proxy.put_4, 4),
             (proxy.put_5, 0.5), (proxy.put_6, 0.25), (proxy.put_7, [7]), (proxy.put_8, [8])]
    kinds = [await call(value) for call, value in calls]
    assert kinds == ["Byte", "Short", "Integer", "Long", "Float", "Double", "Integer[]",
                     "Long[]"]
    assert provider.got == list(zip(kinds, [v for _, v in calls], strict=True))
    assert await proxy.scale(4) == 40
    # a request of an earlier runtime of this project, which named the Int32 "Long"
    earlier = await consumer_rt.build_proxy(EarlierWidths, "widths", ttl_ms=3_000,
                                            body_format=body_format)
    assert await earlier.scale(5) == 50
    # a provider whose one put names its Int8 Long (no overload needs the width) takes the
    # width a proxy with the overloads names, as the one method of that name it fits
    await provider_rt.register_provider("widths-one-put", OnePutProvider())
    one_put = await pkg.build_widths_proxy(consumer_rt, "widths-one-put", ttl_ms=3_000,
                                           body_format=body_format)
    assert await one_put.put(7) == "one put 7"
    await one_put.close()
    await proxy.close()
    await earlier.close()
    if body_format is JSON:
        requests = wire.json(MessageType.REQUEST, sender=proxy.participant_id)
        assert [r["paramDatatypes"] for r in requests] == [
            ["Byte"], ["Short"], ["Integer"], ["Long"], ["Float"], ["Double"], ["Integer[]"],
            ["Long[]"], ["Integer"]]
