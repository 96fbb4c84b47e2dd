"""Example consumer process: finds the radio, calls it, listens to it.

    .venv/bin/python -m examples.radio.consumer --url ws://127.0.0.1:4242/ --domain car

Subscribes to the broadcasts of one country, adds a favorite, reads and subscribes to the
current station, shuffles (a modelled error when there is too little to shuffle), sends a
one-way message and waits for the first broadcast (at most ``--listen`` seconds). Prints what
happens; exits 0 when everything worked, 1 with a sentence saying why when the cluster
controller or a radio cannot be found. It calls the radio through the typed proxy generated
from radio.fidl (the package ``examples.radio.generated``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

import uvloop

from examples.radio.generated import Country, RadioStation, build_radio_proxy
from pyjoynr import ApplicationError, DiscoveryError, DiscoveryQos, connect


async def main(url: str, domain: str, listen_s: float, country: str,
               discovery_timeout_s: float = 20.0) -> int:
    try:
        return await consume(url, domain, listen_s, country, discovery_timeout_s)
    except ConnectionError as exc:
        print(f"no cluster controller at {url}: {exc}. Is it running "
              "(bin/cluster-controller)?", file=sys.stderr)
    except DiscoveryError as exc:
        print(f"no radio found in domain {domain!r} within {discovery_timeout_s:g} s. Is the "
              f"provider running (python -m examples.radio.provider --domain {domain})? "
              f"({exc})", file=sys.stderr)
    return 1


async def consume(url: str, domain: str, listen_s: float, country: str,
                  discovery_timeout_s: float) -> int:
    async with connect(url) as runtime:
        radio = await build_radio_proxy(runtime, domain, ttl_ms=5_000, discovery_qos=DiscoveryQos(
            discovery_timeout_ms=int(discovery_timeout_s * 1000)))
        print(f"found the radio: provider {radio.provider_participant_id}")
        # subscribe first, so that no announcement made while we call the radio is missed
        heard: list[str] = []
        first_heard = asyncio.Event()

        def discovered(station: RadioStation) -> None:
            heard.append(station.name)
            first_heard.set()
            print(f"new station in {station.country.name}: {station.name}")

        await radio.new_station_discovered.subscribe(discovered, partitions=[country])
        added = await radio.add_favorite_station(RadioStation("Oe1", Country.AUSTRIA, False))
        print(f"add_favorite_station(Oe1) -> {added}")
        current = await radio.current_station.get()
        print(f"current station: {current.name}")
        changes: list[str] = []
        await radio.current_station.subscribe(lambda s: changes.append(s.name))
        try:
            await radio.shuffle_stations()
            print("shuffled")
        except ApplicationError as exc:
            print(f"shuffle refused: {exc.error}")
        await radio.log_message("hello from the consumer")
        with contextlib.suppress(TimeoutError):  # the radio announces a station every second
            await asyncio.wait_for(first_heard.wait(), listen_s)
        print(f"station changes seen: {changes}")
        print(f"stations heard: {len(heard)}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", default="ws://127.0.0.1:4242/")
    parser.add_argument("--domain", default="car")
    parser.add_argument("--listen", type=float, default=10.0,
                        help="seconds to wait at most for the first broadcast")
    parser.add_argument("--country", default="AUSTRIA", choices=[c.name for c in Country])
    parser.add_argument("--discovery-timeout", type=float, default=20.0,
                        help="seconds to look for the radio")
    args = parser.parse_args()
    sys.exit(uvloop.run(main(args.url, args.domain, args.listen, args.country,
                             args.discovery_timeout)))
