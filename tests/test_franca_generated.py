"""A package generated from .fidl files (tests/franca/generated/*.fidl: every construct the
generator supports) and used for real.

The package is generated into a temporary folder and imported. mypy ``--strict`` passes on it
and on code that uses it as an application would, and finds the type errors of code that uses
it wrongly; ``ruff format`` leaves it as it is. Then a provider implemented on the generated
provider base and a consumer through the generated typed proxy talk over real websocket
connections to a real cluster controller, in both dialects of libjoynr (native and joynr's,
``LibjoynrConfig(dialect="joynr")``) and both body formats: calls with every type, overloads,
named and inline errors, fire-and-forget, several out arguments, maps keyed by integers and by
an enumeration (named types: ``_typeName`` beside the entries in joynr's JSON, keys as
strings), attributes (read-only, and without subscriptions: a subscription is refused),
broadcasts selective and not. Every generated type makes the round trip through both codecs
(msgpack payloads and joynr's JSON).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pyjoynr.franca.generate import generate
from pyjoynr.franca.parser import parse_files
from pyjoynr.libjoynr import ApplicationError, LibjoynrConfig
from pyjoynr.libjoynr.advanced import MethodInvocationError, SubscriptionError
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.runtime.interface import from_wire, interface_def, joynr_type_name, to_wire
from pyjoynr.runtime.joynr_json import decode, encode
from pyjoynr.runtime.messages import MessageType
from pyjoynr.runtime.payloads import Reply, decode_payload
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE
from tests.support.generated import imported
from tests.support.wire import Wire

ROOT = Path(__file__).resolve().parents[1]
FIDL = ROOT / "tests" / "franca" / "generated"
PACKAGE = "franca_showcase"
WAIT_S = 5.0
MSGPACK, JSON = BodyFormat.MSGPACK, BodyFormat.JSON


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ModuleType]]:
    """(the folder holding the generated package, the package imported)."""
    out = tmp_path_factory.mktemp("generated")
    with imported(generate(parse_files(sorted(FIDL.glob("*.fidl"))), PACKAGE), out,
                  PACKAGE) as pkg:
        yield out, pkg


def common(pkg: ModuleType) -> ModuleType:
    return importlib.import_module(f"{pkg.__name__}.showcase_common")


# ====================================================================== typed, formatted

USAGE_OK = """
    from franca_showcase import (
        Country, Preset, PresetsBySlot, Sample, Station, Stations, StationsByCountry,
        StationsByName, TunerProviderBase, TunerProxy, WiderCountry, build_tuner_proxy)
    from franca_showcase.showcase_common import Position
    from pyjoynr.libjoynr import LibjoynrRuntime


    async def consume(runtime: LibjoynrRuntime, station: Station, sample: Sample,
                      preset: Preset) -> bool:
        proxy: TunerProxy = await build_tuner_proxy(runtime, "domain", ttl_ms=1000)
        country, position, nearby = await proxy.locate("Wien")
        where: Position = position
        first: Country = country
        stations: dict[str, Station] = nearby
        found: float = await proxy.seek(1, 2.0)
        echoed: Sample = await proxy.echo(sample, 1, 2, 3, 4, 0.5, b"", [station],
                                          StationsByName(), WiderCountry.ITALY, [1], preset)
        await proxy.note("hello")
        await proxy.current_station.get()
        grouped, renumbered = await proxy.regroup(
            PresetsBySlot({1: station}), StationsByCountry({Country.ITALY: Stations([station])}))
        by_country: list[Station] = grouped[Country.ITALY].stations
        slot: Station = renumbered[-1]
        del by_country, slot
        later = proxy.with_ttl(500)
        await later.close()
        del where, first, stations, found, echoed
        return await proxy.add_favorite_2("FM4", Country.AUSTRIA)


    class Mine(TunerProviderBase):
        async def add_favorite(self, station: Station) -> bool:
            return station.traffic_service


    def make(station: Station) -> Mine:
        mine = Mine(volume=3, current_station=station)
        mine.fire_weak_signal(station, 3)
        mine.fire_new_station(station, station.location, partitions=["eu"])
        return mine
