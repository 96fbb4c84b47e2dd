"""Two major versions of one interface, generated with joynr's ``-addVersionTo package``
(``generate(..., add_version_to="package")``) into one application package and served side by
side.

tests/franca/oracle/package_versions/ declares ``fleet.Tracker`` in versions 1 and 2 with
their own types (anonymous and named versioned type collections, an inline error
enumeration, a map), a type collection without a version that both use, and one kept at
version 1 that version 2 uses. Generated together they are the modules ``fleet_v1``,
``fleet_v2`` and ``fleet`` of one package (mypy ``--strict`` passes on it); a provider of each
version registered on the same domain in one cluster controller answers a proxy of its own
version only, in both dialects of libjoynr, and joynr's JSON names the types as joynr's
generators name them in this mode (``joynr.fleet.v2.Fix``) while the interface keeps its name
(``fleet/Tracker``).
"""

from __future__ import annotations

import asyncio
import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pyjoynr.franca.generate import GenerationError, generate
from pyjoynr.franca.parser import parse_files
from pyjoynr.libjoynr import ApplicationError, LibjoynrConfig
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.runtime.interface import interface_def, joynr_type_name
from pyjoynr.runtime.messages import MessageType
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE
from tests.support.generated import imported
from tests.support.wire import Wire

ROOT = Path(__file__).resolve().parents[1]
FIDL = ROOT / "tests" / "franca" / "oracle" / "package_versions"
PACKAGE = "fleet_app"
DOMAIN = "depot"
WAIT_S = 5.0


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ModuleType]]:
    out = tmp_path_factory.mktemp("versions")
    model = parse_files(sorted(FIDL.glob("*.fidl")))
    with imported(generate(model, PACKAGE, add_version_to="package"), out, PACKAGE) as pkg:
        yield out, pkg


def modules(pkg: ModuleType) -> tuple[ModuleType, ModuleType, ModuleType]:
    return tuple(importlib.import_module(f"{pkg.__name__}.{m}")  # type: ignore[return-value]
                 for m in ("fleet_v1", "fleet_v2", "fleet"))


USAGE = """
    from fleet_app.fleet import Distance, DistanceUnit
    from fleet_app import fleet_v1, fleet_v2
    from pyjoynr.libjoynr import LibjoynrRuntime


    async def both(runtime: LibjoynrRuntime) -> tuple[fleet_v1.Fix, fleet_v2.Fix]:
        old = await fleet_v1.build_tracker_proxy(runtime, "depot")
        new = await fleet_v2.build_tracker_proxy(runtime, "depot")
        trip: fleet_v2.Trip = await new.last_trip("vin")
        length: Distance = trip.length
        assert length.unit is DistanceUnit.MILE and trip.fuel is fleet_v2.Fuel.ELECTRIC
        return await old.locate("vin"), await new.locate("vin")


    class Old(fleet_v1.TrackerProviderBase):
        async def locate(self, vin: str) -> fleet_v1.Fix:
            return fleet_v1.Fix(1.0, 2.0)
"""


