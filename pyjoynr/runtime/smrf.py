"""joynr's own wire: SMRF frames (docs/wire.md, "SMRF").

The codec is :mod:`runtime.smrf_core` (its docstring describes the frame and the mapping to
:class:`~runtime.messages.Message`). This module loads it through :mod:`runtime.compiled`:
compiled with mypyc when it was built from the current source (``bin/build-compiled``, which
the README's commands run), else as plain Python, with the same behaviour, slower. Import
the codec from here; :data:`FORM` says which form runs.
"""

from __future__ import annotations

from pyjoynr.runtime import compiled as _compiled

_compiled.load("pyjoynr.runtime.smrf_core")  # before anything imports it: chooses the form

from pyjoynr.runtime.smrf_core import (  # noqa: E402 - loaded in its chosen form just above
    CUSTOM_HEADER_PREFIX,
    DEFAULT_COMPRESS_ABOVE_BYTES,
    MAX_SIGNATURE_BYTES,
    MAX_SMRF_HEADERS,
    PREFIX_BYTES,
    SMRF_VERSION,
    SmrfError,
    SmrfFrame,
    decode,
    decode_smrf,
    encode,
    encode_smrf,
    frame_from_message,
    message_from_frame,
)

__all__ = [
    "CUSTOM_HEADER_PREFIX",
    "DEFAULT_COMPRESS_ABOVE_BYTES",
    "FORM",
    "MAX_SIGNATURE_BYTES",
    "MAX_SMRF_HEADERS",
    "PREFIX_BYTES",
    "SMRF_VERSION",
    "SmrfError",
    "SmrfFrame",
    "decode",
    "decode_smrf",
    "encode",
    "encode_smrf",
    "frame_from_message",
    "message_from_frame",
]

#: how the codec was loaded: compiled, or plain Python and why
FORM: _compiled.Form = _compiled.FORMS["pyjoynr.runtime.smrf_core"]
