"""joynr's JSON payloads beside the native msgpack payloads: encode + decode per second of a
typical request (a struct and two plain parameters) and its reply, in the same run.

Usage: .venv/bin/python bench/joynr_json.py [--count N] [--rounds R]

Each codec encodes and decodes the same project payloads ``N`` times per round, in alternating
rounds; the best round of each counts (this machine is noisy). The JSON side is typed (the
interface's schema, the reply's declared type), as a runtime speaking joynr's wire would use it.
"""

from __future__ import annotations

import argparse
import enum
import gc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime import joynr_json
from runtime.interface import interface, interface_def, joynr_name, to_wire
from runtime.payloads import Reply, Request, decode_payload


@joynr_name("vehicle.Country")
class Country(enum.Enum):
    AUSTRIA = "AUSTRIA"
    GERMANY = "GERMANY"


@joynr_name("vehicle.RadioStation")
@dataclass
class RadioStation:
    name: str
    country: Country
    frequency: float = 0.0
    tags: list[str] = field(default_factory=list)


@interface("vehicle/Radio")
class Radio:
    async def add_favorite_station(self, station: RadioStation, position: int,
                                   note: str) -> bool: ...


METHOD = interface_def(Radio).methods["add_favorite_station"]
SCHEMA = joynr_json.JoynrSchema(interface_def(Radio))
REQUEST = Request("4a1f5c2e-9b7d-4e0a-8c3b-2d6f1e0a9b7c", METHOD.name,
                  [to_wire(RadioStation("FM4", Country.AUSTRIA, 103.8, ["alt", "news"])), 3,
                   "from the kitchen"], list(METHOD.param_datatypes))
REPLY = Reply(REQUEST.request_reply_id, [True])
TYPES = joynr_json.reply_types(METHOD)


def native(count: int) -> None:
    for _ in range(count):
        decode_payload(Request, REQUEST.to_body())
        decode_payload(Reply, REPLY.to_body())


def joynr(count: int) -> None:
    encode, decode = joynr_json.encode, joynr_json.decode
    for _ in range(count):
        decode(Request, encode(REQUEST, schema=SCHEMA), schema=SCHEMA)
        decode(Reply, encode(REPLY, types=TYPES), types=TYPES)


def timed(fn: Callable[[int], None], count: int) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        fn(count)
        return time.perf_counter() - start
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    assert joynr_json.decode(Request, joynr_json.encode(REQUEST, schema=SCHEMA),
                             schema=SCHEMA) == REQUEST
    best = {"msgpack (native)": float("inf"), "joynr JSON": float("inf")}
    for _ in range(args.rounds):
        best["msgpack (native)"] = min(best["msgpack (native)"], timed(native, args.count))
        best["joynr JSON"] = min(best["joynr JSON"], timed(joynr, args.count))
    print(f"request + reply, encode + decode, {args.count:,} per round, best of {args.rounds}")
    print(f"  request JSON: {len(joynr_json.encode(REQUEST, schema=SCHEMA))} bytes, "
          f"msgpack: {len(REQUEST.to_body())} bytes")
    for name, seconds in best.items():
        print(f"  {name:18} {args.count / seconds:>10,.0f} round trips/s "
              f"({seconds / args.count * 1e6:6.1f} us each)")
    print(f"  ratio JSON / msgpack: {best['joynr JSON'] / best['msgpack (native)']:.1f}x")


if __name__ == "__main__":
    main()
