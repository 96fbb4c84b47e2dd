"""The frame dialects a connection between a libjoynr runtime and its cluster controller speaks,
whatever carries it (websocket messages, Unix domain socket frames): the init frames and the
message frame codecs.

A connection's first frame is an init frame (at most 1 KiB, a client id of 1..256
characters); every later frame either way is one joynr message. Two dialects, told by the init
frame (:func:`decode_any_init`); a connection keeps its dialect for every frame either way:

- ``native``: the init frame is a msgpack map ``{"v": 1, "t": "init", "id": <client id>}``,
  message frames are the msgpack frames of runtime.messages;
- ``joynr`` (joynr's Java, C++ and JavaScript runtimes): the init frame is the JSON of the
  runtime's client address, ``{"_typeName":"joynr.system.RoutingTypes.
  WebSocketClientAddress","id":"<client id>"}`` in UTF-8 over websocket (``UdsClientAddress``
  over a Unix domain socket), told by its exact first bytes (:func:`joynr_init_prefix`:
  ``_typeName`` first, no whitespace, as joynr's runtimes write it); message frames are SMRF
  frames (runtime.smrf).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, Final

import msgpack

from pyjoynr.runtime import smrf
from pyjoynr.runtime.messages import JOYNR, NATIVE, FrameError, Message, decode_frame, encode_frame

__all__ = [
    "INIT_TYPE",
    "JOYNR_INIT_PREFIX",
    "MAX_INIT_BYTES",
    "UDS_CLIENT_ADDRESS_TYPE",
    "WEBSOCKET_CLIENT_ADDRESS_TYPE",
    "Decoder",
    "Encoder",
    "decode_any_init",
    "decode_init",
    "decode_joynr_init",
    "encode_init",
    "encode_joynr_init",
    "frame_decoder",
    "frame_encoder",
    "joynr_init_prefix",
]

INIT_TYPE: Final = "init"
MAX_CLIENT_ID_LENGTH: Final = 256
MAX_INIT_BYTES: Final = 1024
#: the address type of joynr's init frame over websocket
WEBSOCKET_CLIENT_ADDRESS_TYPE: Final = "joynr.system.RoutingTypes.WebSocketClientAddress"
#: the address type of joynr's init frame over a Unix domain socket
UDS_CLIENT_ADDRESS_TYPE: Final = "joynr.system.RoutingTypes.UdsClientAddress"


def joynr_init_prefix(type_name: str) -> bytes:
    """How joynr's init frame of the client address type ``type_name`` starts, byte for byte
    (joynr's cluster controllers test this prefix)."""
    return b'{"_typeName":"' + type_name.encode() + b'"'


#: how joynr's websocket init frame starts
JOYNR_INIT_PREFIX: Final = joynr_init_prefix(WEBSOCKET_CLIENT_ADDRESS_TYPE)


def encode_init(client_id: str) -> bytes:
    """The first frame of a libjoynr runtime: ``{"v": 1, "t": "init", "id": <client id>}``."""
    return msgpack.packb({"v": 1, "t": INIT_TYPE, "id": client_id})


def decode_init(frame: Any) -> str:
    """The client id of an init frame; raises FrameError with the reason."""
    if not isinstance(frame, bytes):
        raise FrameError("bad-init", "the first frame must be a binary init frame")
    if len(frame) > MAX_INIT_BYTES:
        raise FrameError("bad-init", "init frame too large")
    try:
        data = msgpack.unpackb(frame, raw=False, strict_map_key=True)
    except (ValueError, msgpack.UnpackException) as exc:
        raise FrameError("bad-init", f"init frame is not msgpack: {exc}") from None
    if not isinstance(data, dict) or data.get("t") != INIT_TYPE:
        raise FrameError("bad-init", "the first frame must be an init frame")
    version = data.get("v")
    if type(version) is not int or version != 1:
        raise FrameError("bad-init", f"unsupported init version {str(version)[:40]!r}")
    client_id = data.get("id")
    if type(client_id) is not str or not 0 < len(client_id) <= MAX_CLIENT_ID_LENGTH:
        raise FrameError("bad-init", "init frame needs a client id of 1..256 characters")
    return client_id


def encode_joynr_init(client_id: str,
                      type_name: str = WEBSOCKET_CLIENT_ADDRESS_TYPE) -> bytes:
    """joynr's init frame: ``{"_typeName":"<type_name>","id":"<client id>"}`` in UTF-8,
    ``_typeName`` first and no whitespace (joynr's cluster controllers recognise it by those
    first bytes); ``type_name`` is the client address type of the transport."""
    return json.dumps({"_typeName": type_name, "id": client_id},
                      separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        raise ValueError("a key appears twice")
    return data


def decode_joynr_init(frame: Any, type_name: str = WEBSOCKET_CLIENT_ADDRESS_TYPE) -> str:
    """The client id of joynr's init frame (see :func:`encode_joynr_init`): binary, starting
    with :data:`JOYNR_INIT_PREFIX`, at most 1 KiB of UTF-8 JSON, an object with exactly the
    keys ``_typeName`` and ``id`` (each once), the id a string of 1..256 characters; raises
    FrameError (``bad-init``) otherwise."""
    if not isinstance(frame, bytes):
        raise FrameError("bad-init", "the first frame must be a binary init frame")
    if len(frame) > MAX_INIT_BYTES:
        raise FrameError("bad-init", "init frame too large")
    if not frame.startswith(joynr_init_prefix(type_name)):
        raise FrameError("bad-init", "the first frame must be an init frame")
    try:
        data = json.loads(frame.decode("utf-8"), object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, JSONDecodeError too
        raise FrameError("bad-init", f"joynr init frame is not a JSON object: {exc}") from None
    if not isinstance(data, dict) or data.get("_typeName") != type_name:
        raise FrameError("bad-init", "joynr init frame is not a "
                         + type_name.rsplit(".", 1)[-1])
    if set(data) != {"_typeName", "id"}:
        others = sorted(set(data) - {"_typeName", "id"})
        raise FrameError("bad-init", "joynr init frame needs exactly the keys _typeName and "
                         f"id, got {str(others)[:80] if others else 'no id'}")
    client_id = data["id"]
    if type(client_id) is not str or not 0 < len(client_id) <= MAX_CLIENT_ID_LENGTH:
        raise FrameError("bad-init", "init frame needs a client id of 1..256 characters")
    return client_id


def decode_any_init(frame: Any, type_name: str = WEBSOCKET_CLIENT_ADDRESS_TYPE
                    ) -> tuple[str, str]:
    """The client id and the dialect (``native`` or ``joynr``) of a connection's first frame
    (``type_name``: the client address type of joynr's init frame on the transport); raises
    FrameError (``bad-init``) for anything but a valid init frame of either dialect."""
    if isinstance(frame, bytes) and frame.startswith(joynr_init_prefix(type_name)):
        return decode_joynr_init(frame, type_name), JOYNR
    return decode_init(frame), NATIVE


#: what writes a message's frame (runtime.messages.encode_frame, runtime.smrf.encode, ...)
Encoder = Callable[[Message], bytes]
#: what reads a frame: ``(frame, max_bytes, origin=)`` -> the message, or FrameError
Decoder = Callable[..., Message]


def frame_encoder(dialect: str, owner_id: str = "") -> Encoder:
    """The encoder of ``dialect``'s message frames; for ``joynr`` with ``owner_id``, every
    frame is custom-signed with the owner id's UTF-8 bytes."""
    if dialect == NATIVE:
        return encode_frame
    if not owner_id:
        return smrf.encode
    signature = owner_id.encode("utf-8")
    encode = smrf.encode

    def signed(message: Message) -> bytes:
        if message.custom_signature != signature:
            message = dataclasses.replace(message, custom_signature=signature, raw=None,
                                          raw_smrf=None)
        return encode(message)

    return signed


def frame_decoder(dialect: str) -> Decoder:
    """The decoder of ``dialect``'s message frames."""
    return decode_frame if dialect == NATIVE else smrf.decode
