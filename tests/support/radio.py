"""A test interface with every kind of member, and its provider."""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass

from runtime.dispatch import Provider
from runtime.errors import ApplicationError
from runtime.interface import attribute, broadcast, errors, interface, one_way


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
