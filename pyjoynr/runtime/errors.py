"""The project's errors, in two families with one base each.

- :class:`JoynrError` and its subclasses: what a joynr call can fail with, as Python exceptions
  and as the error field of replies and publications (``to_wire`` / :func:`error_from_wire`).
- :class:`ProtocolError` and its subclasses (``FrameError``, ``AddressError``,
  ``PayloadError``, ``MulticastError``): input from the network that is refused. Each carries a
  short ``reason`` code (the counter key; never part of the message text) and a message that
  says what was wrong.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ApplicationError",
    "DiscoveryError",
    "JoynrError",
    "JoynrTimeoutError",
    "MessageNotSentError",
    "MethodInvocationError",
    "ProtocolError",
    "ProviderRuntimeError",
    "PublicationMissedError",
    "SubscriptionError",
    "error_from_wire",
]


class ProtocolError(ValueError):
    """Refused input from the network: ``reason`` is a short code for counters and log
    filters; ``str()`` says what was wrong. Subclasses set their default ``reason``."""

    reason: str = "bad-input"

    def __init__(self, detail: str, *, reason: str | None = None) -> None:
        super().__init__(detail)
        if reason is not None:
            self.reason = reason


class JoynrError(Exception):
    """Base of every error a proxy call can raise."""

    wire_type = "JoynrRuntimeException"

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.wire_type, "message": self.message}


class ApplicationError(JoynrError):
    """A modelled error: ``error`` is the name of a value of the method's error enumeration."""

    wire_type = "ApplicationException"

    def __init__(self, error: str, message: str = "") -> None:
        super().__init__(message or error)
        self.error = error

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.wire_type, "message": self.message, "error": self.error}


class ProviderRuntimeError(JoynrError):
    """The provider failed in a way its interface does not model."""

    wire_type = "ProviderRuntimeException"


class MethodInvocationError(JoynrError):
    """The provider has no such method (or an incompatible interface version)."""

    wire_type = "MethodInvocationException"


class DiscoveryError(JoynrError):
    """No provider could be found, or the directory refused the call."""

    wire_type = "DiscoveryException"


class MessageNotSentError(JoynrError):
    """The cluster controller could not deliver the request before it expired."""

    wire_type = "JoynrMessageNotSentException"


class JoynrTimeoutError(JoynrError):
    """No reply arrived before the request's time to live ran out."""

    wire_type = "JoynrTimeoutException"


class SubscriptionError(JoynrError):
    """A subscription was refused (the error of a subscription reply), or the provider ended
    it (the error of a publication: the provider was unregistered). ``subscription_id``: the
    subscription's."""

    wire_type = "SubscriptionException"

    def __init__(self, message: str = "", subscription_id: str | None = None) -> None:
        super().__init__(message)
        self.subscription_id = subscription_id

    def to_wire(self) -> dict[str, Any]:
        wire = super().to_wire()
        if self.subscription_id is not None:
            wire["subscription_id"] = self.subscription_id
        return wire


class PublicationMissedError(SubscriptionError):
    """A periodic or keep-alive subscription's publication did not arrive in time."""

    wire_type = "PublicationMissedException"


_BY_WIRE_TYPE = {
    cls.wire_type: cls
    for cls in (
        JoynrError,
        ProviderRuntimeError,
        MethodInvocationError,
        DiscoveryError,
        MessageNotSentError,
        JoynrTimeoutError,
    )
}


def error_from_wire(data: object) -> JoynrError:
    """The exception for an error field; malformed input becomes a JoynrError saying so."""
    if not isinstance(data, dict):
        return JoynrError(f"malformed error field: {type(data).__name__}")
    kind, message = data.get("type"), data.get("message", "")
    if not isinstance(message, str):
        message = repr(message)[:200]
    if kind == ApplicationError.wire_type:
        error = data.get("error")
        if isinstance(error, str):
            return ApplicationError(error, message)
        return JoynrError(f"malformed application error: {message}")
    if kind in (SubscriptionError.wire_type, PublicationMissedError.wire_type):
        sid = data.get("subscription_id")
        sub_cls = SubscriptionError if kind == SubscriptionError.wire_type else (
            PublicationMissedError)
        return sub_cls(message, sid if isinstance(sid, str) else None)
    cls = _BY_WIRE_TYPE.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return JoynrError(f"{kind}: {message}")
    return cls(message)
