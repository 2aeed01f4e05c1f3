"""The exceptions kasoku raises (the C++ core raises the same classes).

Every misuse raises a subclass of :class:`Error` whose message says what failed, what was expected and what to
do; the operands are left unchanged.  :class:`InternalError` is a bug in kasoku, not a misuse.
"""

from __future__ import annotations


class Error(Exception):
    """Base class of every error kasoku raises on misuse."""


class ParameterError(Error, ValueError):
    """Invalid or insecure parameters, or a bad argument (length, NaN, object of another context)."""


class LevelError(Error):
    """An operation needs a level the ciphertext no longer has."""


class ScaleError(Error):
    """Scales do not match, or a scale no longer fits the modulus."""


class MissingKeyError(Error):
    """An evaluation key (relinearisation, rotation, conjugation) is missing."""


class SerializationError(Error):
    """Bytes that cannot be read back: corrupted, truncated, another kind of object or other parameters."""


class DeviceError(Error):
    """A device (GPU) failure."""


class ServiceError(Error):
    """The service refused a request (ks.Client): `status` is the HTTP status, the message the server's reason."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{message} (HTTP {status})")
        self.status = status


class RetryLater(ServiceError):
    """The service's queue is full: submit again after `retry_after` seconds (HTTP 429)."""

    def __init__(self, message: str, retry_after: float):
        super().__init__(429, message)
        self.retry_after = retry_after


class InternalError(RuntimeError):
    """A broken internal invariant: a bug in kasoku (please report it with the message)."""


__all__ = [
    "Error",
    "ParameterError",
    "LevelError",
    "ScaleError",
    "MissingKeyError",
    "SerializationError",
    "DeviceError",
    "ServiceError",
    "RetryLater",
    "InternalError",
]

# Shown (and pickled) as kasoku.X, where users import them from.
for _cls in (
    Error,
    ParameterError,
    LevelError,
    ScaleError,
    MissingKeyError,
    SerializationError,
    DeviceError,
    ServiceError,
    RetryLater,
    InternalError,
):
    _cls.__module__ = "kasoku"
del _cls
