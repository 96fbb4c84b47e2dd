"""A test interface with every kind of member, and its provider."""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass

from pyjoynr.libjoynr import (
    ApplicationError,
    Provider,
    attribute,
    broadcast,
    errors,
    interface,
    one_way,
)


class Country(enum.Enum):
    AUSTRIA = "AUSTRIA"
    GERMANY = "GERMANY"


class FavoriteError(enum.Enum):
    NOT_FOUND = "NOT_FOUND"
    FULL = "FULL"


@dataclass
class Station:
    name: str
    country: Country
    frequency: float = 0.0


@interface("test/Radio", version=(1, 2))
class Radio:
    current_station = attribute(str)
    volume = attribute(int, readonly=True)
    new_station = broadcast(station=Station)

    async def add_favorite(self, station: Station) -> bool: ...

    @errors(FavoriteError)
    async def remove_favorite(self, name: str) -> None: ...

    async def favorites(self) -> list[Station]: ...

    async def crash(self) -> None: ...

    async def slow(self, seconds: float) -> str: ...

    @one_way
    async def note(self, text: str) -> None: ...

    async def bounded(self, seconds: float) -> str: ...

    @one_way
    async def bounded_note(self, text: str) -> None: ...


class RadioProvider(Provider, interface=Radio):
    def __init__(self) -> None:
        super().__init__(current_station="FM4", volume=7)
        self.stations: list[Station] = []
        self.notes: list[str] = []
        self.noted = asyncio.Event()

    async def add_favorite(self, station: Station) -> bool:
        if any(s.name == station.name for s in self.stations):
            return False
        self.stations.append(station)
        return True

    async def remove_favorite(self, name: str) -> None:
        before = len(self.stations)
        self.stations = [s for s in self.stations if s.name != name]
        if len(self.stations) == before:
            raise ApplicationError(FavoriteError.NOT_FOUND.name, f"{name} is no favorite")

    async def favorites(self) -> list[Station]:
        return list(self.stations)

    async def crash(self) -> None:
        raise RuntimeError("the tuner broke")

    async def slow(self, seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "done"

    async def note(self, text: str) -> None:
        self.notes.append(text)
        self.noted.set()

    async def bounded(self, seconds: float) -> str:
        return await in_a_task(seconds)

    async def bounded_note(self, text: str) -> None:
        try:
            outcome = await in_a_task(0.05)
        except Exception as exc:  # a one-way call has no answer: keep what happened
            outcome = f"failed: {type(exc).__name__}: {exc}"
        await self.note(f"{text}: {outcome}")


async def in_a_task(seconds: float) -> str:
    """What asyncio code needs of a task: ``current_task()``, and ``asyncio.timeout`` both
    before the first wait and around one that it ends."""
    async with asyncio.timeout(seconds):  # entered before anything waits
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("no current task")
        await asyncio.sleep(0)
    try:
        async with asyncio.timeout(seconds):
            await asyncio.sleep(60)
    except TimeoutError:
        if asyncio.current_task() is not task:
            raise RuntimeError("the current task changed during the call") from None
        return "in a task, timed out"
    return "the timeout did not fire"