"""

USAGE_BAD = """
    from franca_showcase import PresetsBySlot, Station, TunerProviderBase, TunerProxy


    async def wrong(proxy: TunerProxy, station: Station) -> None:
        text: str = await proxy.add_favorite(station)
        await proxy.add_favorite("FM4")
        await proxy.locate(name="Wien")
        TunerProviderBase(volume="loud")
        PresetsBySlot()["1"] = station
        del text
"""


def test_the_package_passes_mypy_strict_and_is_formatted(generated) -> None:
    out, _ = generated
    (out / "usage_ok.py").write_text(textwrap.dedent(USAGE_OK))
    (out / "usage_bad.py").write_text(textwrap.dedent(USAGE_BAD))
    (out / "mypy.ini").write_text(
        "[mypy]\nfollow_imports = silent\n"
        "[mypy-msgpack.*,asyncpg.*,amqtt.*]\nignore_missing_imports = True\n")

    def mypy(*targets: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [ROOT / ".venv" / "bin" / "mypy", "--strict", "--config-file", "mypy.ini",
             "--cache-dir", str(out / ".mypy_cache"), "--no-error-summary", *targets],
            capture_output=True, text=True, cwd=out, check=False,
            env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"})

    clean = mypy(PACKAGE, "usage_ok.py")
    assert (clean.returncode, clean.stdout) == (0, ""), clean.stdout + clean.stderr
    wrong = mypy("usage_bad.py")
    assert wrong.returncode == 1
    found = [line.split(": error: ")[0] for line in wrong.stdout.splitlines()
             if ": error: " in line]
    assert found == ["usage_bad.py:6", "usage_bad.py:7", "usage_bad.py:8", "usage_bad.py:9",
                     "usage_bad.py:10"], wrong.stdout

    formatted = subprocess.run(
        [ROOT / ".venv" / "bin" / "ruff", "format", "--check", "--diff", "--no-cache",
         "--line-length", "100", PACKAGE], capture_output=True, text=True, cwd=out, check=False)
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    # and ruff's checks of correctness, import order and modern syntax pass on it (the
    # example's checked-in package passes the project's whole rule set with `bin/test`;
    # design rules such as the number of parameters follow the model, not the generator)
    linted = subprocess.run(
        [ROOT / ".venv" / "bin" / "ruff", "check", "--no-cache", "--isolated",
         "--line-length", "100", "--select", "E,F,W,I,UP,B", PACKAGE],
        capture_output=True, text=True, cwd=out, check=False)
    assert linted.returncode == 0, linted.stdout + linted.stderr


# ====================================================================== values


def values(pkg: ModuleType) -> dict[str, tuple[Any, Any]]:
    """A value of every generated type, by type name: (value, declared type)."""
    geo = common(pkg)
    place = geo.Place("Wien", geo.Position(48.2, 16.37))
    station = pkg.Station(name="FM4", country=pkg.Country.AUSTRIA, traffic_service=True,
                          frequency=103.8, genres=["pop", "talk"], logo=b"\x00\x7f\xff",
                          location=place, URL="https://fm4.orf.at", class_=-3,
                          rds_text="FM4 ON AIR", int_=2**31 - 1)
    oe1 = pkg.Station(name="Oe1", country=pkg.Country.GERMANY, traffic_service=False,
                      frequency=87.8, genres=[], logo=b"", location=place, URL="", class_=0,
                      rds_text="", int_=0)
    city = geo.City("Roma", geo.Position(41.9, 12.5), 2_800_000)
    sample = pkg.Sample(i8=-128, u8=255, i16=-32768, u16=65535, i32=-2**31, u32=2**32 - 1,
                        i64=-2**63, u64=2**63 - 1, flag=True, f32=0.5, f64=1e-300,
                        text="grüß dich \u2603", raw=bytes(range(256)), numbers=[1, -1, 0],
                        stations=[station, oe1], by_name={"fm4": station, "oe1": oe1},
                        freq=99.9)
    return {
        "Station": (station, pkg.Station),
        "Sample": (sample, pkg.Sample),
        "EmptyStruct": (pkg.EmptyStruct(), pkg.EmptyStruct),
        "Preset": (pkg.Preset(7, city), pkg.Preset),
        "Reception": (pkg.Reception(-70), pkg.Reception),
        "Country": (pkg.Country.ITALY, pkg.Country),
        "WiderCountry": (pkg.WiderCountry.SWITZERLAND, pkg.WiderCountry),
        "FavoriteError": (pkg.FavoriteError.FULL, pkg.FavoriteError),
        "SeekErrorEnum": (pkg.SeekErrorEnum.BAND_END, pkg.SeekErrorEnum),
        "TuneErrorEnum": (pkg.TuneErrorEnum.LOCKED, pkg.TuneErrorEnum),
        "StationsByName": ({"fm4": station}, pkg.StationsByName),
        "PresetsBySlot": (pkg.PresetsBySlot({1: station, -2**31: oe1, 10: station}),
                          pkg.PresetsBySlot),
        "Stations": (pkg.Stations([station, oe1]), pkg.Stations),
        "StationsByCountry": (pkg.StationsByCountry({
            pkg.Country.ITALY: pkg.Stations([station, oe1]), pkg.Country.AUSTRIA: pkg.Stations()}),
                              pkg.StationsByCountry),
        "Frequency": (88.5, pkg.Frequency),
        "City": (city, geo.City),
        "Place": (place, geo.Place),
        "Position": (geo.Position(-33.9, 151.2), geo.Position),
    }


def test_every_generated_type_makes_the_round_trip_through_both_codecs(generated) -> None:
    _, pkg = generated
    cases = values(pkg)
    interfaces = {"Tuner", "TunerProviderBase", "TunerProxy", "build_tuner_proxy"}
    assert set(cases) == set(pkg.__all__) - interfaces  # every type of the package
    for name, (value, tp) in cases.items():
        wired = to_wire(value)
        # msgpack, as the project's payloads carry it
        body = Reply("r1", [wired]).to_body()
        carried = decode_payload(Reply, body).response
        assert carried is not None
        assert from_wire(carried[0], tp, name) == value, name
        # joynr's JSON
        text = encode(Reply("r1", [wired]), types=[tp])
        read = decode(Reply, text, types=[tp])
        assert isinstance(read, Reply) and read.response is not None
        back = read.response
        assert from_wire(back[0], tp, name) == value, name
        assert type(from_wire(back[0], tp, name)) is type(from_wire(carried[0], tp, name))
        written = json.loads(text)["response"][0]
        if isinstance(tp, type) and hasattr(tp, "__dataclass_fields__"):
            assert written["_typeName"] == joynr_type_name(tp), name
    station_json = json.loads(encode(Reply("r1", [to_wire(cases["Station"][0])]),
                                     types=[pkg.Station]))["response"][0]
    station = cases["Station"][0]
    assert station_json == {
        "_typeName": "joynr.showcase.tuner.Station", "name": "FM4", "country": "AUSTRIA",
        "trafficService": True, "frequency": 103.8, "genres": ["pop", "talk"],
        "logo": [0, 127, -1],
        "location": {"_typeName": "joynr.showcase.common.Geo.Place", "name": "Wien",
                     "position": {"_typeName": "joynr.showcase.common.Geo.Position",
                                  "latitude": 48.2, "longitude": 16.37}},
        "URL": "https://fm4.orf.at", "class": -3, "rds_text": "FM4 ON AIR", "int": 2**31 - 1}
    # the maps: named, their keys as strings (an integer's decimal text, an enumerator's name)
    presets, by_country = cases["PresetsBySlot"][0], cases["StationsByCountry"][0]
    typed = from_wire(to_wire(presets), pkg.PresetsBySlot)
    assert type(typed) is pkg.PresetsBySlot and list(typed) == [1, -2**31, 10]
    assert to_wire(presets) == {"1": to_wire(station), "-2147483648": to_wire(cases["Sample"][
        0].stations[1]), "10": to_wire(station)}
    text = encode(Reply("r1", [to_wire(presets), to_wire(by_country)]),
                  types=[pkg.PresetsBySlot, pkg.StationsByCountry]).decode()
    written = json.loads(text)["response"]
    assert list(written[0]) == ["_typeName", "-2147483648", "1", "10"]
    assert written[0]["_typeName"] == "joynr.showcase.tuner.PresetsBySlot"
    assert written[0]["1"] == station_json
    assert list(written[1]) == ["_typeName", "AUSTRIA", "ITALY"]
    assert written[1]["_typeName"] == "joynr.showcase.tuner.StationsByCountry"
    assert written[1]["AUSTRIA"] == {"_typeName": "joynr.showcase.tuner.Stations",
                                     "stations": []}
    assert written[1]["ITALY"]["stations"][0] == station_json


# ====================================================================== end to end


def implementation(pkg: ModuleType) -> Any:
    """A provider of Tuner on the generated provider base (``shuffle`` left to the base)."""
    geo = common(pkg)

    class TunerImpl(pkg.TunerProviderBase):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__(current_station=values(pkg)["Station"][0], volume=7,
                             recent_ids=[1, 2], muted=False,
                             presets=values(pkg)["PresetsBySlot"][0])
            self.favorites: list[Any] = []
            self.notes: list[str] = []
            self.noted = asyncio.Event()
            self.echoed: list[Any] = []
            self.regrouped: list[Any] = []

        async def add_favorite(self, station: Any) -> bool:
            if station in self.favorites:
                return False
            self.favorites.append(station)
            return True

        async def add_favorite_2(self, name: str, country: Any) -> bool:
            return country is pkg.Country.AUSTRIA and name == "FM4"

        async def remove_favorite(self, name: str) -> None:
            raise ApplicationError(pkg.FavoriteError.NOT_FOUND.name, f"{name} is no favorite")

        async def seek(self, direction: int, start: float) -> float:
            if direction == 0:
                raise ApplicationError(pkg.SeekErrorEnum.NO_SIGNAL.name, "nothing there")
            return start + direction / 2

        async def tune(self, preset: int) -> None:
            if preset == 13:
                raise ApplicationError(pkg.TuneErrorEnum.LOCKED.name, "locked")

        async def locate(self, name: str) -> tuple[Any, Any, Any]:
            return (pkg.Country.ITALY, geo.Position(41.9, 12.5),
                    {name: values(pkg)["Station"][0]})

        async def regroup(self, presets: Any, by_country: Any) -> tuple[Any, Any]:
            self.regrouped = [presets, by_country]
            grouped = pkg.StationsByCountry({c: pkg.Stations(list(s.stations))
                                             for c, s in by_country.items()})
            for slot in sorted(presets):
                grouped.setdefault(presets[slot].country, pkg.Stations()).stations.append(
                    presets[slot])
            return grouped, pkg.PresetsBySlot({-slot: st for slot, st in presets.items()})

        async def echo(self, *args: Any) -> Any:
            self.echoed = list(args)
            return args[0]

        async def note(self, text: str) -> None:
            self.notes.append(text)
            self.noted.set()

        async def close_(self) -> bool:
            return True

    return TunerImpl()


def station_json(station: Any) -> Any:
    """A station as joynr's JSON carries it."""
    return json.loads(encode(Reply("r", [to_wire(station)]), types=[type(station)]))[
        "response"][0]


