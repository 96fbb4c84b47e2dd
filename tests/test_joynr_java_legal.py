"""The legal Franca that needed the runtime (tests/franca/oracle/legal_overloads.fidl and
legal_names.fidl) against joynr's own Java runtime (release 1.25.0, tests/support/java_oracles.py):
joynr's generator makes the Java code of both files, and one Java application
(``pyjoynr.oracle.LegalApp``) is provider and consumer of both interfaces on this project's
cluster controller, beside this project's generated package of the same files.

- A Java provider, called by this project's generated proxies in both dialects of libjoynr:
  every overload of ``Widths.put`` (they differ only in integer width or Float/Double) reaches
  its own Java method; ``Underscores.do_it`` (both overloads), ``plainCall``, the attribute
  ``my_attr`` (read, written, subscribed) and the broadcast ``my_event`` work under the names
  joynr's Java code gives them.
- This project's provider (the generated provider base), in both dialects, called the same way
  by joynr's Java consumer.

What travelled is read at the cluster controller (the requests' ``methodName`` and
``paramDatatypes``, the subscription's ``subscribedToName``, the multicast's name). One cluster
controller (no MQTT: everything is registered LOCAL) and one Java application are shared by the
module's tests; every test has domains of its own.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import pytest_asyncio

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.franca.generate import generate
from pyjoynr.franca.parser import parse_files
from pyjoynr.libjoynr import LibjoynrConfig, LibjoynrRuntime, ProviderQos, ProviderScope, connect
from pyjoynr.runtime.messages import MessageType
from pyjoynr.testing.cluster import cc_config
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE
from tests.support.generated import imported
from tests.support.java_oracles import LEGAL_APP, JavaOracles, JavaRadioApp
from tests.support.wire import Wire
from tests.test_franca_legal_runtime import _Names, _Widths

pytestmark = [pytest.mark.network, pytest.mark.asyncio(loop_scope="module")]

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT / "tests" / "franca" / "oracle"
PACKAGE = "franca_legal_java"
WAIT_S = 20.0
DIALECTS = [NATIVE, JOYNR]
#: the put overloads in declaration order: joynr's Java type of each (what the provider
#: answers), and a value each is called with
PUTS = [("Byte", 1), ("Short", 2), ("Integer", 3), ("Long", 4), ("Float", 0.5),
        ("Double", 0.25), ("Integer[]", [7]), ("Long[]", [8])]
#: the generated proxy's method of each put overload
PUT_METHODS = ["put", "put_2", "put_3", "put_4", "put_5", "put_6", "put_7", "put_8"]
#: what joynr's Java consumer sends and provider takes (methodName, paramDatatypes)
WIDTHS_REQUESTS = [("put", [kind]) for kind, _ in PUTS] + [("scale", ["Integer"])]
NAMES_REQUESTS = [("do_it", ["Integer"]), ("do_it", ["String"]), ("plainCall", ["Integer"]),
                  ("getMy_attr", []), ("setMy_attr", ["Integer"])]


def fresh(name: str) -> str:
    return f"legal.{name}.{uuid.uuid4().hex[:8]}"


def config(dialect: str) -> LibjoynrConfig:
    return LibjoynrConfig(dialect=JOYNR) if dialect == JOYNR else LibjoynrConfig()


@dataclass
class Setup:
    cc: ClusterController
    wire: Wire
    app: JavaRadioApp
    pkg: ModuleType


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    out = tmp_path_factory.mktemp("legal-java")
    files = [ORACLE / "legal_names.fidl", ORACLE / "legal_overloads.fidl"]
    with imported(generate(parse_files(files), PACKAGE), out, PACKAGE) as pkg:
        yield pkg


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def setup(java_oracles: JavaOracles, generated: ModuleType,
                tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Setup]:
    """This project's cluster controller with joynr's Java application of the legal Franca."""
    workdir = tmp_path_factory.mktemp("java-legal")
    async with AsyncExitStack() as stack:
        cc = await stack.enter_async_context(ClusterController(cc_config(workdir / "cc")))
        wire = Wire(cc)
        app = JavaRadioApp(java_oracles, workdir, cc.websocket_address.url, name="java-legal",
                           main=LEGAL_APP)
        stack.push_async_callback(app.stop)
        await app.start()
        yield Setup(cc, wire, app, generated)


async def runtime_on(stack: AsyncExitStack, setup: Setup, dialect: str) -> LibjoynrRuntime:
    runtime = await connect(setup.cc.websocket_address.url, config=config(dialect),
                            timeout_ms=int(WAIT_S * 1000))
    stack.push_async_callback(runtime.core.stop)
    return runtime


def requests(setup: Setup, **who: str) -> list[tuple[str, list[str]]]:
    return [(r["methodName"], r["paramDatatypes"])
            for r in setup.wire.json(MessageType.REQUEST, **who)]


# ====================================================================== a Java provider


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_every_width_overload_reaches_its_own_java_method(setup: Setup, dialect: str
                                                                ) -> None:
    app, domain = setup.app, fresh(f"widths-{dialect}")
    await app.call("register", interface="Widths", domain=domain)
    async with AsyncExitStack() as stack:
        runtime = await runtime_on(stack, setup, dialect)
        proxy = await setup.pkg.build_widths_proxy(runtime, domain, ttl_ms=10_000)
        kinds = [await getattr(proxy, method)(value)
                 for method, (_, value) in zip(PUT_METHODS, PUTS, strict=True)]
        assert kinds == [kind for kind, _ in PUTS]
        assert await proxy.scale(4) == 40
        await proxy.close()
    state = await app.call("providerState", interface="Widths", domain=domain)
    assert state["got"] == [list(put) for put in PUTS]
    assert requests(setup, sender=proxy.participant_id) == WIDTHS_REQUESTS
    await app.call("unregister", interface="Widths", domain=domain)


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_names_with_underscores_reach_a_java_provider(setup: Setup, dialect: str) -> None:
    app, domain = setup.app, fresh(f"names-{dialect}")
    await app.call("register", interface="Underscores", domain=domain)
    async with AsyncExitStack() as stack:
        runtime = await runtime_on(stack, setup, dialect)
        proxy = await setup.pkg.build_underscores_proxy(runtime, domain, ttl_ms=10_000)
        assert await proxy.do_it(21) == 42
        assert await proxy.do_it_twice("ab") == "abab"
        assert await proxy.plain_call(1) == 2
        assert await proxy.my_attr.get() == 5
        await proxy.my_attr.set(6)
        state = await app.call("providerState", interface="Underscores", domain=domain)
        assert state["my_attr"] == 6
        changes: asyncio.Queue[Any] = asyncio.Queue()
        await proxy.my_attr.subscribe(changes.put_nowait)
        assert await asyncio.wait_for(changes.get(), WAIT_S) == 6
        await app.call("setMyAttrLocally", domain=domain, value=7)
        assert await asyncio.wait_for(changes.get(), WAIT_S) == 7
        events: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        await proxy.my_event.subscribe(lambda *v: events.put_nowait(v))
        await app.call("fireMyEvent", domain=domain, level=9)
        assert await asyncio.wait_for(events.get(), WAIT_S) == (9,)
        await proxy.close()
    assert requests(setup, sender=proxy.participant_id) == NAMES_REQUESTS
    (subscribed,) = setup.wire.json(MessageType.SUBSCRIPTION_REQUEST,
                                    sender=proxy.participant_id)
    assert subscribed["subscribedToName"] == "my_attr"
    (java_pid,) = {m.recipient for m in setup.wire.kinds(MessageType.REQUEST,
                                                         sender=proxy.participant_id)}
    multicasts = setup.wire.kinds(MessageType.MULTICAST, sender=java_pid)
    assert {m.recipient.split("/")[1] for m in multicasts} == {"my_event"}
    await app.call("unregister", interface="Underscores", domain=domain)


# ====================================================================== a Java consumer


async def java_proxy(app: JavaRadioApp, interface: str, domain: str) -> str:
    name = fresh("proxy")
    await app.call("proxy", interface=interface, name=name, domain=domain)
    return name


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_java_consumer_reaches_every_width_overload_of_this_projects_provider(
        setup: Setup, dialect: str) -> None:
    app, domain = setup.app, fresh(f"py-widths-{dialect}")
    async with AsyncExitStack() as stack:
        runtime = await runtime_on(stack, setup, dialect)
        provider = _Widths.make(setup.pkg)
        pid = await runtime.register_provider(domain, provider,
                                              qos=ProviderQos(scope=ProviderScope.LOCAL))
        proxy = await java_proxy(app, "Widths", domain)
        kinds = [await app.call("put", proxy=proxy, kind=kind, value=value)
                 for kind, value in PUTS]
        assert kinds == [kind for kind, _ in PUTS]
        assert provider.got == PUTS
        assert await app.call("scale", proxy=proxy, factor=4) == 40
    assert requests(setup, recipient=pid) == WIDTHS_REQUESTS


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_java_consumer_reaches_names_with_underscores_of_this_projects_provider(
        setup: Setup, dialect: str) -> None:
    app, domain = setup.app, fresh(f"py-names-{dialect}")
    async with AsyncExitStack() as stack:
        runtime = await runtime_on(stack, setup, dialect)
        provider = _Names.make(setup.pkg)
        pid = await runtime.register_provider(domain, provider,
                                              qos=ProviderQos(scope=ProviderScope.LOCAL))
        proxy = await java_proxy(app, "Underscores", domain)
        assert await app.call("doIt", proxy=proxy, count=21) == 42
        assert await app.call("doItTwice", proxy=proxy, text="ab") == "abab"
        assert await app.call("plainCall", proxy=proxy, n=1) == 2
        assert await app.call("getMyAttr", proxy=proxy) == 5
        assert await app.call("setMyAttr", proxy=proxy, value=6) is None
        assert provider.attribute_values["my_attr"] == 6
        await app.call("subscribeMyAttr", proxy=proxy)
        await app.next_event("publication", timeout_s=WAIT_S, attribute="my_attr", value=6)
        provider.set_attribute("my_attr", 7)
        await app.next_event("publication", timeout_s=WAIT_S, attribute="my_attr", value=7)
        await app.call("subscribeMyEvent", proxy=proxy)
        provider.fire_my_event(9)
        await app.next_event("broadcast", timeout_s=WAIT_S, broadcast="my_event", level=9)
    assert requests(setup, recipient=pid) == NAMES_REQUESTS
    (subscribed,) = setup.wire.json(MessageType.SUBSCRIPTION_REQUEST, recipient=pid)
    assert subscribed["subscribedToName"] == "my_attr"
    multicasts = setup.wire.kinds(MessageType.MULTICAST, sender=pid)
    assert {m.recipient.split("/")[1] for m in multicasts} == {"my_event"}
