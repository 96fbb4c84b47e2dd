"""Reading websocket frames: the connections' own reader beside websockets' parser alone.

Usage: .venv/bin/python bench/websocket_frame_read.py [--payload BYTES] [--frames N]
                                                      [--reads R] [--runs K]

Both are fed the same bytes in one process, without sockets: ``--frames`` binary frames of a
``--payload``-byte message per read (1: a read as request/reply brings it, one frame; 300: a
read of the one-way path), on a server's side (the client's frames masked, unmasked with
websockets' C ``apply_mask`` by both) and on a client's (unmasked). Project: a
``FrameReader`` (transports/websocket/framing.py) over a websockets protocol object, ``feed``
per read. Raw: websockets' protocol object alone, ``receive_data`` and ``events_received`` per
read (what a connection did before the reader). Printed per case and run: microseconds per
frame of each and the ratio raw/project (how many times faster the own reader is); the runs
alternate the two. Both must read every frame, or the script says WRONG.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from websockets.protocol import CLIENT, OPEN, SERVER, Protocol

from pyjoynr.transports.websocket.framing import (
    FrameReader,
    MaskSource,
    binary_frames,
)


def per_frame_us(feed: Any, data: bytes, reads: int, frames: int) -> float:
    start = time.perf_counter()
    for _ in range(reads):
        feed(data)
    return (time.perf_counter() - start) / (reads * frames) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payload", type=int, default=374, help="message size in bytes")
    parser.add_argument("--frames", type=int, nargs="+", default=[1, 300],
                        help="frames per read (one case each)")
    parser.add_argument("--reads", type=int, default=30_000, help="reads of 1 frame per run "
                        "(fewer for more frames per read: the same number of frames)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each (alternating)")
    args = parser.parse_args()
    payload = bytes(range(256)) * (args.payload // 256) + bytes(args.payload % 256)
    print(f"websocket frame read: {args.payload} B messages, {args.reads:,} frames per run "
          f"and case, {args.runs} alternating runs; Python {sys.version.split()[0]}")
    wrong = False
    for side, name in ((SERVER, "server (masked frames)"), (CLIENT, "client")):
        for frames in args.frames:
            data = b"".join(binary_frames([payload] * frames,
                                          MaskSource() if side is SERVER else None))
            reads = max(1, args.reads // frames)
            own_protocol = Protocol(side, state=OPEN, max_size=1 << 20)
            reader = FrameReader(own_protocol)
            raw_protocol = Protocol(side, state=OPEN, max_size=1 << 20)

            def raw_feed(chunk: bytes, protocol: Protocol = raw_protocol) -> list[Any]:
                protocol.receive_data(chunk)
                return protocol.events_received()

            # both read every frame: checked once, outside the timing
            if (reader.feed(data) != [payload] * frames
                    or [bytes(e.data) for e in raw_feed(data)] != [payload] * frames):
                print(f"  {name}, {frames} per read: WRONG")
                wrong = True
                continue
            for run in range(1, args.runs + 1):
                own = per_frame_us(reader.feed, data, reads, frames)
                raw = per_frame_us(raw_feed, data, reads, frames)
                print(f"  {name:22} {frames:4} frame(s) per read, run {run}: own reader "
                      f"{own:6.2f} us   websockets {raw:6.2f} us per frame   "
                      f"ratio {raw / own:5.2f}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