def test_both_versions_live_in_one_package_and_pass_mypy_strict(app) -> None:
    out, pkg = app
    assert sorted(p.name for p in (out / PACKAGE).glob("*.py")) == [
        "__init__.py", "fleet.py", "fleet_v1.py", "fleet_v2.py"]
    (out / "usage.py").write_text(USAGE.replace("\n    ", "\n"))
    (out / "mypy.ini").write_text(
        "[mypy]\nfollow_imports = silent\n"
        "[mypy-msgpack.*,asyncpg.*,amqtt.*]\nignore_missing_imports = True\n")
    done = subprocess.run(
        [ROOT / ".venv" / "bin" / "mypy", "--strict", "--config-file", "mypy.ini",
         "--cache-dir", str(out / ".mypy_cache"), "--no-error-summary", PACKAGE, "usage.py"],
        capture_output=True, text=True, cwd=out, check=False,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr
    v1, v2, _ = modules(pkg)
    assert v1.Tracker is not v2.Tracker and v1.Fix is not v2.Fix


def test_the_wire_names_are_joynrs_with_the_version_in_the_package(app) -> None:
    _, pkg = app
    v1, v2, shared = modules(pkg)
    assert [joynr_type_name(t) for t in (v1.Fix, v1.Fuel, v1.FuelLevels, v1.Trip,
                                         v1.LocateErrorEnum, v1.Odometer)] == [
        "joynr.fleet.v1.Fix", "joynr.fleet.v1.TrackerTypes.Fuel",
        "joynr.fleet.v1.TrackerTypes.FuelLevels", "joynr.fleet.v1.Trip",
        "joynr.fleet.v1.Tracker.LocateErrorEnum", "joynr.fleet.v1.Readings.Odometer"]
    assert [joynr_type_name(t) for t in (v2.Fix, v2.Fuel, v2.FuelLevels, v2.Trip,
                                         v2.LocateErrorEnum)] == [
        "joynr.fleet.v2.Fix", "joynr.fleet.v2.TrackerTypes.Fuel",
        "joynr.fleet.v2.TrackerTypes.FuelLevels", "joynr.fleet.v2.Trip",
        "joynr.fleet.v2.Tracker.LocateErrorEnum"]
    assert [joynr_type_name(t) for t in (shared.Distance, shared.DistanceUnit)] == [
        "joynr.fleet.Units.Distance", "joynr.fleet.Units.DistanceUnit"]
    one, two = interface_def(v1.Tracker), interface_def(v2.Tracker)
    assert (one.name, one.version, two.name, two.version) == (
        "fleet/Tracker", (1, 0), "fleet/Tracker", (2, 0))


def test_two_versions_without_the_mode_are_refused_naming_it() -> None:
    model = parse_files(sorted(FIDL.glob("*.fidl")))
    with pytest.raises(GenerationError) as refused:
        generate(model, PACKAGE)
    text = str(refused.value)
    assert "interface fleet/Tracker is declared at" in text
    assert "type joynr.fleet.Fix is declared at" in text
    assert 'add_version_to "package"' in text
    with pytest.raises(ValueError, match="add_version_to must be one of"):
        generate(model, PACKAGE, add_version_to="packages")


def implementations(v1: ModuleType, v2: ModuleType, shared: ModuleType) -> tuple[Any, Any]:
    class Old(v1.TrackerProviderBase):  # type: ignore[misc,name-defined]
        async def locate(self, vin: str) -> Any:
            if vin == "nobody":
                raise ApplicationError(v1.LocateErrorEnum.UNKNOWN_VIN.name, "no such vehicle")
            return v1.Fix(48.1, 11.5)

        async def levels(self, vin: str) -> Any:
            return v1.FuelLevels({v1.Fuel.DIESEL: 40})

        async def last_trip(self, vin: str) -> Any:
            return v1.Trip(vin, shared.Distance(12.5, shared.DistanceUnit.KILOMETRE))

    class New(v2.TrackerProviderBase):  # type: ignore[misc,name-defined]
        async def locate(self, vin: str) -> Any:
            if vin == "nobody":
                raise ApplicationError(v2.LocateErrorEnum.NO_SIGNAL.name, "no fix")
            return v2.Fix(48.1, 11.5, 30)

        async def levels(self, vin: str) -> Any:
            return v2.FuelLevels({v2.Fuel.ELECTRIC: 80})

        async def last_trip(self, vin: str) -> Any:
            return v2.Trip(vin, shared.Distance(7.0, shared.DistanceUnit.MILE),
                           v2.Fuel.ELECTRIC)

        async def odometer(self, vin: str) -> Any:
            return v1.Odometer(123_456)

    return Old(vehicle_count=1), New(vehicle_count=2)


@pytest.mark.network
@pytest.mark.parametrize(("provider_dialect", "consumer_dialect"),
                         [(NATIVE, NATIVE), (JOYNR, JOYNR), (NATIVE, JOYNR), (JOYNR, NATIVE)])
async def test_providers_of_both_versions_answer_their_own_proxies(
        app, cc, runtimes, provider_dialect: str, consumer_dialect: str) -> None:
    _, pkg = app
    v1, v2, shared = modules(pkg)
    wire = Wire(cc)

    def config(dialect: str) -> LibjoynrConfig:
        return LibjoynrConfig(dialect=JOYNR) if dialect == JOYNR else LibjoynrConfig()

    provider_rt = await runtimes(config=config(provider_dialect))
    consumer_rt = await runtimes(config=config(consumer_dialect))
    old, new = implementations(v1, v2, shared)
    old_pid = await provider_rt.register_provider(DOMAIN, old)
    new_pid = await provider_rt.register_provider(DOMAIN, new)
    assert old_pid != new_pid
    body = BodyFormat.JSON if consumer_dialect == JOYNR else BodyFormat.MSGPACK
    old_proxy = await v1.build_tracker_proxy(consumer_rt, DOMAIN, ttl_ms=3_000,
                                             body_format=body)
    new_proxy = await v2.build_tracker_proxy(consumer_rt, DOMAIN, ttl_ms=3_000,
                                             body_format=body)
    assert (old_proxy.provider_participant_id, new_proxy.provider_participant_id) == (
        old_pid, new_pid)

    assert await old_proxy.locate("WVW1") == v1.Fix(48.1, 11.5)
    fix = await new_proxy.locate("WVW1")
    assert fix == v2.Fix(48.1, 11.5, 30) and type(fix) is v2.Fix
    with pytest.raises(ApplicationError) as unknown:
        await old_proxy.locate("nobody")
    assert unknown.value.error == "UNKNOWN_VIN"
    with pytest.raises(ApplicationError) as no_signal:
        await new_proxy.locate("nobody")
    assert no_signal.value.error == "NO_SIGNAL"
    old_levels, new_levels = await old_proxy.levels("v"), await new_proxy.levels("v")
    assert (type(old_levels), old_levels) == (v1.FuelLevels, {v1.Fuel.DIESEL: 40})
    assert (type(new_levels), new_levels) == (v2.FuelLevels, {v2.Fuel.ELECTRIC: 80})
    assert await old_proxy.last_trip("v") == v1.Trip(
        "v", shared.Distance(12.5, shared.DistanceUnit.KILOMETRE))
    assert await new_proxy.last_trip("v") == v2.Trip(
        "v", shared.Distance(7.0, shared.DistanceUnit.MILE), v2.Fuel.ELECTRIC)
    assert await new_proxy.odometer("v") == v1.Odometer(123_456)
    assert (await old_proxy.vehicle_count.get(), await new_proxy.vehicle_count.get()) == (1, 2)
    # each version's broadcast reaches the proxies of its version only
    heard_old: asyncio.Queue[Any] = asyncio.Queue()
    heard_new: asyncio.Queue[Any] = asyncio.Queue()
    await old_proxy.moved.subscribe(heard_old.put_nowait)
    await new_proxy.moved.subscribe(heard_new.put_nowait)
    new.fire_moved(v2.Fix(1.0, 2.0, 5))
    old.fire_moved(v1.Fix(3.0, 4.0))
    got_new = await asyncio.wait_for(heard_new.get(), WAIT_S)
    got_old = await asyncio.wait_for(heard_old.get(), WAIT_S)
    assert (got_old, type(got_old), got_new, type(got_new)) == (
        v1.Fix(3.0, 4.0), v1.Fix, v2.Fix(1.0, 2.0, 5), v2.Fix)
    await asyncio.sleep(0.1)
    assert heard_old.empty() and heard_new.empty()

    if consumer_dialect != JOYNR:
        return
    # joynr's JSON: the versioned names of joynr's generators, the interface's name as it was
    replies = [*wire.json(MessageType.REPLY, recipient=old_proxy.participant_id),
               *wire.json(MessageType.REPLY, recipient=new_proxy.participant_id)]
    typed = {r["response"][0]["_typeName"] for r in replies
             if r.get("response") and isinstance(r["response"][0], dict)
             and "_typeName" in r["response"][0]}
    assert typed == {"joynr.fleet.v1.Fix", "joynr.fleet.v2.Fix", "joynr.fleet.v1.Trip",
                     "joynr.fleet.v2.Trip", "joynr.fleet.v1.TrackerTypes.FuelLevels",
                     "joynr.fleet.v2.TrackerTypes.FuelLevels",
                     "joynr.fleet.v1.Readings.Odometer"}
    errors = {r["error"]["error"]["_typeName"] for r in replies if r.get("error")}
    assert errors == {"joynr.fleet.v1.Tracker.LocateErrorEnum",
                      "joynr.fleet.v2.Tracker.LocateErrorEnum"}


YARD = """
package yard

typeCollection Plain {
	struct Slot {
		Int32 number
	}
}

typeCollection Marked {
	version { major 5 minor 0 }
	struct Badge {
		String text
	}
}

<** @description: #noVersionGeneration **>
interface Gate {
	version { major 3 minor 0 }
	method open {
		in {
			Plain.Slot slot
		}
		out {
			Pass pass
		}
		error {
			JAMMED
		}
	}
	struct Pass {
		String holder
	}
}

interface Crane {
	version { major 4 minor 0 }
	method lift {
		out {
			Load load
		}
	}
	struct Load {
		Int32 kilos
	}
}
"""


def wire_names(files: dict[str, str]) -> dict[str, list[str]]:
    return {path.split("/")[-1]: sorted(re.findall(r'@(?:joynr_name|interface)\(\s*"([^"]+)"',
                                                   text))
            for path, text in files.items() if path.endswith(".py") and "__init__" not in path}


def test_the_comment_mode_keeps_interfaces_marked_no_version_generation_unversioned(
        tmp_path: Path) -> None:
    """As joynr's JavaScript generator names them with -addVersionTo comment."""
    (tmp_path / "yard.fidl").write_text(YARD)
    model = parse_files([tmp_path / "yard.fidl"])
    assert wire_names(generate(model, "y", add_version_to="comment")) == {
        "yard.py": ["joynr.yard.Gate.OpenErrorEnum", "joynr.yard.Pass", "joynr.yard.Plain.Slot",
                    "yard/Gate"],
        "yard_v4.py": ["joynr.yard.v4.Load", "yard/Crane"],
        "yard_v5.py": ["joynr.yard.v5.Marked.Badge"],
    }
    assert wire_names(generate(model, "y", add_version_to="package")) == {
        "yard.py": ["joynr.yard.Plain.Slot"],
        "yard_v3.py": ["joynr.yard.v3.Gate.OpenErrorEnum", "joynr.yard.v3.Pass", "yard/Gate"],
        "yard_v4.py": ["joynr.yard.v4.Load", "yard/Crane"],
        "yard_v5.py": ["joynr.yard.v5.Marked.Badge"],
    }
    # an unversioned interface that uses a versioned type collection's type: joynr's
    # generators name that type without its version there and with it elsewhere
    (tmp_path / "yard.fidl").write_text(YARD.replace("Plain.Slot slot", "Marked.Badge slot"))
    model = parse_files([tmp_path / "yard.fidl"])
    with pytest.raises(GenerationError, match=r"interface Gate says #noVersionGeneration but "
                                              r"uses joynr\.yard\.v5\.Marked\.Badge"):
        generate(model, "y", add_version_to="comment")
    assert "yard_v3.py" in wire_names(generate(model, "y", add_version_to="package"))


def test_the_command_line_takes_the_mode(tmp_path: Path) -> None:
    def franca(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pyjoynr.franca", "-o", str(tmp_path), "--package", "cli",
             *args, str(FIDL)], capture_output=True, text=True, cwd=ROOT, timeout=120,
            check=False, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})

    done = franca("--add-version-to", "package")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "cli").glob("*.py")) == [
        "__init__.py", "fleet.py", "fleet_v1.py", "fleet_v2.py"]
    refused = franca()
    assert refused.returncode == 2 and "add_version_to \"package\"" in refused.stderr
    wrong = franca("--add-version-to", "interface")
    assert wrong.returncode == 2 and "invalid choice: 'interface'" in wrong.stderr