#: (the provider's dialect, the consumer's, the body format of the proxy)
COMBINATIONS = [(JOYNR, JOYNR, JSON), (NATIVE, NATIVE, MSGPACK), (NATIVE, JOYNR, JSON),
                (JOYNR, NATIVE, MSGPACK), (NATIVE, NATIVE, JSON)]


@pytest.mark.network
@pytest.mark.parametrize("combination", COMBINATIONS, ids=lambda c: "-".join(map(str, c)))
async def test_a_generated_provider_and_proxy_talk(generated, cc, runtimes,
                                                   combination: tuple[str, str, BodyFormat]
                                                   ) -> None:
    provider_dialect, consumer_dialect, body_format = combination
    _, pkg = generated
    geo = common(pkg)
    wire = Wire(cc)

    def config(dialect: str) -> LibjoynrConfig:
        return LibjoynrConfig(dialect=JOYNR) if dialect == JOYNR else LibjoynrConfig()

    provider_rt = await runtimes(config=config(provider_dialect))
    consumer_rt = await runtimes(config=config(consumer_dialect))
    provider = implementation(pkg)
    pid = await provider_rt.register_provider("showcase", provider)
    proxy = await pkg.build_tuner_proxy(consumer_rt, "showcase", ttl_ms=3_000,
                                        body_format=body_format)
    assert proxy.body_format is body_format and proxy.provider_participant_id == pid
    cases = values(pkg)
    station, sample = cases["Station"][0], cases["Sample"][0]

    # calls with every type, overloads, several out arguments
    assert await proxy.add_favorite(station) is True
    assert await proxy.add_favorite(station) is False
    assert await proxy.add_favorite_2("FM4", pkg.Country.AUSTRIA) is True
    assert await proxy.add_favorite_2("FM4", pkg.Country.ITALY) is False
    assert await proxy.seek(3, 100.0) == 101.5
    assert await proxy.locate("Roma") == (pkg.Country.ITALY, geo.Position(41.9, 12.5),
                                          {"Roma": station})
    echo_args = (sample, -128, 65535, -2**31, 2**63 - 1, 0.25, b"\xff\x00", [station],
                 {"fm4": station}, pkg.WiderCountry.SWITZERLAND, [2**40],
                 cases["Preset"][0])
    assert await proxy.echo(*echo_args) == sample
    assert provider.echoed == list(echo_args)
    # maps keyed by integers and by an enumeration, as parameters and results
    oe1 = cases["Sample"][0].stations[1]
    presets, by_country = cases["PresetsBySlot"][0], cases["StationsByCountry"][0]
    grouped, renumbered = await proxy.regroup(presets, by_country)
    assert provider.regrouped == [presets, by_country]
    assert [type(v) for v in provider.regrouped] == [pkg.PresetsBySlot, pkg.StationsByCountry]
    assert {type(k) for k in provider.regrouped[0]} == {int}
    assert set(provider.regrouped[1]) == {pkg.Country.ITALY, pkg.Country.AUSTRIA}
    assert type(grouped) is pkg.StationsByCountry and type(renumbered) is pkg.PresetsBySlot
    assert grouped == {pkg.Country.ITALY: pkg.Stations([station, oe1]),
                       pkg.Country.GERMANY: pkg.Stations([oe1]),
                       pkg.Country.AUSTRIA: pkg.Stations([station, station])}
    assert renumbered == {-1: station, 2**31: oe1, -10: station}
    assert await proxy.close_() is True
    await proxy.tune(1)
    # errors: a named enumeration, inline ones (one extending another)
    with pytest.raises(ApplicationError) as named:
        await proxy.remove_favorite("nothing")
    assert named.value.error == "NOT_FOUND"
    with pytest.raises(ApplicationError) as inline:
        await proxy.seek(0, 1.0)
    assert inline.value.error == "NO_SIGNAL"
    with pytest.raises(ApplicationError) as extended:
        await proxy.tune(13)
    assert extended.value.error == "LOCKED"
    with pytest.raises(MethodInvocationError, match=r"Tuner\.shuffle is not implemented"):
        await proxy.shuffle()
    # fire and forget
    await proxy.note("hello")
    await asyncio.wait_for(provider.noted.wait(), WAIT_S)
    assert provider.notes == ["hello"]

    # attributes
    assert await proxy.current_station.get() == station
    await proxy.current_station.set(oe1)
    assert provider.attribute_values["current_station"] == oe1
    assert await proxy.volume.get() == 7
    with pytest.raises(AttributeError, match="read-only"):
        await proxy.volume.set(9)
    assert await proxy.recent_ids.get() == [1, 2]
    assert await proxy.muted.get() is False
    got = await proxy.presets.get()
    assert got == presets and type(got) is pkg.PresetsBySlot
    await proxy.presets.set(pkg.PresetsBySlot({7: oe1}))
    assert provider.attribute_values["presets"] == {7: oe1}
    slots: asyncio.Queue[Any] = asyncio.Queue()
    await proxy.presets.subscribe(slots.put_nowait)
    assert await asyncio.wait_for(slots.get(), WAIT_S) == {7: oe1}
    provider.set_attribute("presets", pkg.PresetsBySlot({-3: station}))
    published = await asyncio.wait_for(slots.get(), WAIT_S)
    assert published == {-3: station} and type(published) is pkg.PresetsBySlot
    with pytest.raises(SubscriptionError, match="not notifiable"):
        await proxy.recent_ids.subscribe(print)
    changes: asyncio.Queue[Any] = asyncio.Queue()
    await proxy.current_station.subscribe(changes.put_nowait)
    assert await asyncio.wait_for(changes.get(), WAIT_S) == oe1
    provider.set_attribute("current_station", station)
    assert await asyncio.wait_for(changes.get(), WAIT_S) == station

    # broadcasts: a multicast with partitions, a selective one with filters, one without values
    found: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
    await proxy.new_station.subscribe(lambda *v: found.put_nowait(v), partitions=["eu", "+"])
    provider.fire_new_station(station, cases["Place"][0], partitions=["us"])
    provider.fire_new_station(oe1, cases["Place"][0], partitions=["eu", "at"])
    assert await asyncio.wait_for(found.get(), WAIT_S) == (oe1, cases["Place"][0])
    weak: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
    provider.add_broadcast_filter(
        "weak_signal", lambda params, st, strength: strength <= int(params["minStrength"]))
    await proxy.weak_signal.subscribe(lambda *v: weak.put_nowait(v),
                                      filter_parameters={"genre": "pop", "minStrength": "5"})
    provider.fire_weak_signal(station, 9)
    provider.fire_weak_signal(station, 3)
    assert await asyncio.wait_for(weak.get(), WAIT_S) == (station, 3)
    ticks: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
    await proxy.tick.subscribe(lambda *v: ticks.put_nowait(v))
    provider.fire_tick()
    assert await asyncio.wait_for(ticks.get(), WAIT_S) == ()
    await asyncio.sleep(0.1)
    assert found.empty() and weak.empty() and ticks.empty()
    await proxy.close()

    if body_format is not JSON:
        return
    # joynr's JSON, named and typed as joynr's generated code names and types it
    requests = wire.json(MessageType.REQUEST, sender=proxy.participant_id)
    called = [(r["methodName"], r["paramDatatypes"]) for r in requests]
    assert called[:4] == [
        ("addFavorite", ["joynr.showcase.tuner.Station"]),
        ("addFavorite", ["joynr.showcase.tuner.Station"]),
        ("addFavorite", ["String", "joynr.showcase.tuner.Country"]),
        ("addFavorite", ["String", "joynr.showcase.tuner.Country"]),
    ]
    assert ("seek", ["Short", "Double"]) in called and ("close", []) in called
    assert ("echo", [
        "joynr.showcase.tuner.Sample", "Byte", "Short", "Integer", "Long", "Float", "Byte[]",
        "joynr.showcase.tuner.Station[]", "joynr.showcase.tuner.StationsByName",
        "joynr.showcase.tuner.WiderCountry", "Long[]", "joynr.showcase.tuner.Tuning.Preset",
    ]) in called
    assert ("getCurrentStation", []) in called and ("getRecentIds", []) in called
    assert ("regroup", ["joynr.showcase.tuner.PresetsBySlot",
                        "joynr.showcase.tuner.StationsByCountry"]) in called
    assert ("setPresets", ["joynr.showcase.tuner.PresetsBySlot"]) in called
    assert ("setCurrentStation", ["joynr.showcase.tuner.Station"]) in called
    replies = {r["requestReplyId"]: r for r in
               wire.json(MessageType.REPLY, recipient=proxy.participant_id)}
    by_method = {r["methodName"]: replies[r["requestReplyId"]] for r in requests}
    # a map on joynr's wire: its _typeName first, then its entries keyed by strings
    (regroup,) = [r for r in requests if r["methodName"] == "regroup"]
    assert [list(p) for p in regroup["params"]] == [
        ["_typeName", "-2147483648", "1", "10"], ["_typeName", "AUSTRIA", "ITALY"]]
    assert regroup["params"][0]["_typeName"] == "joynr.showcase.tuner.PresetsBySlot"
    assert regroup["params"][1]["ITALY"]["stations"][1]["name"] == "Oe1"
    grouped_json, renumbered_json = by_method["regroup"]["response"]
    assert list(grouped_json) == ["_typeName", "AUSTRIA", "GERMANY", "ITALY"]
    assert list(renumbered_json) == ["_typeName", "-1", "-10", "2147483648"]
    assert renumbered_json["_typeName"] == "joynr.showcase.tuner.PresetsBySlot"
    assert by_method["locate"]["response"][0] == "ITALY"
    assert len(by_method["locate"]["response"]) == 3
    assert by_method["removeFavorite"]["error"]["error"] == {
        "_typeName": "joynr.showcase.tuner.FavoriteError", "name": "NOT_FOUND"}
    assert by_method["tune"]["error"]["error"] == {
        "_typeName": "joynr.showcase.tuner.Tuner.TuneErrorEnum", "name": "LOCKED"}
    seek_errors = [replies[r["requestReplyId"]].get("error") or {} for r in requests
                   if r["methodName"] == "seek"]
    assert seek_errors[1]["error"] == {
        "_typeName": "joynr.showcase.tuner.Tuner.SeekErrorEnum", "name": "NO_SIGNAL"}
    (one_way,) = wire.json(MessageType.ONE_WAY, sender=proxy.participant_id)
    assert (one_way["methodName"], one_way["paramDatatypes"]) == ("note", ["String"])
    subscribed = [m["subscribedToName"] for kind in (
        MessageType.SUBSCRIPTION_REQUEST, MessageType.BROADCAST_SUBSCRIPTION_REQUEST)
        for m in wire.json(kind, sender=proxy.participant_id)]
    assert sorted(subscribed) == ["currentStation", "presets", "recentIds", "weakSignal"]
    published = [p["response"][0] for p in wire.json(MessageType.PUBLICATION,
                                                      recipient=proxy.participant_id)]
    assert {"_typeName": "joynr.showcase.tuner.PresetsBySlot", "7": station_json(oe1)} in (
        published)
    multicasts = wire.kinds(MessageType.MULTICAST, sender=pid)
    assert {m.recipient.split("/")[1] for m in multicasts} == {"newStation", "tick"}


