"""Example provider process: a radio registered with the cluster controller.

    .venv/bin/python -m examples.radio.provider --url ws://127.0.0.1:4242/ --domain car

Every second (``--interval``) it announces a newly discovered station in each country (a
broadcast, partitioned by country: a consumer hears the countries it subscribed to) and runs
until Ctrl-C. The radio implements the provider base
generated from radio.fidl (the package ``examples.radio.generated``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import random
import signal
import sys

import uvloop

from examples.radio.generated import Country, RadioProviderBase, RadioStation, ShuffleError
from pyjoynr import ApplicationError, ProviderQos, ProviderScope, connect

log = logging.getLogger("radio-provider")


class RadioProvider(RadioProviderBase):
    def __init__(self) -> None:
        first = RadioStation("FM4", Country.AUSTRIA, True)
        super().__init__(current_station=first, volume=50)
        self.stations = [first]

    async def add_favorite_station(self, station: RadioStation) -> bool:
        if any(s.name == station.name for s in self.stations):
            return False
        self.stations.append(station)
        log.info("favorite added: %s", station.name)
        return True

    async def shuffle_stations(self) -> None:
        if len(self.stations) < 2:
            raise ApplicationError(ShuffleError.NO_STATIONS.name, "need two stations to shuffle")
        random.shuffle(self.stations)
        self.set_attribute("current_station", self.stations[0])  # publishes on-change

    async def log_message(self, text: str) -> None:
        log.info("consumer says: %s", text)

    async def describe_station(self, name: str) -> str:
        for station in self.stations:
            if station.name == name:
                return f"{name} ({station.country.name.title()})"
        return name

    async def station_heard(self, station: RadioStation) -> None:
        log.info("consumer heard: %s", station.name)


async def main(url: str, domain: str, interval_s: float) -> None:
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    async with connect(url) as runtime:
        provider = RadioProvider()
        # GLOBAL: registered with the GCD too, so consumers on other cluster controllers find it
        pid = await runtime.register_provider(domain, provider,
                                              qos=ProviderQos(scope=ProviderScope.GLOBAL))
        log.info("radio provider %s registered in domain %r; Ctrl-C to stop", pid, domain)
        n = 0
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval_s)
            if stop.is_set():
                break
            n += 1
            for country in Country:
                station = RadioStation(f"Station {n}", country, False)
                provider.fire_new_station_discovered(station, partitions=[country.name])
            log.info("announced Station %d in each country", n)
    log.info("radio provider stopped")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="ws://127.0.0.1:4242/")
    parser.add_argument("--domain", default="car")
    parser.add_argument("--interval", type=float, default=1.0,
                        help="seconds between announcements")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        uvloop.run(main(args.url, args.domain, args.interval))
    except ConnectionError as exc:
        sys.stderr.write(f"no cluster controller at {args.url}: {exc}. Is it running "
                         "(bin/cluster-controller)?\n")
        sys.exit(1)
