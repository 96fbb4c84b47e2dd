"""joynr's JSON payloads beside the native msgpack payloads: encode + decode per second of a
typical request (a struct and two plain parameters) and its reply, in the same run.

Usage: .venv/bin/python bench/joynr_json.py [--count N] [--rounds R]

Then the per-call figures of the bodies a runtime writes and reads most: a one-way
``push(data: str)`` (a 200-char string, typed by the schema) and the reply of
``echo(data: str) -> str`` (typed by its declared type), encode and decode each, JSON beside
msgpack, best of the rounds.

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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyjoynr.runtime import joynr_json
from pyjoynr.runtime.interface import interface, interface_def, joynr_name, one_way, to_wire
from pyjoynr.runtime.payloads import OneWayRequest, Payload, Reply, Request, decode_payload


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
    async def add_favorite_station(  # type: ignore[empty-body]
            self, station: RadioStation, position: int, note: str) -> bool: ...


METHOD = interface_def(Radio).methods["add_favorite_station"]
SCHEMA = joynr_json.JoynrSchema(interface_def(Radio))
REQUEST = Request("4a1f5c2e-9b7d-4e0a-8c3b-2d6f1e0a9b7c", METHOD.name,
                  [to_wire(RadioStation("FM4", Country.AUSTRIA, 103.8, ["alt", "news"])), 3,
                   "from the kitchen"], list(METHOD.param_datatypes))
REPLY = Reply(REQUEST.request_reply_id, [True])
TYPES = joynr_json.reply_types(METHOD)


@interface("bench/Sink")
class Sink:
    @one_way
    async def push(self, data: str) -> None: ...

    async def echo(self, data: str) -> str: ...  # type: ignore[empty-body]


SINK_SCHEMA = joynr_json.JoynrSchema(interface_def(Sink))
PUSH = OneWayRequest("push", ["x" * 200],
                     list(interface_def(Sink).methods["push"].param_datatypes))
ECHO_REPLY = Reply("0" * 32, ["x" * 200])
ECHO_TYPES = joynr_json.reply_types(interface_def(Sink).methods["echo"])


def per_call(payload: Payload, count: int, rounds: int, **typing_: Any) -> dict[str, float]:
    """Best microseconds per call of encode and decode, JSON and msgpack."""
    cls = type(payload)
    json_body, msgpack_body = joynr_json.encode(payload, **typing_), payload.to_body()
    assert joynr_json.decode(cls, json_body, **typing_) == payload
    calls: dict[str, Callable[[], object]] = {
        "JSON encode": lambda: joynr_json.encode(payload, **typing_),
        "msgpack encode": payload.to_body,
        "JSON decode": lambda: joynr_json.decode(cls, json_body, **typing_),
        "msgpack decode": lambda: decode_payload(cls, msgpack_body),
    }
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(rounds):
        for name, call in calls.items():
            best[name] = min(best[name], timed(_repeating(call), count))
    return {name: seconds / count * 1e6 for name, seconds in best.items()}


def _repeating(call: Callable[[], object]) -> Callable[[int], None]:
    def repeat(count: int) -> None:
        for _ in range(count):
            call()
    return repeat


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
    for label, payload, typing_ in (
            ("one-way push(data: str), 200 chars", PUSH, {"schema": SINK_SCHEMA}),
            ("reply of echo(data: str) -> str, 200 chars", ECHO_REPLY, {"types": ECHO_TYPES})):
        figures = per_call(payload, args.count, args.rounds, **typing_)
        print(f"{label}: us per call, best of {args.rounds}")
        for step in ("encode", "decode"):
            print(f"  {step}  JSON {figures[f'JSON {step}']:5.2f}   "
                  f"msgpack {figures[f'msgpack {step}']:5.2f}   "
                  f"ratio {figures[f'JSON {step}'] / figures[f'msgpack {step}']:4.1f}x")


if __name__ == "__main__":
    main()
