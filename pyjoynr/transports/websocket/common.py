"""What both websocket ends share: the init frames and the send queue of a connection (both
shared with the Unix domain socket transport: transports.dialects, transports.outbox, whose
names this module gives under their former place).
"""

from __future__ import annotations

from pyjoynr.transports.dialects import (
    INIT_TYPE,
    JOYNR_INIT_PREFIX,
    MAX_CLIENT_ID_LENGTH,
    MAX_INIT_BYTES,
    WEBSOCKET_CLIENT_ADDRESS_TYPE,
    Decoder,
    Encoder,
    decode_any_init,
    decode_init,
    decode_joynr_init,
    encode_init,
    encode_joynr_init,
    frame_decoder,
    frame_encoder,
)
from pyjoynr.transports.outbox import (
    MAX_BATCH,
    MAX_BATCH_BYTES,
    FrameTooBig,
    Outbox,
    unsendable_reason,
)

__all__ = [
    "INIT_TYPE",
    "JOYNR_INIT_PREFIX",
    "MAX_BATCH",
    "MAX_BATCH_BYTES",
    "MAX_CLIENT_ID_LENGTH",
    "MAX_INIT_BYTES",
    "WEBSOCKET_CLIENT_ADDRESS_TYPE",
    "Decoder",
    "Encoder",
    "FrameTooBig",
    "Outbox",
    "decode_any_init",
    "decode_init",
    "decode_joynr_init",
    "encode_init",
    "encode_joynr_init",
    "frame_decoder",
    "frame_encoder",
    "unsendable_reason",
]
