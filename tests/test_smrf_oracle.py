"""runtime.smrf against an independent implementation: the smrf npm package 0.3.3 (the one
joynr's JavaScript runtime uses), driven through one long-lived node process
(tests/oracles/smrf_driver.js, JSON lines). Frames made here must decode there and frames made
there must decode here, for generated messages, compressed or not, signed or not.

bin/test installs node and the package (bin/_bootstrap.sh); when either is missing this test
fails and says so."""

from __future__ import annotations

import base64
import dataclasses
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.messages import Effort, Message, MessageType
from pyjoynr.runtime.smrf import SmrfFrame, decode, decode_smrf, encode, encode_smrf

ORACLES = Path(__file__).parent / "oracles"
DRIVER = ORACLES / "smrf_driver.js"
PACKAGE = ORACLES / "node_modules" / "smrf" / "package.json"
#: JavaScript numbers are exact up to 2^53 - 1; the package reads ttlMs as a double
JS_SAFE_INTEGER = 2**53 - 1


class Oracle:
    """The node process: one JSON request per line, one answer per line."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        line = stdout.readline()
        assert line, f"the node driver exited (code {self.process.poll()})"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def encode(self, frame: SmrfFrame) -> bytes:
        answer = self.ask({"op": "encode", "message": {
            "sender": frame.sender, "recipient": frame.recipient, "ttlMs": frame.ttl_ms,
            "isTtlAbsolute": frame.ttl_absolute, "isCompressed": frame.compressed,
            "headers": [list(pair) for pair in frame.headers],
            "body": base64.b64encode(frame.body).decode(),
            "signature": None if frame.custom_signature is None
            else base64.b64encode(frame.custom_signature).decode(),
        }})
        assert answer["ok"], answer
        return base64.b64decode(answer["frame"])

    def decode(self, raw: bytes) -> dict[str, Any]:
        answer = self.ask({"op": "decode", "frame": base64.b64encode(raw).decode()})
        assert answer["ok"], f"the smrf package refused our frame: {answer['error']}"
        message: dict[str, Any] = answer["message"]
        message["body"] = base64.b64decode(message["body"])
        if message["signature"] is not None:
            message["signature"] = base64.b64decode(message["signature"])
        message["headers"] = dict(message["headers"])
        return message


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: run bin/test (bin/_bootstrap.sh installs nodejs)")
    if not PACKAGE.is_file():
        pytest.fail(f"the smrf npm package is missing ({PACKAGE}): run bin/test, which runs "
                    "npm ci in tests/oracles")
    process = subprocess.Popen([node, str(DRIVER)], cwd=ORACLES, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, encoding="utf-8")
    try:
        oracle = Oracle(process)
        assert oracle.ask({"op": "version"}) == {"ok": True, "version": "0.3.3"}
        yield oracle
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        assert process.stdout is not None
        process.stdout.close()


# what the package can carry: ttl as an exact double, header keys of a JS object
texts = st.text(max_size=30)
keys = texts.filter(lambda key: key != "__proto__")
frames = st.builds(
    SmrfFrame,
    sender=texts, recipient=texts,
    ttl_ms=st.integers(0, JS_SAFE_INTEGER),
    ttl_absolute=st.booleans(),
    headers=st.dictionaries(keys, texts, max_size=6).map(lambda d: tuple(d.items())),
    body=st.binary(max_size=2000) | st.text(max_size=300).map(str.encode),
    compressed=st.booleans(),
    custom_signature=st.none() | st.binary(max_size=80),
)
ids = st.text(min_size=1, max_size=40)
messages = st.builds(
    Message,
    type=st.sampled_from(list(MessageType)),
    sender=ids, recipient=ids, id=ids,
    expiry_date_ms=st.integers(0, JS_SAFE_INTEGER),
    body=st.binary(max_size=6000) | st.text(max_size=3000).map(str.encode),
    reply_to=st.sampled_from([None, MqttAddress("joynrdefaultgbid", "joynr/cc/1")]),
    effort=st.sampled_from(list(Effort)),
    custom_headers=st.dictionaries(keys, texts, max_size=5),
    compressed=st.booleans(),
    custom_signature=st.none() | st.binary(max_size=80),
)
ORACLE_SETTINGS = settings(max_examples=200, deadline=None,
                           suppress_health_check=[HealthCheck.function_scoped_fixture])


@ORACLE_SETTINGS
@given(frame=frames)
def test_our_frames_decode_in_the_smrf_package(oracle: Oracle, frame: SmrfFrame) -> None:
    seen = oracle.decode(encode_smrf(frame))
    assert seen == {
        "sender": frame.sender, "recipient": frame.recipient, "ttlMs": frame.ttl_ms,
        "isTtlAbsolute": frame.ttl_absolute, "isCompressed": frame.compressed,
        "headers": dict(frame.headers), "body": frame.body,
        # the package reports no signature for an empty one
        "signature": frame.custom_signature or None,
    }


@ORACLE_SETTINGS
@given(frame=frames)
def test_frames_of_the_smrf_package_decode_here(oracle: Oracle, frame: SmrfFrame) -> None:
    decoded = decode_smrf(oracle.encode(frame))
    # a JS object puts integer-like keys first: the order of the headers is the package's
    assert dict(decoded.headers) == dict(frame.headers)
    assert dataclasses.replace(decoded, headers=()) == dataclasses.replace(frame, headers=())


@ORACLE_SETTINGS
@given(message=messages)
def test_messages_cross_both_ways(oracle: Oracle, message: Message) -> None:
    seen = oracle.decode(encode(message))
    headers = dict(seen["headers"])
    assert headers.pop("t") == message.type.value
    assert headers.pop("id") == message.id
    reply_to = headers.pop("re", None)
    assert reply_to == (None if message.reply_to is None
                        else json.dumps(message.reply_to.to_dict(), separators=(",", ":")))
    assert headers.pop("ef", "NORMAL") == message.effort.value
    assert headers == {f"c-{key}": value for key, value in message.custom_headers.items()}
    assert (seen["sender"], seen["recipient"], seen["ttlMs"], seen["isTtlAbsolute"],
            seen["body"], seen["signature"]) == (
        message.sender, message.recipient, message.expiry_date_ms, True, message.body,
        message.custom_signature or None)
    # and back: the package writes what it read, this codec makes the same message of it
    again = oracle.encode(SmrfFrame(
        seen["sender"], seen["recipient"], seen["ttlMs"], True,
        tuple(seen["headers"].items()), seen["body"], seen["isCompressed"],
        message.custom_signature))
    assert decode(again) == dataclasses.replace(message, compressed=seen["isCompressed"])