def test_the_declarations_are_those_of_the_fidl(generated) -> None:
    _, pkg = generated
    definition = interface_def(pkg.Tuner)
    assert (definition.name, definition.version) == ("showcase/tuner/Tuner", (2, 1))
    attrs = definition.attributes
    assert [(n, a.readonly, a.notifiable) for n, a in attrs.items()] == [
        ("current_station", False, True), ("volume", True, True),
        ("recent_ids", False, False), ("muted", True, False), ("presets", False, True)]
    assert definition.broadcasts["weak_signal"].selective
    assert definition.broadcasts["weak_signal"].filter_parameters == ("genre", "minStrength")
    assert not definition.broadcasts["new_station"].selective
    methods = definition.methods
    assert methods["add_favorite_2"].name == "add_favorite"  # the overload's wire name
    assert methods["note"].one_way
    assert [n for n, _ in methods["locate"].outputs] == ["country", "position", "nearby"]
    assert methods["regroup"].param_datatypes == ["joynr.showcase.tuner.PresetsBySlot",
                                                  "joynr.showcase.tuner.StationsByCountry"]
    assert methods["regroup"].returns == tuple[pkg.StationsByCountry, pkg.PresetsBySlot]
    assert [m.name for m in pkg.TuneErrorEnum] == ["NOT_FOUND", "FULL", "LOCKED"]
    assert methods["tune"].error_enum is pkg.TuneErrorEnum
    assert [m.name for m in pkg.Country] == ["AUSTRIA", "GERMANY", "ITALY"]
    assert issubclass(common(pkg).City, common(pkg).Place)
