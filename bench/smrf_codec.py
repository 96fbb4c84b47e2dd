"""SMRF codec (runtime/smrf_core.py) throughput beside the msgpack codec (runtime/messages.py).

Usage: .venv/bin/python bench/smrf_codec.py [--rounds R] [--seconds S]

For each message shape, encode and decode are timed for both codecs in the same run, in
alternating rounds of about ``S`` seconds; the best round of each counts (this machine is
noisy). The SMRF codec runs in both its forms (runtime/compiled.py): as loaded (compiled with
mypyc when bin/build-compiled built it) and its plain Python source. Printed: operations per
second, microseconds per operation and the ratio SMRF / msgpack (time) of each form.
Decoding includes every check either codec makes (the SMRF reader verifies each offset,
vtable, vector and string of the FlatBuffer).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyjoynr.runtime import compiled, smrf
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame

REQUEST_BODY = (
    b'{"_typeName":"joynr.Request","requestReplyId":"4f1c2b7e-9a51-4c1d-8f0e-2f3b7d6a1c90",'
    b'"methodName":"setTemperature","paramDatatypes":["Integer","String"],'
    b'"params":[21,"living room"]}'
)


def shapes() -> dict[str, Message]:
    base = Message(
        type=MessageType.REQUEST, sender="8f0e2f3b-proxy-participant",
        recipient="1c90a7e2-provider-participant", expiry_date_ms=1_800_000_000_000,
        body=REQUEST_BODY, id="5d2e9f4a-0b7c-4e1f-9a3d-6c8b2e1f0a57",
        reply_to=MqttAddress("joynrdefaultgbid", "joynr/cc/6a1c90a7e2"),
        custom_headers={"z4": "4f1c2b7e-9a51-4c1d-8f0e-2f3b7d6a1c90"},
    )
    large = Message(**{**{f: getattr(base, f) for f in ("type", "sender", "recipient",
                                                         "expiry_date_ms", "id", "reply_to",
                                                         "custom_headers")},
                       "body": REQUEST_BODY * 60})
    return {"request (~200 B body)": base, "request (~12 KB JSON body)": large}


def rate(operation: Callable[[], object], seconds: float) -> float:
    """Operations per second over about ``seconds``."""
    count, batch = 0, 200
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(batch):
            operation()
        count += batch
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.4)
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, best of {args.rounds} rounds")
    plain = compiled.load_source("pyjoynr.runtime.smrf_core")
    form = "compiled" if smrf.FORM.compiled else f"plain Python ({smrf.FORM.reason})"
    print(f"SMRF codec as loaded: {form}")
    for name, message in shapes().items():
        msgpack_frame = encode_frame(message)
        smrf_frame = smrf.encode(message)
        assert smrf.decode(smrf_frame).body == message.body
        assert plain.encode(message) == smrf_frame
        assert decode_frame(msgpack_frame).body == message.body
        operations: dict[str, Callable[[], object]] = {
            "msgpack encode": lambda m=message: encode_frame(m),
            "smrf encode": lambda m=message: smrf.encode(m),
            "plain encode": lambda m=message: plain.encode(m),
            "msgpack decode": lambda f=msgpack_frame: decode_frame(f),
            "smrf decode": lambda f=smrf_frame: smrf.decode(f),
            "plain decode": lambda f=smrf_frame: plain.decode(f),
        }
        best = dict.fromkeys(operations, 0.0)
        for _ in range(args.rounds):
            for label, operation in operations.items():
                best[label] = max(best[label], rate(operation, args.seconds))
        compressed = " (body compressed)" if smrf.decode_smrf(smrf_frame).compressed else ""
        print(f"\n{name}: msgpack frame {len(msgpack_frame)} B, SMRF frame "
              f"{len(smrf_frame)} B{compressed}")
        for label, per_second in best.items():
            shown = label.replace("smrf", "smrf (as loaded)").replace("plain",
                                                                      "smrf (plain Python)")
            print(f"  {shown:28} {per_second:12,.0f}/s  {1e6 / per_second:8.2f} us")
        for kind in ("encode", "decode"):
            print(f"  smrf/msgpack {kind}: as loaded "
                  f"{best[f'msgpack {kind}'] / best[f'smrf {kind}']:.1f}x, plain Python "
                  f"{best[f'msgpack {kind}'] / best[f'plain {kind}']:.1f}x")

if __name__ == "__main__":
    main()
