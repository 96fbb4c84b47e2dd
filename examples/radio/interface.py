"""The example's interface: a car radio."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from libjoynr import attribute, broadcast, errors, interface, one_way


class Country(enum.Enum):
    AUSTRIA = "AUSTRIA"
    GERMANY = "GERMANY"
    ITALY = "ITALY"


class ShuffleError(enum.Enum):
    NO_STATIONS = "NO_STATIONS"


@dataclass
class RadioStation:
    name: str
    country: Country
    traffic_service: bool = False


@interface("example/Radio", version=(1, 0))
class Radio:
    current_station = attribute(RadioStation, readonly=True)
    new_station_discovered = broadcast(station=RadioStation)

    async def add_favorite_station(self, station: RadioStation) -> bool: ...

    @errors(ShuffleError)
    async def shuffle_stations(self) -> None: ...

    @one_way
    async def log_message(self, text: str) -> None: ...
