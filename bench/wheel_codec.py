"""The SMRF codec of an installed wheel beside the checkout's, in one run.

Usage: .venv/bin/python bench/wheel_codec.py [--wheel WHEEL] [--rounds R] [--seconds S]

Builds the project's wheel (``pip wheel``, as a user would; ``--wheel`` takes one built
before, e.g. a pure wheel), installs it with msgpack (all the codec imports) into a fresh
virtual environment outside the checkout, and times SMRF encode and decode of a request
(~200 B JSON body) in that environment and in the checkout (its .venv, the codec as
bin/build-compiled left it), in alternating rounds of about ``S`` seconds, each in a process of
its own; the best round of each counts. Printed: the form each one runs (runtime.smrf.FORM),
microseconds per operation and the ratio wheel / checkout (time).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIP = ["--disable-pip-version-check", "--quiet"]

#: run by each environment's Python: one round, its best rates as JSON
WORKER = r"""
import json, sys, time
from pyjoynr.runtime import smrf
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.messages import Message, MessageType

seconds = float(sys.argv[1])
body = (b'{"_typeName":"joynr.Request","requestReplyId":"4f1c2b7e-9a51-4c1d-8f0e-2f3b7d6a1c90",'
        b'"methodName":"setTemperature","paramDatatypes":["Integer","String"],'
        b'"params":[21,"living room"]}')
message = Message(type=MessageType.REQUEST, sender="8f0e2f3b-proxy-participant",
                  recipient="1c90a7e2-provider-participant", expiry_date_ms=1_800_000_000_000,
                  body=body, id="5d2e9f4a-0b7c-4e1f-9a3d-6c8b2e1f0a57",
                  reply_to=MqttAddress("joynrdefaultgbid", "joynr/cc/6a1c90a7e2"),
                  custom_headers={"z4": "4f1c2b7e-9a51-4c1d-8f0e-2f3b7d6a1c90"})
frame = smrf.encode(message)

def rate(operation):
    count, start = 0, time.perf_counter()
    while True:
        for _ in range(200):
            operation()
        count += 200
        now = time.perf_counter()
        if now - start >= seconds:
            return count / (now - start)

print(json.dumps({"form": "compiled" if smrf.FORM.compiled else f"plain ({smrf.FORM.reason})",
                  "file": sys.modules["pyjoynr.runtime.smrf_core"].__file__,
                  "encode": rate(lambda: smrf.encode(message)),
                  "decode": rate(lambda: smrf.decode(frame))}))
"""


def run(args: list[str], cwd: Path, **env: str) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", **env})
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="a wheel built before (default: build one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wheel-codec-") as temp:
        base = Path(temp)
        wheel = args.wheel.resolve() if args.wheel else None
        if wheel is None:
            started = time.perf_counter()
            run([sys.executable, "-m", "pip", "wheel", *PIP, "--no-deps", "-w",
                 str(base / "dist"), str(ROOT)], cwd=base)
            (wheel,) = (base / "dist").glob("pyjoynr-*.whl")
            print(f"built {wheel.name} in {time.perf_counter() - started:.1f} s")
        venv = base / "venv"
        run([str(Path(sys.base_prefix) / "bin" / "python3"), "-m", "venv", str(venv)], cwd=base)
        run([str(venv / "bin" / "python"), "-m", "pip", "install", *PIP, "--no-deps", str(wheel),
             "msgpack"], cwd=base)
        pythons = {"checkout": ([sys.executable], ROOT, {"PYTHONPATH": str(ROOT)}),
                   "wheel": ([str(venv / "bin" / "python")], base, {})}
        best: dict[str, dict[str, float]] = {name: {"encode": 0.0, "decode": 0.0}
                                             for name in pythons}
        forms: dict[str, str] = {}
        for _ in range(args.rounds):
            for name, (python, cwd, env) in pythons.items():
                result = json.loads(run([*python, "-c", WORKER, str(args.seconds)], cwd, **env))
                forms[name] = f"{result['form']}: {result['file']}"
                for kind in ("encode", "decode"):
                    best[name][kind] = max(best[name][kind], result[kind])
    print(f"{time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, best of {args.rounds} rounds, {wheel.name}")
    for name, form in forms.items():
        print(f"  {name:8} {form}")
    for kind in ("encode", "decode"):
        us = {name: 1e6 / best[name][kind] for name in pythons}
        print(f"  SMRF {kind}: checkout {us['checkout']:6.2f} us, wheel {us['wheel']:6.2f} us, "
              f"wheel/checkout {us['wheel'] / us['checkout']:.2f}x")


if __name__ == "__main__":
    main()
